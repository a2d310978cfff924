// MySQL edge: the AODB inbox CMINMSGS and outbox COUTMSGS. Zone-less DATETIME columns hold
// airport local time; the session time zone is set explicitly and values are passed as strings.
import mysql from 'mysql2/promise';

export type Inbox = mysql.Pool;

/** A pool on the AODB interface database, which holds both the inbox (CMINMSGS) and the outbox (COUTMSGS). */
export function createAodbPool(url: string, opts: { timeoutMs: number; connectionLimit?: number }): Inbox {
  const u = new URL(url);
  return mysql.createPool({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
    connectionLimit: opts.connectionLimit ?? 4,
    connectTimeout: opts.timeoutMs,
    waitForConnections: true,
    queueLimit: 0,
    dateStrings: true, // DATETIME as 'YYYY-MM-DD HH:MM:SS' local strings, never shifted by a client zone
    timezone: 'Z',
    supportBigNumbers: true,
    bigNumberStrings: false,
    charset: 'utf8mb4',
    enableKeepAlive: true,
  });
}

export interface InboxRowRef {
  id: number;
  received: string | null;
}

export const INBOX_TABLE = 'cminmsgs';

/** Unprocessed rows with id > after (primary-key range scan), ascending, at most `limit`. */
export async function readUnprocessedAfter(inbox: Inbox, after: number, limit: number, upTo?: number): Promise<InboxRowRef[]> {
  const [rows] = await inbox.query<mysql.RowDataPacket[]>(
    `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM ${INBOX_TABLE}
      WHERE CMINMSGS_ID > ? ${upTo !== undefined ? 'AND CMINMSGS_ID <= ?' : ''} AND CMINMSGS_DATE_PROCESSED IS NULL
      ORDER BY CMINMSGS_ID LIMIT ?`,
    upTo !== undefined ? [after, upTo, limit] : [after, limit],
  );
  return rows.map((r) => ({ id: Number(r.id), received: r.received ?? null }));
}

/** Rows present in (from, to] with whether they are unprocessed (a gap check that also sees a row committed meanwhile). */
export async function existingRows(inbox: Inbox, from: number, to: number): Promise<{ id: number; unprocessed: boolean }[]> {
  const [rows] = await inbox.query<mysql.RowDataPacket[]>(
    `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_PROCESSED IS NULL AS unprocessed FROM ${INBOX_TABLE} WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? ORDER BY CMINMSGS_ID`,
    [from, to],
  );
  return rows.map((r) => ({ id: Number(r.id), unprocessed: Number(r.unprocessed) === 1 }));
}

/**
 * The ID of the n-th existing row after `from` (≤ `to`), or null when fewer exist: a chunk
 * boundary by row count, so a walk skips empty ID spans at no cost (O(n) primary-key reads).
 */
export async function nthIdAfter(inbox: Inbox, from: number, to: number, n: number): Promise<number | null> {
  const [rows] = await inbox.query<mysql.RowDataPacket[]>(`SELECT CMINMSGS_ID AS id FROM ${INBOX_TABLE} WHERE CMINMSGS_ID > ? AND CMINMSGS_ID <= ? ORDER BY CMINMSGS_ID LIMIT 1 OFFSET ?`, [
    from,
    to,
    Math.max(0, n - 1),
  ]);
  return rows.length ? Number(rows[0].id) : null;
}

/** Unprocessed rows inside these ID ranges (passed gaps: only rows that committed late live there). */
export async function readUnprocessedIn(inbox: Inbox, ranges: readonly { lo: number; hi: number }[], limit: number): Promise<InboxRowRef[]> {
  if (ranges.length === 0) return [];
  const where = ranges.map(() => '(CMINMSGS_ID BETWEEN ? AND ?)').join(' OR ');
  const [rows] = await inbox.query<mysql.RowDataPacket[]>(
    `SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_RECEIVED AS received FROM ${INBOX_TABLE}
      WHERE (${where}) AND CMINMSGS_DATE_PROCESSED IS NULL ORDER BY CMINMSGS_ID LIMIT ?`,
    [...ranges.flatMap((r) => [r.lo, r.hi]), limit],
  );
  return rows.map((r) => ({ id: Number(r.id), received: r.received ?? null }));
}

/** Raw bodies of these IDs (missing IDs are absent from the map). */
export async function readBodies(inbox: Inbox, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const [rows] = await inbox.query<mysql.RowDataPacket[]>(`SELECT CMINMSGS_ID AS id, CMINMSGS_CLOB_MSG AS body FROM ${INBOX_TABLE} WHERE CMINMSGS_ID IN (?)`, [ids]);
  return new Map(rows.map((r) => [Number(r.id), String(r.body)]));
}

/**
 * Backfill: one UPDATE for the batch, only where the processing time is still NULL (never
 * overwrite). When fewer rows changed than asked, one look-up tells "already marked" (row exists)
 * from "row missing". Returns the count written and the IDs that exist.
 */
export async function markProcessed(inbox: Inbox, marks: { id: number; at: string }[]): Promise<{ written: number; existing: Set<number> }> {
  if (marks.length === 0) return { written: 0, existing: new Set() };
  const ids = marks.map((m) => m.id);
  const cases = marks.map(() => 'WHEN ? THEN ?').join(' ');
  const [res] = await inbox.query<mysql.ResultSetHeader>(
    `UPDATE ${INBOX_TABLE} SET CMINMSGS_DATE_PROCESSED = CASE CMINMSGS_ID ${cases} END
      WHERE CMINMSGS_ID IN (?) AND CMINMSGS_DATE_PROCESSED IS NULL`,
    [...marks.flatMap((m) => [m.id, m.at]), ids],
  );
  if (res.affectedRows === marks.length) return { written: res.affectedRows, existing: new Set(ids) };
  const [rows] = await inbox.query<mysql.RowDataPacket[]>(`SELECT CMINMSGS_ID AS id FROM ${INBOX_TABLE} WHERE CMINMSGS_ID IN (?)`, [ids]);
  return { written: res.affectedRows, existing: new Set(rows.map((r) => Number(r.id))) };
}

export async function insertInboxRow(inbox: Inbox, row: { body: string; received: string; type?: string; styp?: string; sndr?: string; seqn?: number | null; status?: string }): Promise<number> {
  const [res] = await inbox.query<mysql.ResultSetHeader>(
    `INSERT INTO ${INBOX_TABLE} (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,
       CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_STATUS) VALUES (?, ?, ?, ?, ?, ?, ?)`,
    [row.body, row.received, row.sndr?.slice(0, 4) ?? null, row.seqn ?? null, row.type?.slice(0, 4) ?? null, row.styp?.slice(0, 4) ?? null, row.status ?? 'VALID'],
  );
  return Number(res.insertId);
}
