// SQL of FLIGHT_HISTORY (the archive of purged flights). Statement conventions: lib/db/statement.ts.
import { type Executor, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

const deleteArchivedBeforeStatement = pgStatement<[cutoff: Date, batch: number]>(
  'history.delete_archived_before',
  `delete from flight_history h using (
     select flid, state_version from flight_history where archived_at < $1 order by archived_at limit $2) x
   where h.flid = x.flid and h.state_version = x.state_version`,
);
/** Deletes up to $2 history records archived before $1, oldest first (the retention job's batch). */
export function deleteArchivedBefore(db: Executor, cutoff: Date, batch: number): Promise<number> {
  return pgRun(db, deleteArchivedBeforeStatement, cutoff, batch);
}

// ---- lib/flight/timeline.ts

const timelineArchivedStatement = pgStatement<[flid: string], { state_version: number; operation_day: string | null; flight_state: string; purge_rule: string; archived_at: Date }>(
  'history.timeline_archived',
  `select state_version, operation_day::text as operation_day, flight_state, purge_rule, archived_at
     from flight_history where flid = $1::text order by state_version`,
);
/** The archived versions of flight $1 (purged to FLIGHT_HISTORY), in version order. */
export function readTimelineArchived(db: Executor, flid: string): Promise<RowOf<typeof timelineArchivedStatement>[]> {
  return pgRows(db, timelineArchivedStatement, flid);
}

// ---- lib/lifecycle/flights.ts

const archiveStatement = pgStatement<[flids: string[], versions: number[], days: (string | null)[], flightStates: string[], rules: string[], stateJson: string[], now: Date]>(
  'history.archive',
  `insert into flight_history (flid, state_version, operation_day, flight_state, purge_rule, state, archived_at)
   select u.flid, u.v, u.day, u.st, u.rule, u.js, $7::timestamptz
   from unnest($1::text[], $2::integer[], $3::date[], $4::text[], $5::text[], $6::jsonb[]) as u(flid, v, day, st, rule, js)`,
);
/**
 * Archives flights (the history purge, D1): FLIDs $1 at versions $2, operation days $3, STATE $4,
 * history rule $5 and complete state JSON $6, archived at $7.
 */
export function archive(db: Executor, flids: string[], versions: number[], days: (string | null)[], flightStates: string[], rules: string[], stateJson: string[], now: Date): Promise<number> {
  return pgRun(db, archiveStatement, flids, versions, days, flightStates, rules, stateJson, now);
}

// ---- lib/flight/as-of.ts

const asOfArchivedStatement = pgStatement<[flid: string], { state_version: number; purge_rule: string; state: Record<string, unknown>; archived_at: Date }>(
  'history.as_of_archived',
  `select state_version, purge_rule, state, archived_at from flight_history where flid = $1::text order by state_version`,
);
/** The archived states of flight $1 (complete state JSON, archive time, rule), in version order. */
export function readAsOfArchived(db: Executor, flid: string): Promise<RowOf<typeof asOfArchivedStatement>[]> {
  return pgRows(db, asOfArchivedStatement, flid);
}
