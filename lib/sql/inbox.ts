// SQL of the AODB inbox CMINMSGS (MariaDB, C-1). Zone-less DATETIME columns hold airport local
// time and travel as 'YYYY-MM-DD HH:MM:SS' strings (the pool sets dateStrings). mysql2 formats
// the statements client-side: `IN (?)` takes an array. Statement conventions: lib/db/statement.ts.
import { type MyExecutor, myRows, myRun, myStatement, type MyWrite, type RowOf } from '../db/statement.ts';

/** An inbox row's ID and its receipt time (local DATETIME string). */
export interface InboxRefRow {
  id: number;
  received: string | null;
}

const unprocessedAfterStatement = myStatement<[after: number, limit: number], InboxRefRow>(
  'inbox.unprocessed_after',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_DATE_PROCESSED IS NULL
    ORDER BY CMINMSGS_ID LIMIT ?`,
);
/** Unprocessed rows with ID > `after` (primary-key range scan), ascending, at most `limit`. */
export function readUnprocessedAfter(my: MyExecutor, after: number, limit: number): Promise<InboxRefRow[]> {
  return myRows(my, unprocessedAfterStatement, after, limit);
}

const unprocessedBetweenStatement = myStatement<[after: number, upTo: number, limit: number], InboxRefRow>(
  'inbox.unprocessed_between',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? AND CMINMSGS_DATE_PROCESSED IS NULL
    ORDER BY CMINMSGS_ID LIMIT ?`,
);
/** Unprocessed rows with `after` < ID <= `upTo` (primary-key range scan), ascending, at most `limit`. */
export function readUnprocessedBetween(my: MyExecutor, after: number, upTo: number, limit: number): Promise<InboxRefRow[]> {
  return myRows(my, unprocessedBetweenStatement, after, upTo, limit);
}

const rowsBetweenStatement = myStatement<[from: number, to: number], { id: number; unprocessed: number }>(
  'inbox.rows_between',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_PROCESSED IS NULL AS unprocessed FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? ORDER BY CMINMSGS_ID`,
);
/** Rows present in (`from`, `to`] with whether they are unprocessed (1/0), ascending. */
export function readRowsBetween(my: MyExecutor, from: number, to: number): Promise<RowOf<typeof rowsBetweenStatement>[]> {
  return myRows(my, rowsBetweenStatement, from, to);
}

const idAtOffsetStatement = myStatement<[from: number, to: number, offset: number], { id: number }>(
  'inbox.id_at_offset',
  `SELECT CMINMSGS_ID AS id FROM cminmsgs WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? ORDER BY CMINMSGS_ID LIMIT 1 OFFSET ?`,
);
/** The ID of the (`offset` + 1)-th existing row in (`from`, `to`], if any (O(n) primary-key reads). */
export function readIdAtOffset(my: MyExecutor, from: number, to: number, offset: number): Promise<RowOf<typeof idAtOffsetStatement>[]> {
  return myRows(my, idAtOffsetStatement, from, to, offset);
}

const unprocessedInRangesStatement = myStatement<[ranges: string, limit: number], InboxRefRow>(
  'inbox.unprocessed_in_ranges',
  `SELECT DISTINCT c.CMINMSGS_ID AS id, c.CMINMSGS_DATE_RECEIVED AS received
     FROM JSON_TABLE(?, '$[*]' COLUMNS (lo BIGINT PATH '$.lo', hi BIGINT PATH '$.hi')) r
     JOIN cminmsgs c ON c.CMINMSGS_ID BETWEEN r.lo AND r.hi
    WHERE c.CMINMSGS_DATE_PROCESSED IS NULL
    ORDER BY c.CMINMSGS_ID LIMIT ?`,
);
/**
 * Unprocessed rows inside the ID ranges of `ranges`, a JSON array of {lo, hi} (inclusive),
 * ascending, each row once, at most `limit`. One primary-key range read per range (MariaDB: "range checked for
 * each record"), as the OR of BETWEENs it replaces.
 */
export function readUnprocessedInRanges(my: MyExecutor, ranges: string, limit: number): Promise<InboxRefRow[]> {
  return myRows(my, unprocessedInRangesStatement, ranges, limit);
}

const bodiesStatement = myStatement<[ids: number[]], { id: number; body: string }>('inbox.bodies', `SELECT CMINMSGS_ID AS id, CMINMSGS_CLOB_MSG AS body FROM cminmsgs WHERE CMINMSGS_ID IN (?)`);
/** Raw bodies of the IDs of `ids` (an array). */
export function readBodies(my: MyExecutor, ids: number[]): Promise<RowOf<typeof bodiesStatement>[]> {
  return myRows(my, bodiesStatement, ids);
}

const markProcessedStatement = myStatement<[marks: string]>(
  'inbox.mark_processed',
  `UPDATE cminmsgs c
     JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$.id', at VARCHAR(64) PATH '$.at')) m ON c.CMINMSGS_ID = m.id
      SET c.CMINMSGS_DATE_PROCESSED = m.at
    WHERE c.CMINMSGS_DATE_PROCESSED IS NULL`,
);
/**
 * Backfill: writes each row's processing time from `marks`, a JSON array of {id, at} (local
 * DATETIME strings), in one UPDATE, only where the processing time is still NULL (never
 * overwrite a processing time).
 */
export function markProcessed(my: MyExecutor, marks: string): Promise<MyWrite> {
  return myRun(my, markProcessedStatement, marks);
}

const existingIdsStatement = myStatement<[ids: number[]], { id: number }>('inbox.existing_ids', `SELECT CMINMSGS_ID AS id FROM cminmsgs WHERE CMINMSGS_ID IN (?)`);
/** Which of the IDs of `ids` (an array) exist. */
export function readExistingIds(my: MyExecutor, ids: number[]): Promise<RowOf<typeof existingIdsStatement>[]> {
  return myRows(my, existingIdsStatement, ids);
}

const insertRowStatement = myStatement<[body: string, received: string, sndr: string | null, seqn: number | null, type: string | null, styp: string | null, status: string]>(
  'inbox.insert_row',
  `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,
     CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_STATUS) VALUES (?, ?, ?, ?, ?, ?, ?)`,
);
/** Inserts an inbox row (inject, tests, the inbox API). */
export function insertRow(my: MyExecutor, body: string, received: string, sndr: string | null, seqn: number | null, type: string | null, styp: string | null, status: string): Promise<MyWrite> {
  return myRun(my, insertRowStatement, body, received, sndr, seqn, type, styp, status);
}

const minIdStatement = myStatement<[], { m: number | null }>('inbox.min_id', `SELECT MIN(CMINMSGS_ID) AS m FROM cminmsgs`);
/** The smallest inbox ID present (null when the inbox is empty). */
export function readMinId(my: MyExecutor): Promise<RowOf<typeof minIdStatement>[]> {
  return myRows(my, minIdStatement);
}

const deleteProcessedStatement = myStatement<[ids: number[]]>('inbox.delete_processed', `DELETE FROM cminmsgs WHERE CMINMSGS_ID IN (?) AND CMINMSGS_DATE_PROCESSED IS NOT NULL`);
/** Retention: deletes the rows of the IDs of `ids` (an array) that carry a processing time. */
export function deleteProcessed(my: MyExecutor, ids: number[]): Promise<MyWrite> {
  return myRun(my, deleteProcessedStatement, ids);
}

// ---- lib/lifecycle/proc-state.ts

const retentionPresenceStatement = myStatement<[ids: number[]], { id: number; p: string | null }>(
  'inbox.retention_presence',
  'SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_PROCESSED AS p FROM cminmsgs WHERE CMINMSGS_ID IN (?)',
);
/** The inbox rows of these IDs that still exist, with their processed time (PROC_STATE purge evidence). */
export function readRetentionPresence(my: MyExecutor, ids: number[]): Promise<RowOf<typeof retentionPresenceStatement>[]> {
  return myRows(my, retentionPresenceStatement, ids);
}

// ---- a read-only (shadow) installation's intake (lib/pipeline/intake.ts): every row by ID,
// whether another installation processed it or not (docs/operations.md "Trying a rule change")

const rowsAfterStatement = myStatement<[after: number, limit: number], InboxRefRow>(
  'inbox.rows_after',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM cminmsgs
    WHERE CMINMSGS_ID > ? ORDER BY CMINMSGS_ID LIMIT ?`,
);
/** Every row with ID > `after` (primary-key range scan), ascending, at most `limit`. */
export function readRowsAfter(my: MyExecutor, after: number, limit: number): Promise<InboxRefRow[]> {
  return myRows(my, rowsAfterStatement, after, limit);
}

