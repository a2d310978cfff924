// SQL of the AODB inbox CMINMSGS (MariaDB, C-1). Zone-less DATETIME columns hold airport local
// time and travel as 'YYYY-MM-DD HH:MM:SS' strings (the pool sets dateStrings). mysql2 formats
// the statements client-side: `IN (?)` takes an array. Statement conventions: lib/db/statement.ts.
import { myStatement } from '../db/statement.ts';

/** An inbox row's ID and its receipt time (local DATETIME string). */
export interface InboxRefRow {
  id: number;
  received: string | null;
}

/** Unprocessed rows with ID > `after` (primary-key range scan), ascending, at most `limit`. */
export const unprocessedAfter = myStatement<[after: number, limit: number], InboxRefRow>(
  'inbox.unprocessed_after',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_DATE_PROCESSED IS NULL
    ORDER BY CMINMSGS_ID LIMIT ?`,
);

/** Unprocessed rows with `after` < ID <= `upTo` (primary-key range scan), ascending, at most `limit`. */
export const unprocessedBetween = myStatement<[after: number, upTo: number, limit: number], InboxRefRow>(
  'inbox.unprocessed_between',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? AND CMINMSGS_DATE_PROCESSED IS NULL
    ORDER BY CMINMSGS_ID LIMIT ?`,
);

/** Rows present in (`from`, `to`] with whether they are unprocessed (1/0), ascending. */
export const rowsBetween = myStatement<[from: number, to: number], { id: number; unprocessed: number }>(
  'inbox.rows_between',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_PROCESSED IS NULL AS unprocessed FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? ORDER BY CMINMSGS_ID`,
);

/** The ID of the (`offset` + 1)-th existing row in (`from`, `to`], if any (O(n) primary-key reads). */
export const idAtOffset = myStatement<[from: number, to: number, offset: number], { id: number }>(
  'inbox.id_at_offset',
  `SELECT CMINMSGS_ID AS id FROM cminmsgs WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? ORDER BY CMINMSGS_ID LIMIT 1 OFFSET ?`,
);

/**
 * Unprocessed rows inside the ID ranges of `ranges`, a JSON array of {lo, hi} (inclusive),
 * ascending, each row once, at most `limit`. One primary-key range read per range (MariaDB: "range checked for
 * each record"), as the OR of BETWEENs it replaces.
 */
export const unprocessedInRanges = myStatement<[ranges: string, limit: number], InboxRefRow>(
  'inbox.unprocessed_in_ranges',
  `SELECT DISTINCT c.CMINMSGS_ID AS id, c.CMINMSGS_DATE_RECEIVED AS received
     FROM JSON_TABLE(?, '$[*]' COLUMNS (lo BIGINT PATH '$.lo', hi BIGINT PATH '$.hi')) r
     JOIN cminmsgs c ON c.CMINMSGS_ID BETWEEN r.lo AND r.hi
    WHERE c.CMINMSGS_DATE_PROCESSED IS NULL
    ORDER BY c.CMINMSGS_ID LIMIT ?`,
);

/** Raw bodies of the IDs of `ids` (an array). */
export const bodies = myStatement<[ids: number[]], { id: number; body: string }>('inbox.bodies', `SELECT CMINMSGS_ID AS id, CMINMSGS_CLOB_MSG AS body FROM cminmsgs WHERE CMINMSGS_ID IN (?)`);

/**
 * Backfill: writes each row's processing time from `marks`, a JSON array of {id, at} (local
 * DATETIME strings), in one UPDATE, only where the processing time is still NULL (never
 * overwrite a processing time).
 */
export const markProcessed = myStatement<[marks: string]>(
  'inbox.mark_processed',
  `UPDATE cminmsgs c
     JOIN JSON_TABLE(?, '$[*]' COLUMNS (id BIGINT PATH '$.id', at VARCHAR(64) PATH '$.at')) m ON c.CMINMSGS_ID = m.id
      SET c.CMINMSGS_DATE_PROCESSED = m.at
    WHERE c.CMINMSGS_DATE_PROCESSED IS NULL`,
);

/** Which of the IDs of `ids` (an array) exist. */
export const existingIds = myStatement<[ids: number[]], { id: number }>('inbox.existing_ids', `SELECT CMINMSGS_ID AS id FROM cminmsgs WHERE CMINMSGS_ID IN (?)`);

/** Inserts an inbox row (inject, tests, the inbox API). */
export const insertRow = myStatement<[body: string, received: string, sndr: string | null, seqn: number | null, type: string | null, styp: string | null, status: string]>(
  'inbox.insert_row',
  `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,
     CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_STATUS) VALUES (?, ?, ?, ?, ?, ?, ?)`,
);

/** The smallest inbox ID present (null when the inbox is empty). */
export const minId = myStatement<[], { m: number | null }>('inbox.min_id', `SELECT MIN(CMINMSGS_ID) AS m FROM cminmsgs`);

/** Retention: deletes the rows of the IDs of `ids` (an array) that carry a processing time. */
export const deleteProcessed = myStatement<[ids: number[]]>('inbox.delete_processed', `DELETE FROM cminmsgs WHERE CMINMSGS_ID IN (?) AND CMINMSGS_DATE_PROCESSED IS NOT NULL`);

// ---- lib/lifecycle/proc-state.ts

/** The inbox rows of these IDs that still exist, with their processed time (PROC_STATE purge evidence). */
export const retentionPresence = myStatement<[ids: number[]], { id: number; p: string | null }>(
  'inbox.retention_presence',
  'SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_PROCESSED AS p FROM cminmsgs WHERE CMINMSGS_ID IN (?)',
);

// ---- a read-only (shadow) installation's intake (lib/pipeline/intake.ts): every row by ID,
// whether another installation processed it or not (docs/operations.md "Trying a rule change")

/** Every row with ID > `after` (primary-key range scan), ascending, at most `limit`. */
export const rowsAfter = myStatement<[after: number, limit: number], InboxRefRow>(
  'inbox.rows_after',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM cminmsgs
    WHERE CMINMSGS_ID > ? ORDER BY CMINMSGS_ID LIMIT ?`,
);

