// SQL of SCHD_SNAP_LOG (the append-only log of applied snapshots). Statement conventions: lib/db/statement.ts.
import { type Executor, pgRun, pgStatement } from '../db/statement.ts';

// ---- lib/flight/ledger.ts

const insertStatement = pgStatement<[msgId: number, styp: string, day: string, version: number | null, outcome: string, recs: number, written: number, unchanged: number, deleted: number, at: Date]>(
  'snap_log.insert',
  `insert into schd_snap_log (msg_id, styp, operation_day, version, outcome, recs, written, unchanged, deleted, created_at)
   values ($1::bigint, $2::text, $3::date, $4::integer, $5::text, $6::integer, $7::integer, $8::integer, $9::integer, $10::timestamptz)`,
);
/** Appends one snapshot log row. */
export function insert(
  db: Executor,
  msgId: number,
  styp: string,
  day: string,
  version: number | null,
  outcome: string,
  recs: number,
  written: number,
  unchanged: number,
  deleted: number,
  at: Date,
): Promise<number> {
  return pgRun(db, insertStatement, msgId, styp, day, version, outcome, recs, written, unchanged, deleted, at);
}

// ---- lib/lifecycle/snap-log.ts

const deleteBeforeStatement = pgStatement<[cutoff: Date, dayBefore: string, batch: number]>(
  'snap_log.delete_before',
  `delete from schd_snap_log where id = any(array(
     select id from schd_snap_log
     where created_at < $1::timestamptz and (operation_day is null or operation_day < $2::date)
     order by id limit $3::bigint))`,
);
/** Deletes up to $3 rows (lowest id first) received before $1 whose operation day (if any) is before $2. */
export function deleteBefore(db: Executor, cutoff: Date, dayBefore: string, batch: number): Promise<number> {
  return pgRun(db, deleteBeforeStatement, cutoff, dayBefore, batch);
}
