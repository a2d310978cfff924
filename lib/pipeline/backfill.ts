// Backfill: write TERMINAL_AT (airport local time) into CMINMSGS_DATE_PROCESSED.
// Scan predicate and the four outcomes of docs/design.md "Backfill outcomes"; the lifecycle gate (an advisory lock
// that replay takes too) is held from reading candidates until their BACKFILL_AT is written.
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import type { Slices } from '../core/config.ts';
import { LOCKS, type Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import { markProcessed } from './inbox.ts';
import * as Locks from '../sql/locks.ts';
import * as ProcState from '../sql/proc-state.ts';
import { withTimeout } from '../core/timeout.ts';
import { formatLocalDatetime } from '../sis/values.ts';
import { metrics } from '../runtime/metrics.ts';
import { abandonBackfill, recordBackfill, recordBackfillFailure } from '../sql/transitions.ts';
import { TimeBudget } from '../core/budget.ts';
import { neverApplied } from './failures.ts';
import type { Tracing } from '../runtime/tracing.ts';
import { backfillSpans } from './trace.ts';

export interface BackfillDeps {
  db: Db;
  inbox: Inbox;
  clock: Clock;
  /** msgx.pipeline.backfill-* / overdue-backfill, msgx.inbox.read-only, the airport's zone, msgx.io.timeout. */
  backfill: Slices['backfill'];
  log: Logger;
  /** A span per message settled (lib/pipeline/trace.ts); undefined: tracing off. */
  tracing?: Tracing;
}

export interface BackfillRound {
  candidates: number;
  written: number;
  alreadyMarked: number;
  missing: number[];
  transient: number[];
  abandonedDeadline: number[];
}

export async function backfillRound(d: BackfillDeps): Promise<BackfillRound> {
  const out: BackfillRound = { candidates: 0, written: 0, alreadyMarked: 0, missing: [], transient: [], abandonedDeadline: [] };
  if (d.backfill.readOnly) return out; // not ours to mark: nothing is written, BACKFILL_AT stays NULL
  const now = d.clock.now();
  const R = d.backfill.overdueMs;
  const overdueBefore = new Date(now.getTime() - R);
  const tz = d.backfill.timezone;
  const traced = { start: d.tracing?.now(), rows: [] as { msg_id: number; trace_context: string | null }[], marked: [] as number[] };
  await d.db.transaction().execute(async (tx) => {
    await Locks.xactLock(tx, LOCKS.LIFECYCLE_GATE);
    let rows = await ProcState.listBackfillCandidates(tx, now, overdueBefore, d.backfill.batch);
    out.candidates = rows.length;
    traced.rows = rows;
    if (rows.length === 0) return;
    // A message never read (its row was gone at its turn) is never marked processed: the inbox
    // would then say it was applied. It is abandoned as MISSING_ROW (alert) without an inbox write.
    const unread = rows.filter(neverApplied).map((r) => r.msg_id);
    if (unread.length) {
      await abandonBackfill(tx, unread, 'MISSING_ROW', now);
      out.missing.push(...unread);
      d.log.error({ msgIds: unread }, 'never applied (DEAD MALFORMED: raw-missing): not marked in the inbox; abandoned (MISSING_ROW); when the row is back, replay it with --force');
      rows = rows.filter((r) => !neverApplied(r));
      if (rows.length === 0) return;
    }
    const ids = rows.map((r) => r.msg_id);
    let res: Awaited<ReturnType<typeof markProcessed>>;
    try {
      const marks = rows.map((r) => ({ id: r.msg_id, at: formatLocalDatetime(r.terminal_at ?? now, tz) }));
      res = await withTimeout(d.backfill.timeoutMs, 'inbox backfill', markProcessed(d.inbox, marks));
    } catch (e) {
      // Transient: back off; at or after TERMINAL_AT + R, abandon (TRANSIENT_DEADLINE).
      const deadline = rows.filter((r) => r.terminal_at && r.terminal_at.getTime() + R <= now.getTime()).map((r) => r.msg_id);
      const retry = ids.filter((id) => !deadline.includes(id));
      await abandonBackfill(tx, deadline, 'TRANSIENT_DEADLINE', now);
      await recordBackfillFailure(tx, retry, d.backfill.backoffMs, now);
      out.transient = retry;
      out.abandonedDeadline = deadline;
      metrics.backfillWritten.inc({ outcome: 'transient' }, rows.length);
      d.log.warn({ err: e, rows: rows.length, abandoned: deadline.length }, 'backfill failed; backing off');
      return;
    }
    const missing = ids.filter((id) => !res.existing.has(id));
    traced.marked = ids.filter((id) => res.existing.has(id));
    await recordBackfill(tx, traced.marked, now);
    await abandonBackfill(tx, missing, 'MISSING_ROW', now);
    out.written = res.written;
    out.alreadyMarked = res.existing.size - res.written;
    out.missing.push(...missing);
    metrics.backfillWritten.inc({ outcome: 'written' }, res.written);
    if (out.alreadyMarked) metrics.backfillWritten.inc({ outcome: 'already-marked' }, out.alreadyMarked);
    if (missing.length) d.log.error({ msgIds: missing }, 'inbox rows gone before backfill: abandoned (MISSING_ROW)');
  });
  // counted (and traced) once committed
  backfillSpans(d.tracing, traced.start, traced.rows, { ...out, written: traced.marked });
  if (out.missing.length) metrics.backfillAbandoned.inc({ reason: 'MISSING_ROW' }, out.missing.length);
  if (out.abandonedDeadline.length) metrics.backfillAbandoned.inc({ reason: 'TRANSIENT_DEADLINE' }, out.abandonedDeadline.length);
  return out;
}

/** When the next backfill is due (for scheduling the next run), or null when nothing is owed. */
export async function nextBackfillDue(d: BackfillDeps): Promise<Date | null> {
  const R = d.backfill.overdueMs;
  const r = await ProcState.readNextBackfillDue(d.db, R);
  return r?.due ?? null;
}

/** Alert gauges: rows owed a backfill, rows past backfill-max-attempts. Not exported on a read-only instance. */
export async function refreshBackfillGauges(d: BackfillDeps): Promise<void> {
  if (d.backfill.readOnly) return;
  const r = await ProcState.readBackfillGauges(d.db, d.backfill.maxAttempts);
  metrics.backfillPending.set(Number(r?.pending ?? 0));
  metrics.backfillOverLimit.set(Number(r?.over ?? 0));
}

/** Drain due rounds within a budget. Returns when the next run is due ('now' if more work remains). */
export async function backfillDrain(d: BackfillDeps, budgetMs: number): Promise<'now' | Date | null> {
  const budget = new TimeBudget(budgetMs);
  while (!budget.spent()) {
    const r = await backfillRound(d);
    if (r.candidates < d.backfill.batch || r.transient.length) break;
  }
  await refreshBackfillGauges(d);
  if (budget.spent()) return 'now';
  return d.backfill.readOnly ? null : nextBackfillDue(d);
}
