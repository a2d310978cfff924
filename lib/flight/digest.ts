// Snapshot digests (docs/decisions.md "Snapshot digest"), pure: what a snapshot record says about
// its flight, hashed, so that a snapshot that says again what the previous one said costs a hash
// and a lookup per flight instead of a load, a merge and a write.
//
// A record's digest is a hash of its source text (the FLTR element as the message carries it), with
// what decides its decoding beside it (the format below, the time zone, the day cutover and a rule
// override): the same digest, the same patch. So a record whose digest names a flight still at the
// version it was taken at need not even be decoded: the pump reads those digests before a large
// body is decoded (DecodeHints), and such a record reaches the planner undecoded (patch absent,
// its source kept in case the flight turns out to have changed after all: `materialize`).
// After a snapshot of day D is applied, each flight it carried is left ACTIVE on day D with exactly
// the data its record sets (merge.ts applySnapshotRecord; in the same message only MAFL, which the
// record never sets, may change it further): applying the same record to that state again changes
// nothing. So the digest is stored with the STATE_VERSION the flight was left at, and a later
// record with the same digest is skipped only while the flight is still at that version, ACTIVE,
// on the same day. Anything that changed the flight since (a FLOP, an ADFT, an operator action, a
// snapshot deletion, a purge and a new flight, a restore to another state) changed its version or
// removed its row, and the record takes the merge path as before.
import { hash } from 'node:crypto';
import type { Patch, SnapshotRecord } from './decode.ts';
import type { FlightState } from './state.ts';

/**
 * Part of every digest: raise it with any change of what a snapshot record does to a flight (the
 * decoder's patch, merge.ts withPatch / applySnapshotRecord), so that no digest stored before the
 * change matches after it. 2: digests of the record's source text (1: of its patch).
 */
export const DIGEST_FORMAT = 2;

/**
 * The digest of a snapshot record: its source text with `basis` (what else decides its decoding:
 * time zone, day cutover, rule override). The same text: the same digest; the same record written
 * differently (spacing, order) only misses a skip, it never makes a wrong one.
 */
export function recordDigest(raw: string, basis: string): string {
  // one-shot: a snapshot hashes ~10,000 records, and a Hash object per record cost twice as much (cold)
  return hash('sha1', `${DIGEST_FORMAT}\n${basis}\n${raw}`, 'base64');
}

/** A flight's stored digest beside its current state (lib/sql/digest.ts loadDigests). */
export interface StoredDigest {
  digest: string;
  /** The STATE_VERSION the digest was taken at. */
  digestVersion: number;
  /** The flight as it is now. */
  stateVersion: number;
  state: string;
  operationDay: string | null;
  maid: string | null;
}

/** A flight whose record changes nothing: not loaded, not merged, not written (its version and MAID for the mirror scope). */
export interface Unchanged {
  day: string;
  version: number;
  maid?: string;
}

/** A snapshot record with its digest, decoded or left undecoded (decode.ts SnapshotRecord). */
export type DigestedRecord = SnapshotRecord;

/** The patch of a record the planner applies (a programming error when it was left undecoded: the session decodes every record it may apply). */
export function patchOf(r: DigestedRecord): Patch {
  if (!r.patch) throw new Error(`snapshot record FLID=${r.flid} reached the planner undecoded`);
  return r.patch;
}

/** FLIDs carried once (a FLID twice is refused by the decoder; never skipped nor stored here either). */
function once(records: readonly DigestedRecord[]): Set<string> {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const r of records) (seen.has(r.flid) ? twice : seen).add(r.flid);
  for (const f of twice) seen.delete(f);
  return seen;
}

/** The records of a snapshot of `day` that would change nothing: same digest, taken at the flight's current version, ACTIVE on that day. */
export function unchangedRecords(records: readonly DigestedRecord[], day: string, stored: ReadonlyMap<string, StoredDigest>): Map<string, Unchanged> {
  const out = new Map<string, Unchanged>();
  const single = once(records);
  for (const r of records) {
    const s = stored.get(r.flid);
    if (!s || r.digest === undefined || !single.has(r.flid)) continue;
    if (s.digest !== r.digest || s.digestVersion !== s.stateVersion || s.state !== 'ACTIVE' || s.operationDay !== day) continue;
    out.set(r.flid, { day, version: s.stateVersion, ...(s.maid !== null ? { maid: s.maid } : {}) });
  }
  return out;
}

/** One digest to store. */
export interface DigestWrite {
  flid: string;
  digest: string;
  version: number;
}

/**
 * After a snapshot of `day` was applied: the digest of each record whose flight the batch leaves
 * ACTIVE on that day, at the version it leaves it (`final`: the batch's states; null or absent:
 * no such flight). A record skipped as unchanged keeps the digest it has, unless the same message
 * moved its flight on (a MAFL re-derived when a shared flight went): then at the new version.
 */
export function digestsToStore(records: readonly DigestedRecord[], day: string, final: ReadonlyMap<string, FlightState | null>, skipped: ReadonlyMap<string, Unchanged>): DigestWrite[] {
  const out: DigestWrite[] = [];
  const single = once(records);
  for (const r of records) {
    if (r.digest === undefined || !single.has(r.flid)) continue;
    const s = final.get(r.flid);
    if (!s || s.STATE !== 'ACTIVE' || s.OPERATION_DAY !== day) continue;
    if (skipped.get(r.flid)?.version === s.STATE_VERSION) continue; // skipped and left as it was: its digest stays
    out.push({ flid: r.flid, digest: r.digest, version: s.STATE_VERSION });
  }
  return out;
}
