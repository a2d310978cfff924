// Flight-domain metric labels: the unknown-tag series of a decoded flight message, bounded. The
// counts go through the handler's after-commit counts (lib/runtime/labels.ts); the pump, which owns
// the metrics, increments them (lib/runtime/metrics.ts countAfterCommit). No prom-client here: the
// pump's decode worker loads this module.
import { boundedLabel } from '../runtime/labels.ts';
import type { DecodeNotes } from './decode.ts';
import { COLLECTIONS, FLOP_STYPS, SCHD_ADFT, SCHD_SNAPSHOT_STYPS, TAG_RULES } from './rules.ts';

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
