// SQL of the restore check and of the recover-restore command (lib/watches/restore.ts,
// lib/watches/restore-kafka.ts): is Postgres behind the inbox, Redis or Kafka (a backup restored),
// and the writes that take the lost range in again. Statement conventions: lib/db/statement.ts.
import { type Executor, type MyExecutor, myRows, myStatement, pgOne, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

// ---- Postgres

const watermarkStatement = pgStatement<[], { watermark: number }>('restore.watermark', 'select watermark::float8 as watermark from intake_cursor where id = 1');
/** Intake's watermark (0: intake never enqueued a message on this database — a fresh install). */
export function readWatermark(db: Executor): Promise<RowOf<typeof watermarkStatement> | undefined> {
  return pgOne(db, watermarkStatement);
}

const flightVersionsStatement = pgStatement<[flids: string[]], { flid: string; state_version: number }>(
  'restore.flight_versions',
  `select flid, max(state_version)::int as state_version from (
     select flid, state_version from flight_schd where flid = any($1::text[])
     union all
     select flid, state_version from flight_history where flid = any($1::text[])) v
   group by flid`,
);
/**
 * The highest STATE_VERSION Postgres knows of each flight of $1: its current row, or its archived
 * states (a flight the history purge removed; its Redis key may still be owed a delete). Absent:
 * Postgres never knew the flight.
 */
export function readFlightVersions(db: Executor, flids: string[]): Promise<RowOf<typeof flightVersionsStatement>[]> {
  return pgRows(db, flightVersionsStatement, flids);
}

const allFlidsStatement = pgStatement<[], { flid: string }>('restore.all_flids', 'select flid from flight_schd order by flid');
/** Every FLID Postgres holds, in order (the Redis re-sync rewrites each one). */
export function listAllFlids(db: Executor): Promise<RowOf<typeof allFlidsStatement>[]> {
  return pgRows(db, allFlidsStatement);
}

const eventIdHighStatement = pgStatement<[], { high: number }>('restore.event_id_high', `select case when is_called then last_value else last_value - 1 end::float8 as high from msg_event_id_seq`);
/** The highest EVENT_ID handed out so far (0: none). */
export function readEventIdHigh(db: Executor): Promise<RowOf<typeof eventIdHighStatement> | undefined> {
  return pgOne(db, eventIdHighStatement);
}

const unknownMessagesStatement = pgStatement<[msgIds: number[]], { msg_id: number }>(
  'restore.unknown_messages',
  `select u.id::float8 as msg_id from unnest($1::bigint[]) as u(id)
    where not exists (select 1 from proc_state p where p.msg_id = u.id)
    order by u.id`,
);
/** Of the messages $1, those PROC_STATE does not have, ascending. */
export function listUnknownMessages(db: Executor, msgIds: number[]): Promise<RowOf<typeof unknownMessagesStatement>[]> {
  return pgRows(db, unknownMessagesStatement, msgIds);
}

const marksStatement = pgStatement<[], { watermark: number; events: number }>(
  'restore.marks',
  `select c.watermark::float8 as watermark,
          (select case when is_called then last_value else last_value - 1 end from msg_event_id_seq)::float8 as events
     from intake_cursor c where c.id = 1`,
);
/** Intake's watermark and the highest EVENT_ID handed out: neither ever goes back unless Postgres does. */
export function readMarks(db: Executor): Promise<RowOf<typeof marksStatement> | undefined> {
  return pgOne(db, marksStatement);
}

const advanceEventIdsStatement = pgStatement<[to: number], { high: number }>(
  'restore.advance_event_ids',
  `select setval('msg_event_id_seq', greatest($1::bigint, (select case when is_called then last_value else last_value - 1 end from msg_event_id_seq), 1))::float8 as high`,
);
/** Moves the EVENT_ID sequence to at least $1 (never back): the next event gets a higher ID. */
export function advanceEventIds(db: Executor, to: number): Promise<RowOf<typeof advanceEventIdsStatement> | undefined> {
  return pgOne(db, advanceEventIdsStatement, to);
}

const lockCursorStatement = pgStatement<[], { watermark: number }>('restore.lock_cursor', 'select watermark::float8 as watermark from intake_cursor where id = 1 for update');
/** Intake's cursor row, locked (the re-enqueue and an intake round never interleave). */
export function lockCursor(db: Executor): Promise<RowOf<typeof lockCursorStatement> | undefined> {
  return pgOne(db, lockCursorStatement);
}

const raiseWatermarkStatement = pgStatement<[to: number]>('restore.raise_watermark', 'update intake_cursor set watermark = greatest(watermark, $1::bigint), full_scan_from = null where id = 1');
/** Moves intake's watermark up to $1 (never back); a full scan in progress starts over. */
export function raiseWatermark(db: Executor, to: number): Promise<number> {
  return pgRun(db, raiseWatermarkStatement, to);
}

// ---- MariaDB (the inbox)

const processedAboveStatement = myStatement<[after: number, limit: number], { id: number }>(
  'restore.processed_above',
  `SELECT CMINMSGS_ID AS id FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_DATE_PROCESSED IS NOT NULL
    ORDER BY CMINMSGS_ID LIMIT ?`,
);
/** IDs of rows above `after` marked processed, ascending, at most `limit`. */
export function readProcessedAbove(my: MyExecutor, after: number, limit: number): Promise<RowOf<typeof processedAboveStatement>[]> {
  return myRows(my, processedAboveStatement, after, limit);
}

const rowsUpToStatement = myStatement<[after: number, upTo: number], { id: number; received: string | null; processed: number }>(
  'restore.rows_up_to',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received, CMINMSGS_DATE_PROCESSED IS NOT NULL AS processed FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? ORDER BY CMINMSGS_ID`,
);
/** Every row in (`after`, `upTo`], processed or not, ascending: the lost range taken in again. */
export function readRowsUpTo(my: MyExecutor, after: number, upTo: number): Promise<RowOf<typeof rowsUpToStatement>[]> {
  return myRows(my, rowsUpToStatement, after, upTo);
}