const rowsAfterUpToStatement = myStatement<[after: number, upTo: number, limit: number], InboxRefRow>(
  'inbox.rows_after_up_to',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? ORDER BY CMINMSGS_ID LIMIT ?`,
);
/** Every row with `after` < ID <= `upTo`, ascending, at most `limit`. */
export function readRowsAfterUpTo(my: MyExecutor, after: number, upTo: number, limit: number): Promise<InboxRefRow[]> {
  return myRows(my, rowsAfterUpToStatement, after, upTo, limit);
}

const rowsInRangesStatement = myStatement<[ranges: string, limit: number], InboxRefRow>(
  'inbox.rows_in_ranges',
  `SELECT DISTINCT c.CMINMSGS_ID AS id, c.CMINMSGS_DATE_RECEIVED AS received
     FROM JSON_TABLE(?, '$[*]' COLUMNS (lo BIGINT PATH '$.lo', hi BIGINT PATH '$.hi')) r
     JOIN cminmsgs c ON c.CMINMSGS_ID BETWEEN r.lo AND r.hi
    ORDER BY c.CMINMSGS_ID LIMIT ?`,
);
/** Every row inside the ID ranges of `ranges` (JSON [{lo, hi}], inclusive), ascending, at most `limit`. */
export function readRowsInRanges(my: MyExecutor, ranges: string, limit: number): Promise<InboxRefRow[]> {
  return myRows(my, rowsInRangesStatement, ranges, limit);
}

const oldestProcessedStatement = myStatement<[], { id: number }>(
  'inbox.oldest_processed',
  `SELECT CMINMSGS_ID AS id FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL ORDER BY CMINMSGS_ID LIMIT 1`,
);
/**
 * The oldest row that carries a processing time (primary-key scan from the bottom, stopping at the
 * first one: only never-marked rows, e.g. DEAD messages, lie below it). Inbox retention deletes
 * only marked rows, oldest first: a missing ID below this row is one retention deleted (or one
 * the AODB never committed).
 */
export function readOldestProcessed(my: MyExecutor): Promise<RowOf<typeof oldestProcessedStatement>[]> {
  return myRows(my, oldestProcessedStatement);
}

const maxIdStatement = myStatement<[], { m: number | null }>('inbox.max_id', `SELECT MAX(CMINMSGS_ID) AS m FROM cminmsgs`);
/** The largest inbox ID present (null when the inbox is empty). */
export function readMaxId(my: MyExecutor): Promise<RowOf<typeof maxIdStatement>[]> {
  return myRows(my, maxIdStatement);
}
