// The pipeline's reads and writes of the AODB inbox CMINMSGS (C-1): intake's scans, the pump's
// bodies, backfill's processing-time marks, the inbox API's inserts. Statements: lib/sql/inbox.ts.
import type { Inbox } from '../db/mysql.ts';
import * as Sql from '../sql/inbox.ts';

export interface InboxRowRef {
  id: number;
  received: string | null;
}

const refs = (rows: Sql.InboxRefRow[]): InboxRowRef[] => rows.map((r) => ({ id: Number(r.id), received: r.received ?? null }));

/** Unprocessed rows with id > after (primary-key range scan), ascending, at most `limit`. */
export async function readUnprocessedAfter(inbox: Inbox, after: number, limit: number, upTo?: number): Promise<InboxRowRef[]> {
  return refs(upTo !== undefined ? await Sql.readUnprocessedBetween(inbox, after, upTo, limit) : await Sql.readUnprocessedAfter(inbox, after, limit));
}

/**
 * A shadow installation's reads (docs/operations.md "Trying a rule change"): every row by ID,
 * processed by another installation or not; otherwise as readUnprocessedAfter / readUnprocessedIn.
 */
export async function readAllAfter(inbox: Inbox, after: number, limit: number, upTo?: number): Promise<InboxRowRef[]> {
  return refs(upTo !== undefined ? await Sql.readRowsAfterUpTo(inbox, after, upTo, limit) : await Sql.readRowsAfter(inbox, after, limit));
}

export async function readAllIn(inbox: Inbox, ranges: readonly { lo: number; hi: number }[], limit: number): Promise<InboxRowRef[]> {
  if (ranges.length === 0) return [];
  return refs(await Sql.readRowsInRanges(inbox, JSON.stringify(ranges.map((r) => ({ lo: r.lo, hi: r.hi }))), limit));
}

/** The smallest and largest inbox IDs present (null when the inbox is empty). */
export async function inboxBounds(inbox: Inbox): Promise<{ min: number | null; max: number | null }> {
  const [lo] = await Sql.readMinId(inbox);
  const [hi] = await Sql.readMaxId(inbox);
  return { min: lo?.m === null || lo?.m === undefined ? null : Number(lo.m), max: hi?.m === null || hi?.m === undefined ? null : Number(hi.m) };
}

/** The oldest inbox row with a processing time (null: none): retention deletes only marked rows, oldest first. */
export async function oldestProcessedId(inbox: Inbox): Promise<number | null> {
  const [r] = await Sql.readOldestProcessed(inbox);
  return r ? Number(r.id) : null;
}

/** Rows present in (from, to] with whether they are unprocessed (a gap check that also sees a row committed meanwhile). */
export async function existingRows(inbox: Inbox, from: number, to: number): Promise<{ id: number; unprocessed: boolean }[]> {
  const rows = await Sql.readRowsBetween(inbox, from, to);
  return rows.map((r) => ({ id: Number(r.id), unprocessed: Number(r.unprocessed) === 1 }));
}

/**
 * The ID of the n-th existing row after `from` (≤ `to`), or null when fewer exist: a chunk
 * boundary by row count, so a walk skips empty ID spans at no cost (O(n) primary-key reads).
 */
export async function nthIdAfter(inbox: Inbox, from: number, to: number, n: number): Promise<number | null> {
  const rows = await Sql.readIdAtOffset(inbox, from, to, Math.max(0, n - 1));
  return rows.length ? Number(rows[0].id) : null;
}

/** Unprocessed rows inside these ID ranges (passed gaps: only rows that committed late live there). */
export async function readUnprocessedIn(inbox: Inbox, ranges: readonly { lo: number; hi: number }[], limit: number): Promise<InboxRowRef[]> {
  if (ranges.length === 0) return [];
  return refs(await Sql.readUnprocessedInRanges(inbox, JSON.stringify(ranges.map((r) => ({ lo: r.lo, hi: r.hi }))), limit));
}

/** Raw bodies of these IDs (missing IDs are absent from the map). */
export async function readBodies(inbox: Inbox, ids: number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const rows = await Sql.readBodies(inbox, ids);
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
  const res = await Sql.markProcessed(inbox, JSON.stringify(marks.map((m) => ({ id: m.id, at: m.at }))));
  if (res.affectedRows === marks.length) return { written: res.affectedRows, existing: new Set(ids) };
  const rows = await Sql.readExistingIds(inbox, ids);
  return { written: res.affectedRows, existing: new Set(rows.map((r) => Number(r.id))) };
}

/** Which of these IDs have a row in the inbox now (backfill-resume checks before it resumes). */
export async function existingInboxIds(inbox: Inbox, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await Sql.readExistingIds(inbox, ids);
  return new Set(rows.map((r) => Number(r.id)));
}

export async function insertInboxRow(inbox: Inbox, row: { body: string; received: string; type?: string; styp?: string; sndr?: string; seqn?: number | null; status?: string }): Promise<number> {
  const res = await Sql.insertRow(inbox, row.body, row.received, row.sndr?.slice(0, 4) ?? null, row.seqn ?? null, row.type?.slice(0, 4) ?? null, row.styp?.slice(0, 4) ?? null, row.status ?? 'VALID');
  return res.insertId;
}
