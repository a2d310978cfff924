// Flight-domain metrics on prom-client's default registry (get-or-create; the unknown-tags
// counter is defined once in lib/runtime/metrics.ts and shared with the reference handlers).
import client from 'prom-client';
import { boundedLabel, decodeUnknownTagsCounter } from '../runtime/metrics.ts';
import type { DecodeNotes } from './decode.ts';
import { COLLECTIONS, FLOP_STYPS, SCHD_ADFT, SCHD_SNAPSHOT_STYPS, TAG_RULES } from './rules.ts';

const { Counter, register } = client;

function getOrCreate<T>(name: string, make: () => T): T {
  return (register.getSingleMetric(name) as T | undefined) ?? make();
}

export const decodeUnknownTags = decodeUnknownTagsCounter();

export const routePointsDropped = getOrCreate(
  'msgx_flight_route_points_dropped_total',
  () => new Counter({ name: 'msgx_flight_route_points_dropped_total', help: 'ROUT/ERUT points beyond the 4 kept locally' }),
) as client.Counter;

/** Label values: the SIS flight tags the rule table knows anywhere (a tag unknown here may be known in another STYP), else 'other'. */
const KNOWN_TAGS: ReadonlySet<string> = new Set([
  ...TAG_RULES.keys(),
  'RECS',
  'FLTR',
  'POID',
  'POTM',
  ...COLLECTIONS.flatMap((c) => c.fields.filter((f) => (f.from ?? 'child') === 'child').map((f) => `${c.tag}/${f.name}`)),
]);
const KNOWN_TYPES: ReadonlySet<string> = new Set(['FLOP', 'SCHD']);
const KNOWN_STYPS: ReadonlySet<string> = new Set([...Object.keys(FLOP_STYPS), ...SCHD_SNAPSHOT_STYPS, SCHD_ADFT]);

/** The unknown-tag series of a decoded flight message, labels bounded (issue 9 item 7). */
export function unknownTagCounts(type: string, styp: string, notes: DecodeNotes): { type: string; styp: string; tag: string }[] {
  return notes.unknownTags.map((tag) => ({ type: boundedLabel(type, KNOWN_TYPES), styp: boundedLabel(styp, KNOWN_STYPS), tag: boundedLabel(tag, KNOWN_TAGS) }));
}