/** Every row with `after` < ID <= `upTo`, ascending, at most `limit`. */
export const rowsAfterUpTo = myStatement<[after: number, upTo: number, limit: number], InboxRefRow>(
  'inbox.rows_after_up_to',
  `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM cminmsgs
    WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? ORDER BY CMINMSGS_ID LIMIT ?`,
);

/** Every row inside the ID ranges of `ranges` (JSON [{lo, hi}], inclusive), ascending, at most `limit`. */
export const rowsInRanges = myStatement<[ranges: string, limit: number], InboxRefRow>(
  'inbox.rows_in_ranges',
  `SELECT DISTINCT c.CMINMSGS_ID AS id, c.CMINMSGS_DATE_RECEIVED AS received
     FROM JSON_TABLE(?, '$[*]' COLUMNS (lo BIGINT PATH '$.lo', hi BIGINT PATH '$.hi')) r
     JOIN cminmsgs c ON c.CMINMSGS_ID BETWEEN r.lo AND r.hi
    ORDER BY c.CMINMSGS_ID LIMIT ?`,
);

/**
 * The oldest row that carries a processing time (primary-key scan from the bottom, stopping at the
 * first one: only never-marked rows, e.g. DEAD messages, lie below it). Inbox retention deletes
 * only marked rows, oldest first: a missing ID below this row is one retention deleted (or one
 * the AODB never committed).
 */
export const oldestProcessed = myStatement<[], { id: number }>(
  'inbox.oldest_processed',
  `SELECT CMINMSGS_ID AS id FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL ORDER BY CMINMSGS_ID LIMIT 1`,
);

/** The largest inbox ID present (null when the inbox is empty). */
export const maxId = myStatement<[], { m: number | null }>('inbox.max_id', `SELECT MAX(CMINMSGS_ID) AS m FROM cminmsgs`);
