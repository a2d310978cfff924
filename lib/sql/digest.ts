// SQL of the snapshot digests (flight_snap_digest; lib/flight/digest.ts). Statement conventions: lib/db/statement.ts.
import { type Executor, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

const loadDigestsStatement = pgStatement<
  [flids: string[]],
  { flid: string; digest: string; digest_version: number; state_version: number; state: string; operation_day: string | null; maid: string | null }
>(
  'digest.load',
  `select d.flid, d.digest, d.state_version as digest_version, f.state_version, f.state, f.operation_day::text as operation_day, f.maid
   from unnest($1::text[]) as u(flid)
   join flight_snap_digest d on d.flid = u.flid
   join flight_schd f on f.flid = u.flid`,
);
/**
 * Per FLID of $1 that has a digest: the digest, the version it was taken at, and the flight's
 * current state (version, state, operation day, MAID), as the skip decision needs them. A join
 * driven by the FLIDs (one primary-key probe each), not `flid = any($1)`: right after the first
 * snapshot of a day the statistics are stale, and that form may scan both tables whole
 * (docs/decisions.md "Snapshots in bounded memory").
 */
export function loadDigests(db: Executor, flids: string[]): Promise<RowOf<typeof loadDigestsStatement>[]> {
  return pgRows(db, loadDigestsStatement, flids);
}

const storeDigestsStatement = pgStatement<[flids: string[], digests: string[], versions: number[]]>(
  'digest.store',
  `insert into flight_snap_digest (flid, digest, state_version)
   select * from unnest($1::text[], $2::text[], $3::integer[])
   on conflict (flid) do update set digest = excluded.digest, state_version = excluded.state_version`,
);
/** Stores the digests $2 of the FLIDs $1, taken at the versions $3 (replacing what each had). */
export function storeDigests(db: Executor, flids: string[], digests: string[], versions: number[]): Promise<number> {
  return pgRun(db, storeDigestsStatement, flids, digests, versions);
}

/**
 * Snapshot days the decode hints cover: the days of the latest snapshots applied (SCHD_GEN, in
 * inbox order). A snapshot that says again what one said is almost always for one of them; one for
 * an older day is decoded whole and still skips its unchanged flights in the business step.
 */
export const HINT_DAYS = 3;

const knownRecordsStatement = pgStatement<[], { digest: string; flid: string; operation_day: string }>(
  'digest.known',
  `select d.digest, d.flid, f.operation_day::text as operation_day
   from (select operation_day from schd_gen order by last_message_id desc limit ${HINT_DAYS}) g
   join flight_schd f on f.operation_day = g.operation_day
   join flight_snap_digest d on d.flid = f.flid and d.state_version = f.state_version
   where f.state = 'ACTIVE'`,
);
/**
 * Every stored digest of a flight on one of the HINT_DAYS latest snapshot days, still at the
 * version it was taken at and ACTIVE, with that day: the decode hints of a large body (a record
 * with such a digest is not decoded; the business step checks each again before it skips one).
 * Bounded by those days, not by the week of flights Postgres holds (~10,000 rows a day: the
 * hints of every day cost ~265 ms for 8 days against ~30 ms for one on the slowest machine).
 */
export function listKnownRecords(db: Executor): Promise<RowOf<typeof knownRecordsStatement>[]> {
  return pgRows(db, knownRecordsStatement);
}
