// Intake: inbox rows with CMINMSGS_DATE_PROCESSED IS NULL → PENDING PROC_STATE rows (INV-1),
// insert-if-absent, ascending ID. One active instance (leader lock, lib/runtime/leader.ts).
//
// A round stays O(batch) on an inbox with no index on the processed column (C-2):
//  - the watermark scan continues from the largest enqueued ID with a primary-key range scan;
//  - ID gaps (an ID that becomes visible after a higher one: an insert not yet committed) are
//    each waited for `gap-settle` from their own first sighting; rows above the lowest gap that
//    has not settled wait. A gap moved past is remembered (`passed_gaps`) and rechecked for a row
//    that commits late: every round while it is younger than `full-scan-every`, at every full
//    scan until the inbox retention horizon (only late rows live in a gap, so this is cheap);
//  - a full IS NULL scan every `full-scan-every` catches anything else below the watermark. It
//    starts at the lowest unterminated message (rows below it were all enqueued and finished, or
//    lie in a remembered gap) and walks in chunks of a bounded number of existing rows, so empty
//    ID spans cost nothing and its cost per period is bounded by the unfinished part of the
//    inbox, not by its size or the watermark's magnitude.
//
// A read-only installation (msgx.inbox.read-only) is a shadow beside the live one
// (docs/operations.md "Trying a rule change"): the same scans and gap handling, but over every
// row by ID, processed by the other installation or not, so that after any downtime it catches up
// on everything it missed. It starts after msgx.inbox.start-after (0: just below the oldest
// retained row), recorded once in SHADOW_INTAKE; a gap it moves past that lies below the oldest
// row carrying a processing time was deleted by retention before it read it: recorded there and
// reported in /healthz (count, ID ranges), never skipped silently.
import { TASK } from '../core/tasks.ts';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { Slices } from '../core/config.ts';
import type { Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import { existingRows, inboxBounds, nthIdAfter, oldestProcessedId, readAllAfter, readAllIn, readUnprocessedAfter, readUnprocessedIn, type InboxRowRef } from './inbox.ts';
import * as IntakeCursor from '../sql/intake-cursor.ts';
import * as ProcState from '../sql/proc-state.ts';
import * as Shadow from '../sql/shadow.ts';
import { setNote } from '../runtime/conditions.ts';
import { withTimeout } from '../core/timeout.ts';
import { metrics, noteInboxRead } from '../runtime/metrics.ts';
import { wake } from '../sql/jobs.ts';
import { enqueue } from '../sql/transitions.ts';
import { TimeBudget } from '../core/budget.ts';
import type { Tracing } from '../runtime/tracing.ts';
import { takeSpans } from './trace.ts';
import { INTAKE } from '../core/tuning.ts';

export interface IntakeDeps {
  db: Db;
  inbox: Inbox;
  clock: Clock;
  /** msgx.pipeline.claim-batch / idle-poll / inbox-retention, msgx.intake.*, msgx.io.timeout. */
  intake: Slices['intake'];
  log: Logger;
  /** How a failed round is logged (the process's quiet outage log, lib/runtime/health.ts); default: one error line each. */
  roundFailed?: (err: unknown) => void;
  /** Each message taken starts its trace (lib/pipeline/trace.ts); undefined: tracing off. */
  tracing?: Tracing;
}

export interface RoundResult {
  scanned: number;
  enqueued: number[];
  late: number[];
  /** The lowest gap rows wait behind (null: none). */
  waitingOnGap: number | null;
  /** The watermark scan returned a full batch (more may be waiting). */
  full: boolean;
}

interface Gap {
  lo: number;
  hi: number;
  seen: string;
}
interface PassedGap {
  lo: number;
  hi: number;
  at: string;
}

const { fullScanChunkFactor: FULL_SCAN_CHUNK_FACTOR, maxPassedGaps: MAX_PASSED_GAPS, recheckRanges: RECHECK_RANGES } = INTAKE;

export async function intakeRound(d: IntakeDeps): Promise<RoundResult> {
  const timeout = d.intake.timeoutMs;
  const batch = d.intake.claimBatch;
  const now = d.clock.now();
  const fullEvery = d.intake.fullScanEveryMs;
  const shadow = d.intake.readOnly === true;
  if (shadow) await startShadow(d);
  const cur = await IntakeCursor.readIntakeCursor(d.db);
  if (!cur) throw new Error('intake_cursor has no row');
  const readAfter = shadow ? readAllAfter : readUnprocessedAfter;
  const readIn = shadow ? readAllIn : readUnprocessedIn;

  // 1. watermark scan, gaps settled one by one
  const fresh = await withTimeout(timeout, 'inbox scan', readAfter(d.inbox, cur.watermark, batch));
  noteInboxRead();
  const settled = await settleGaps(d, cur.watermark, fresh, cur.gaps ?? [], now);
  const lost = shadow && settled.passed.length ? await lostToRetention(d, settled.passed, now) : [];
  const horizon = now.getTime() - d.intake.inboxRetentionMs;
  let passedGaps: PassedGap[] = [...(cur.passed_gaps ?? []), ...settled.passed.map((g) => ({ lo: g.lo, hi: g.hi, at: now.toISOString() }))].filter((g) => Date.parse(g.at) >= horizon);
  if (passedGaps.length > MAX_PASSED_GAPS) {
    const forgotten = passedGaps.slice(0, passedGaps.length - MAX_PASSED_GAPS);
    passedGaps = passedGaps.slice(-MAX_PASSED_GAPS);
    d.log.warn({ forgotten: forgotten.length, lowest: forgotten[0].lo }, 'too many passed inbox ID gaps to remember; the oldest are left to nothing but the full scan');
  }

  // 2. the periodic full scan: start, then one bounded chunk per round
  let fullFrom = cur.full_scan_from;
  let fullAt = cur.full_scan_at;
  let startedFull = false;
  if (fullFrom === null && (!fullAt || now.getTime() - fullAt.getTime() >= fullEvery)) {
    fullFrom = await fullScanStart(d, cur.watermark);
    fullAt = now;
    startedFull = true;
  }
  let below: InboxRowRef[] = [];
  if (fullFrom !== null) {
    const chunk = batch * FULL_SCAN_CHUNK_FACTOR;
    const boundary = fullFrom < cur.watermark ? await withTimeout(timeout, 'inbox full scan', nthIdAfter(d.inbox, fullFrom, cur.watermark, chunk)) : null;
    const upTo = boundary ?? cur.watermark;
    below = upTo > fullFrom ? await withTimeout(timeout, 'inbox full scan', readAfter(d.inbox, fullFrom, chunk, upTo)) : [];
    fullFrom = upTo >= cur.watermark ? null : upTo;
  }

  // 3. passed gaps: the recent ones every round, all of them when a full scan starts
  const recheck = startedFull ? passedGaps : passedGaps.filter((g) => now.getTime() - Date.parse(g.at) < fullEvery);
  const lateInGaps: InboxRowRef[] = [];
  for (let i = 0; i < recheck.length; i += RECHECK_RANGES) {
    lateInGaps.push(...(await withTimeout(timeout, 'inbox gap recheck', readIn(d.inbox, recheck.slice(i, i + RECHECK_RANGES), batch))));
  }
  metrics.intakeScannedRows.inc(fresh.length + below.length + lateInGaps.length);

  const take = settled.take;
  const newWatermark = take.length ? Math.max(cur.watermark, take[take.length - 1].id) : cur.watermark;
  const lowestGap = settled.open[0] ?? null;
  const belowAll = [...new Map([...below, ...lateInGaps].map((r) => [r.id, r])).values()].sort((a, b) => a.id - b.id);
  const taken = [...belowAll, ...take];
  // rows below the watermark may be known already (a full scan reads unfinished ones again): no new trace for them
  const known =
    d.tracing && belowAll.length
      ? new Set(
          (
            await ProcState.listKnown(
              d.db,
              belowAll.map((r) => r.id),
            )
          ).map((r) => Number(r.msg_id)),
        )
      : undefined;
  const taking = takeSpans(d.tracing, taken, known);
  const { inserted, late } = await d.db.transaction().execute(async (tx) => {
    const ins = await enqueue(tx, taken, now, taking?.contexts);
    const saved = await IntakeCursor.saveIntakeCursor(
      tx,
      newWatermark,
      fullFrom,
      fullAt,
      lowestGap?.lo ?? null,
      lowestGap ? new Date(lowestGap.seen) : null,
      JSON.stringify(settled.open),
      JSON.stringify(passedGaps),
      cur.watermark,
    );
    // Only this leader moves the watermark up: a different one now is Postgres restored from a backup
    // during the round. Writing ours would hide the restore from the check (lib/watches/restore.ts).
    if (saved !== 1) throw new Error(`intake_cursor's watermark is no longer ${cur.watermark} (Postgres restored from a backup during the round?); nothing of this round was kept`);
    if (lost.length) await Shadow.addLost(tx, JSON.stringify(lost));
    if (ins.length) await wake(tx, TASK.pump);
    const belowIds = new Set(belowAll.map((r) => r.id));
    return { inserted: ins, late: ins.filter((id) => belowIds.has(id)) };
  });
  taking?.end(inserted);
  if (settled.passed.length) {
    metrics.intakeGapsPassed.inc(settled.passed.length);
    d.log.warn({ gaps: settled.passed.map((g) => (g.lo === g.hi ? g.lo : `${g.lo}-${g.hi}`)) }, 'inbox ID gap not filled within gap-settle; moving past it');
  }
  if (lost.length) {
    d.log.error({ lost: lost.map((g) => `${g.lo}-${g.hi}`) }, 'shadow: inbox rows were deleted by retention before this installation read them; their messages are missing here');
    await reportShadow(d);
  }
  if (late.length) {
    metrics.intakeLateRows.inc(late.length);
    d.log.warn({ msgIds: late }, 'inbox rows appeared below IDs already enqueued; processed late, out of order');
  }
  return { scanned: fresh.length + below.length + lateInGaps.length, enqueued: inserted, late, waitingOnGap: settled.blockedAt, full: fresh.length >= batch };
}

const shadowStarted = new WeakSet<object>();

/**
 * A shadow's start, once (kept in SHADOW_INTAKE): after msgx.inbox.start-after, or just below the
 * oldest retained row (or at the watermark of an installation that already took rows in).
 */
async function startShadow(d: IntakeDeps): Promise<void> {
  if (shadowStarted.has(d)) return;
  const row = await Shadow.readShadowIntake(d.db);
  if (!row) throw new Error('shadow_intake has no row');
  if (row.started_after === null) {
    const cur = await IntakeCursor.readIntakeCursor(d.db);
    let after = d.intake.startAfter ?? 0;
    if (after === 0) {
      const { min } = await withTimeout(d.intake.timeoutMs, 'inbox bounds', inboxBounds(d.inbox));
      after = Math.max(Number(cur?.watermark ?? 0), min === null ? 0 : min - 1);
    }
    await Shadow.startShadow(d.db, after);
    d.log.info({ startedAfter: after }, 'shadow: read-only installation starts taking every inbox row after this ID');
  }
  shadowStarted.add(d);
  await reportShadow(d);
}

/** /healthz: where the shadow started and what retention deleted before it read it (count, ID ranges). */
async function reportShadow(d: IntakeDeps): Promise<void> {
  const row = await Shadow.readShadowIntake(d.db);
  if (!row) return;
  const lost = row.lost ?? [];
  setNote('shadow', {
    startedAfter: row.started_after === null ? null : Number(row.started_after),
    lostToRetention: { count: lost.reduce((n, g) => n + g.hi - g.lo + 1, 0), ranges: lost.map((g) => (g.lo === g.hi ? `${g.lo}` : `${g.lo}-${g.hi}`)) },
  });
}

/**
 * The passed gaps (or parts of them) below the oldest inbox row that carries a processing time:
 * inbox retention deletes only marked rows, oldest first, so rows there were deleted by retention
 * (another installation processed them) before this shadow read them — never-marked rows (DEAD
 * messages) may stay below, which is why the oldest row as such would not do. A gap above it is an
 * ID the AODB never committed, handled as on any installation.
 */
async function lostToRetention(d: IntakeDeps, passed: Gap[], now: Date): Promise<{ lo: number; hi: number; at: string }[]> {
  const oldest = await withTimeout(d.intake.timeoutMs, 'inbox oldest processed row', oldestProcessedId(d.inbox));
  if (oldest === null) return [];
  return passed.filter((g) => g.lo < oldest).map((g) => ({ lo: g.lo, hi: Math.min(g.hi, oldest - 1), at: now.toISOString() }));
}

/**
 * Where a full scan starts: just below the lowest unterminated (PENDING/FAILED) message, or at
 * the watermark when everything enqueued has finished (nothing below can be missing except in a
 * remembered gap, which the scan rechecks separately).
 */
async function fullScanStart(d: IntakeDeps, watermark: number): Promise<number> {
  const lo = (await ProcState.readLowestOpen(d.db))?.lo;
  return lo === null || lo === undefined ? watermark : Math.min(watermark, Number(lo) - 1);
}

/**
 * Which fresh rows may be enqueued now. Every run of missing IDs between the watermark and the
 * highest fresh row is a gap with its own first sighting (kept from earlier rounds); rows wait
 * behind the lowest gap that has not been seen for `gap-settle`. A row that exists, unprocessed,
 * but was not in the fresh read committed in between: rows above it wait one round for it.
 */
async function settleGaps(d: IntakeDeps, watermark: number, fresh: InboxRowRef[], known: Gap[], now: Date) {
  const keepAbove = (hi: number) => known.filter((g) => g.hi > hi).map((g) => ({ ...g, lo: Math.max(g.lo, hi + 1) }));
  if (fresh.length === 0) return { take: fresh, open: known.filter((g) => g.hi > watermark), passed: [] as Gap[], blockedAt: null as number | null };
  const hi = fresh[fresh.length - 1].id;
  if (hi - watermark === fresh.length) return { take: fresh, open: keepAbove(hi), passed: [] as Gap[], blockedAt: null };
  const present = await withTimeout(d.intake.timeoutMs, 'inbox gap check', existingRows(d.inbox, watermark, hi));
  const freshIds = new Set(fresh.map((r) => r.id));
  const raced = present.find((p) => (p.unprocessed || d.intake.readOnly === true) && !freshIds.has(p.id))?.id ?? Infinity;
  // missing runs in (watermark, hi], split by what is already known so that each part keeps its sighting
  const missing: Gap[] = [];
  let next = watermark + 1;
  for (const id of [...present.map((p) => p.id), hi + 1]) {
    if (id > next) missing.push(...split(next, id - 1, known, now));
    next = id + 1;
  }
  const settle = d.intake.gapSettleMs;
  const passed: Gap[] = [];
  let block = raced;
  for (const g of missing) {
    if (g.lo > block) break;
    if (now.getTime() - Date.parse(g.seen) >= settle) passed.push(g);
    else {
      block = Math.min(block, g.lo);
      break;
    }
  }
  const passedSet = new Set(passed);
  const open = [...missing.filter((g) => !passedSet.has(g) && g.lo > watermark), ...keepAbove(hi)];
  return {
    take: fresh.filter((r) => r.id < block),
    open,
    passed: passed.filter((g) => g.lo < block),
    blockedAt: block === Infinity ? null : block,
  };
}

/** [lo, hi] cut along the known gaps: known parts keep their sighting, the rest is seen now. */
function split(lo: number, hi: number, known: Gap[], now: Date): Gap[] {
  const out: Gap[] = [];
  let at = lo;
  for (const k of [...known].sort((a, b) => a.lo - b.lo)) {
    if (k.hi < at || k.lo > hi) continue;
    if (k.lo > at) out.push({ lo: at, hi: k.lo - 1, seen: now.toISOString() });
    const end = Math.min(k.hi, hi);
    out.push({ lo: Math.max(k.lo, at), hi: end, seen: k.seen });
    at = end + 1;
    if (at > hi) break;
  }
  if (at <= hi) out.push({ lo: at, hi, seen: now.toISOString() });
  return out;
}

/** Run rounds every idle-poll until the budget is spent (the intake task re-schedules itself). */
export async function intakeLoop(d: IntakeDeps, budgetMs: number, shouldStop: () => boolean, sleep: (ms: number) => Promise<void>): Promise<void> {
  const budget = new TimeBudget(budgetMs);
  while (!shouldStop() && !budget.spent()) {
    try {
      const r = await intakeRound(d);
      if (r.enqueued.length) d.log.debug({ enqueued: r.enqueued.length }, 'enqueued');
      // More waiting and nothing holding it back: no pause. Behind a gap, the next look is one idle-poll away.
      if (r.full && r.waitingOnGap === null) continue;
    } catch (e) {
      // An unreadable inbox is never "no new messages": nothing is marked, the round is retried.
      metrics.intakeErrors.inc();
      if (d.roundFailed) d.roundFailed(e);
      else d.log.error({ err: e }, 'intake round failed; retrying next round');
    }
    await sleep(d.intake.idlePollMs);
  }
}
