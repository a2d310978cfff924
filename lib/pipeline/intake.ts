// Intake: inbox rows with CMINMSGS_DATE_PROCESSED IS NULL → PENDING PROC_STATE rows (INV-1),
// insert-if-absent, ascending ID. One active instance (leader lock, lib/runtime/leader.ts).
//
// A round stays O(batch) on an inbox with no index on the processed column (C-2):
//  - the watermark scan continues from the largest enqueued ID with a primary-key range scan;
//  - a full IS NULL scan every `full-scan-every` catches rows below the watermark, walked in
//    bounded primary-key chunks, one chunk per round. Correctness never depends on the watermark.
// ID gaps (an ID that becomes visible after a higher one) are waited for up to `gap-settle`.
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/postgres.ts';
import { existingIds, readUnprocessedAfter, withTimeout, type Inbox, type InboxRowRef } from '../db/mysql.ts';
import { metrics, noteInboxRead } from '../runtime/metrics.ts';
import { enqueue, wake } from './transitions.ts';

export interface IntakeDeps {
  db: Db;
  inbox: Inbox;
  clock: Clock;
  config: Config;
  log: Logger;
}

export interface RoundResult {
  scanned: number;
  enqueued: number[];
  late: number[];
  waitingOnGap: number | null;
}

/** Full scan chunk width in IDs, as a multiple of the claim batch. */
const FULL_SCAN_CHUNK_FACTOR = 20;

export async function intakeRound(d: IntakeDeps): Promise<RoundResult> {
  const timeout = d.config['msgx.io.timeout'];
  const batch = d.config['msgx.pipeline.claim-batch'];
  const now = d.clock.now();
  const cur = await d.db.selectFrom('intake_cursor').selectAll().where('id', '=', 1).executeTakeFirstOrThrow();

  // 1. watermark scan
  const fresh = await withTimeout(timeout, 'inbox scan', readUnprocessedAfter(d.inbox, cur.watermark, batch));
  noteInboxRead();
  const { take, gap, gapSeenAt, passed } = await settleGaps(d, cur.watermark, fresh, cur.gap_id, cur.gap_seen_at, now);

  // 2. one chunk of the periodic full scan below the watermark
  let fullFrom = cur.full_scan_from;
  let fullAt = cur.full_scan_at;
  let below: InboxRowRef[] = [];
  if (fullFrom === null && (!fullAt || now.getTime() - fullAt.getTime() >= d.config['msgx.intake.full-scan-every'])) {
    fullFrom = 0;
    fullAt = now;
  }
  if (fullFrom !== null) {
    const upTo = Math.min(fullFrom + batch * FULL_SCAN_CHUNK_FACTOR, cur.watermark);
    below = upTo > fullFrom ? await withTimeout(timeout, 'inbox full scan', readUnprocessedAfter(d.inbox, fullFrom, batch * FULL_SCAN_CHUNK_FACTOR, upTo)) : [];
    fullFrom = upTo >= cur.watermark ? null : upTo;
  }
  metrics.intakeScannedRows.inc(fresh.length + below.length);

  const newWatermark = take.length ? Math.max(cur.watermark, take[take.length - 1].id) : cur.watermark;
  const { inserted, late } = await d.db.transaction().execute(async (tx) => {
    const ins = await enqueue(tx, [...below, ...take], now);
    await tx
      .updateTable('intake_cursor')
      .set({ watermark: newWatermark, full_scan_from: fullFrom, full_scan_at: fullAt, gap_id: gap, gap_seen_at: gapSeenAt })
      .where('id', '=', 1)
      .execute();
    if (ins.length) await wake(tx, 'pump');
    const belowIds = new Set(below.map((r) => r.id));
    return { inserted: ins, late: ins.filter((id) => belowIds.has(id)) };
  });
  if (passed) {
    metrics.intakeGapsPassed.inc();
    d.log.warn({ gapId: passed }, 'inbox ID gap not filled within gap-settle; moving past it');
  }
  if (late.length) {
    metrics.intakeLateRows.inc(late.length);
    d.log.warn({ msgIds: late }, 'inbox rows appeared below IDs already enqueued; processed late, out of order');
  }
  return { scanned: fresh.length + below.length, enqueued: inserted, late, waitingOnGap: gap };
}

/**
 * Which of the fresh rows may be enqueued now. An ID missing between the watermark and the
 * highest fresh row that does not exist at all may be an insert not yet committed: rows above it
 * wait until it appears or `gap-settle` has passed since it was first seen.
 */
async function settleGaps(d: IntakeDeps, watermark: number, fresh: InboxRowRef[], gapId: number | null, gapSeenAt: Date | null, now: Date) {
  const none = { take: fresh, gap: null, gapSeenAt: null, passed: null as number | null };
  if (fresh.length === 0) return none;
  const hi = fresh[fresh.length - 1].id;
  if (hi - watermark === fresh.length) return none; // contiguous
  const present = new Set(await withTimeout(d.config['msgx.io.timeout'], 'inbox gap check', existingIds(d.inbox, watermark, hi)));
  let lowestMissing: number | null = null;
  for (let id = watermark + 1; id <= hi; id++) {
    if (!present.has(id)) {
      lowestMissing = id;
      break;
    }
  }
  if (lowestMissing === null) return none; // the holes are rows already processed
  const seenAt = gapId === lowestMissing && gapSeenAt ? gapSeenAt : now;
  if (now.getTime() - seenAt.getTime() >= d.config['msgx.intake.gap-settle']) return { ...none, passed: lowestMissing };
  return { take: fresh.filter((r) => r.id < lowestMissing), gap: lowestMissing, gapSeenAt: seenAt, passed: null };
}

/** Run rounds every idle-poll until the budget is spent (the intake task re-schedules itself). */
export async function intakeLoop(d: IntakeDeps, budgetMs: number, shouldStop: () => boolean, sleep: (ms: number) => Promise<void>): Promise<void> {
  const deadline = Date.now() + budgetMs;
  while (!shouldStop() && Date.now() < deadline) {
    try {
      const r = await intakeRound(d);
      if (r.enqueued.length) d.log.debug({ enqueued: r.enqueued.length }, 'enqueued');
      if (r.scanned >= d.config['msgx.pipeline.claim-batch']) continue; // more waiting: no pause
    } catch (e) {
      // An unreadable inbox is never "no new messages": nothing is marked, the round is retried.
      metrics.intakeErrors.inc();
      d.log.error({ err: e }, 'intake round failed; retrying next round');
    }
    await sleep(d.config['msgx.pipeline.idle-poll']);
  }
}

