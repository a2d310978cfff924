// Flight-domain metrics, created outside any registry: the pump (which decodes) exports them
// (lib/runtime/metrics.ts exportProcessMetrics). The unknown-tags counter is shared with the
// reference-data handlers (their counts go through lib/runtime/metrics.ts countAfterCommit).
import { boundedLabel, decodeUnknownTagsCounter, metrics } from '../runtime/metrics.ts';
import type { DecodeNotes } from './decode.ts';
import { COLLECTIONS, FLOP_STYPS, SCHD_ADFT, SCHD_SNAPSHOT_STYPS, TAG_RULES } from './rules.ts';

export const decodeUnknownTags = decodeUnknownTagsCounter();

export const routePointsDropped = metrics.routePointsDropped;

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

/** The unknown-tag series of a decoded flight message, labels bounded. */
export function unknownTagCounts(type: string, styp: string, notes: DecodeNotes): { type: string; styp: string; tag: string }[] {
  return notes.unknownTags.map((tag) => ({ type: boundedLabel(type, KNOWN_TYPES), styp: boundedLabel(styp, KNOWN_STYPS), tag: boundedLabel(tag, KNOWN_TAGS) }));
}
