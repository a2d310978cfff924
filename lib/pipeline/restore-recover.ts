// The operator's side of a Postgres restored from a backup (scripts/recover-restore.ts;
// docs/operations.md "Postgres restored from a backup"): the inbox range Postgres forgot, taken in
// again; Redis rewritten from Postgres. Detection and holding: lib/watches/restore.ts.
import type { Clock } from '../core/clock.ts';
import { withTimeout } from '../core/timeout.ts';
import { TASK } from '../core/tasks.ts';
import type { Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import type { Redis } from '../db/redis.ts';
import { writeMirror } from '../flight/mirror.ts';
import { readFlights } from '../flight/read.ts';
import * as Restore from '../sql/restore.ts';
import { wake } from '../sql/jobs.ts';
import { enqueue } from '../sql/transitions.ts';
import { WATCH } from '../core/tuning.ts';
import { inboxBehind, redisFlights } from '../watches/restore-signs.ts';

const SCAN_COUNT = WATCH.restore.scanCount;

export interface LostRange {
  watermark: number;
  /** Inbox rows above the watermark marked processed: Postgres forgot them. */
  processed: number;
  lo: number;
  hi: number;
  /** Every row in (watermark, hi]: what is taken in again, in inbox order. */
  rows: number;
}

/** The range of the inbox Postgres forgot (null: none). */
export async function lostRange(db: Db, inbox: Inbox, timeoutMs: number): Promise<LostRange | null> {
  const r = await inboxBehind(db, inbox, timeoutMs, true);
  if (!r) return null;
  const rows = await withTimeout(timeoutMs, 'inbox rows', Restore.readRowsUpTo(inbox, r.watermark, r.hi));
  return { watermark: r.watermark, processed: r.n, lo: r.lo, hi: r.hi, rows: rows.length };
}

/**
 * Takes the lost range in again, as intake takes in new rows: every inbox row in
 * (watermark, hi] becomes PENDING (insert-if-absent), the watermark moves to hi, the pump is
 * woken. The pump applies them strictly in inbox order (they are above every message Postgres
 * knows); backfill marks them processed again. Returns the IDs taken in.
 */
export async function takeInAgain(db: Db, inbox: Inbox, clock: Clock, timeoutMs: number, lost: LostRange): Promise<number[]> {
  const rows = await withTimeout(timeoutMs, 'inbox rows', Restore.readRowsUpTo(inbox, lost.watermark, lost.hi));
  return db.transaction().execute(async (tx) => {
    const cur = await Restore.lockCursor(tx);
    if (!cur || cur.watermark !== lost.watermark) throw new Error(`intake's watermark moved (${lost.watermark} → ${cur?.watermark}); run the command again`);
    const ids = await enqueue(
      tx,
      rows.map((r) => ({ id: Number(r.id), received: r.received })),
      clock.now(),
    );
    await Restore.raiseWatermark(tx, lost.hi);
    if (ids.length) await wake(tx, TASK.pump);
    return ids;
  });
}

/**
 * Rewrites every Redis flight key from Postgres: ACTIVE flights set, every other key (DELETED,
 * or a flight Postgres does not have) removed — forced, whatever version Redis holds (Redis is
 * ahead of a restored Postgres; the pump is held meanwhile). Returns how many keys were examined.
 */
export async function resyncRedis(db: Db, redis: Redis, timeZone: string, timeoutMs: number): Promise<{ flights: number; removed: number }> {
  const pgFlids = (await Restore.listAllFlids(db)).map((r) => r.flid);
  const known = new Set(pgFlids);
  const extra: string[] = [];
  for await (const page of redisFlights(redis, timeoutMs)) extra.push(...page.filter((f) => !known.has(f)));
  for (let i = 0; i < pgFlids.length; i += SCAN_COUNT) {
    const flids = pgFlids.slice(i, i + SCAN_COUNT);
    const states = await readFlights(db, flids, timeZone);
    await withTimeout(
      timeoutMs * 4,
      'redis re-sync',
      writeMirror(
        redis,
        flids.map((flid) => ({ flid, state: states.get(flid) ?? null })),
        { force: true },
      ),
    );
  }
  for (let i = 0; i < extra.length; i += SCAN_COUNT) {
    const gone = extra.slice(i, i + SCAN_COUNT).map((flid) => ({ flid, state: null }));
    await withTimeout(timeoutMs * 4, 'redis re-sync', writeMirror(redis, gone, { force: true }));
  }
  return { flights: pgFlids.length + extra.length, removed: extra.length };
}
