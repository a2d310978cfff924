// Every PROC_STATE transition, one function each; the state machine reads from this file. What
// each statement does is written once, where it is declared (lib/sql/proc-state.ts); the comments
// here say what the function adds. In the pump's step names (docs/design.md "The pump's steps"):
//   enqueue (intake) → heads, identityOwners (the pump chooses its batch, before its read step)
//   → bindIdentities … recordApplied (business: outcome + identity, in the batch's one transaction)
//   → markAppliedTerminal (terminal: the applied outcome becomes terminal, after the mirror step)
//   | markTerminal (one message, no business transaction) | recordFailure
//   → recordBackfill / recordBackfillFailure / abandonBackfill / resumeBackfill
//   replay: FAILED/DEAD → PENDING
import type { Db } from '../db/postgres.ts';
import { pgOne, pgRows, pgRun, type Executor } from '../db/statement.ts';
import * as Jobs from '../sql/jobs.ts';
import * as ProcState from '../sql/proc-state.ts';
import { TASK } from '../core/tasks.ts';
import { reasonLabel, metrics } from '../runtime/metrics.ts';
import type { Decision } from './failures.ts';
import type { Failure, ReasonClass } from '../core/errors.ts';

export type TerminalState = ProcState.TerminalState;
export type HeadRow = ProcState.HeadRow;

/** The wake-up of the terminal transitions: backfill owes the inbox a processed time. */
const BACKFILL_WAKE = [TASK.backfill];

/** Intake: ProcState.enqueue (insert-if-absent). Returns the IDs that were new. */
export async function enqueue(db: Executor, rows: { id: number; received: string | null }[], now: Date): Promise<number[]> {
  if (rows.length === 0) return [];
  const inserted = await pgRows(
    db,
    ProcState.enqueue,
    rows.map((r) => r.id),
    rows.map((r) => r.received),
    now,
  );
  return inserted.map((r) => r.msg_id);
}

/**
 * The batch of the pump: ProcState.heads, cut before the first FAILED message after the head. A PENDING
 * row is changed by the pump alone (replay only touches FAILED/DEAD rows), so the pump can apply
 * the list as one batch.
 */
export async function heads(db: Executor, limit: number): Promise<HeadRow[]> {
  const rows = await pgRows(db, ProcState.heads, limit);
  const cut = rows.findIndex((head, i) => i > 0 && head.state !== 'PENDING');
  return cut < 0 ? rows : rows.slice(0, cut);
}

/** Count a terminal outcome (after its commit); `kindLabel` bounded (HandlerRegistry.metricKindOf). */
export function countTerminal(state: TerminalState, reason: string | null, kindLabel: string): void {
  metrics.messages.inc({ kind: kindLabel, state, reason: reasonLabel(reason) });
  if (reason?.startsWith('duplicate-of:')) metrics.identityDuplicates.inc();
}

/** INV-6, bind once: ProcState.bindIdentities. Returns the owner of each message's key (itself when bound). */
export async function bindIdentities(db: Executor, rows: readonly { msgId: number; key: string }[], now: Date): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (rows.length === 0) return out;
  const owners = await pgRows(
    db,
    ProcState.bindIdentities,
    rows.map((x) => x.msgId),
    rows.map((x) => x.key),
    now,
  );
  for (const x of owners) out.set(x.msg_id, x.owner);
  return out;
}

/** ProcState.identityOwners, each key asked once: key → the message that owns it. */
export async function identityOwners(db: Executor, keys: readonly string[]): Promise<Map<string, number>> {
  if (keys.length === 0) return new Map();
  const owners = await pgRows(db, ProcState.identityOwners, [...new Set(keys)]);
  return new Map(owners.map((x) => [x.identity_key, x.msg_id]));
}

export interface AppliedOutcome {
  msgId: number;
  state: TerminalState;
  reason: string | null;
  reasonClass: ReasonClass | null;
  kind: string | null;
  /** The identity this message binds (INV-6: bound once; null = bound already, a duplicate, or none). */
  identityKey: string | null;
}

/** The end of the business step: ProcState.recordApplied. Throws when a message of the batch was no longer open. */
export async function recordApplied(db: Executor, rows: readonly AppliedOutcome[], now: Date, wakeTasks: Iterable<string>): Promise<void> {
  const result = await pgOne(
    db,
    ProcState.recordApplied,
    rows.map((x) => x.msgId),
    rows.map((x) => x.state),
    rows.map((x) => x.reason),
    rows.map((x) => x.kind),
    rows.map((x) => x.identityKey),
    now,
    [...new Set(wakeTasks)],
    rows.map((x) => x.reasonClass),
  );
  if (result?.n !== rows.length) throw new Error(`recordApplied: ${result?.n} of ${rows.length} messages were open`);
}

/** The terminal step: ProcState.markAppliedTerminal, waking backfill. Returns what became terminal. */
export async function markAppliedTerminal(db: Executor, msgIds: readonly number[], now: Date): Promise<{ msg_id: number; state: TerminalState; reason: string | null; kind: string | null }[]> {
  if (msgIds.length === 0) return [];
  return pgRows(db, ProcState.markAppliedTerminal, [...msgIds], now, BACKFILL_WAKE);
}

/** ProcState.markTerminal, waking backfill. Throws when the message was not open. */
export async function markTerminal(db: Executor, msgId: number, state: TerminalState, why: { reason: string; reasonClass: ReasonClass } | null, now: Date, kind?: string | null): Promise<void> {
  const rows = await pgRows(db, ProcState.markTerminal, msgId, state, why?.reason ?? null, now, kind || null, BACKFILL_WAKE, why?.reasonClass ?? null);
  if (rows.length !== 1) throw new Error(`message ${msgId} was not open when marking it ${state}`);
}

/**
 * A failure of message `msgId`, decided on the attempt count as committed (the row is locked
 * first: a replay that reset the message while it was being processed is not undone by a
 * decision taken on the count as read). Records the attempt (proc_attempt), then FAILED with
 * the next attempt time, or DEAD + terminal + backfill wake-up; `bindKey`: a DEAD message keeps
 * its identity (the failed business transaction rolled the binding back). One transaction.
 */
export async function recordFailure(
  db: Db,
  msgId: number,
  f: Failure,
  decideFor: (h: { attempts: number; failuresInRow: number }) => Decision,
  now: Date,
  kind: string | null,
  bindKey: string | null = null,
): Promise<Decision> {
  return db.transaction().execute(async (tx) => {
    const h = await pgOne(tx, ProcState.lockForFailure, msgId);
    if (!h) throw new Error(`message ${msgId} is not known`);
    const d = decideFor({ attempts: h.attempts, failuresInRow: h.failures_in_row });
    await pgRun(tx, ProcState.insertAttempt, msgId, now, f.cls, f.detail.slice(0, 2000), d.next);
    if (d.next === 'DEAD') {
      metrics.failures.inc({ class: f.cls }); // the failed attempt is counted as a FAILED one is
      if (bindKey) await bindIdentities(tx, [{ msgId, key: bindKey }], now);
      await pgRun(tx, ProcState.countFinalAttempt, msgId, d.countAttempt ? 1 : 0, f.cls);
      await markTerminal(tx, msgId, 'DEAD', d, now, kind);
      return d;
    }
    await pgRun(tx, ProcState.markFailed, msgId, d.reason, f.cls, d.countAttempt ? 1 : 0, now, new Date(now.getTime() + d.retryInMs), kind, f.service ?? null);
    metrics.failures.inc({ class: f.cls });
    return d;
  });
}

/** ProcState.recordBackfill. */
export async function recordBackfill(db: Executor, ids: number[], now: Date): Promise<void> {
  if (ids.length === 0) return;
  await pgRun(db, ProcState.recordBackfill, ids, now);
}

/** ProcState.recordBackfillFailure: back off along `ladder` (ms). */
export async function recordBackfillFailure(db: Executor, ids: number[], ladder: number[], now: Date): Promise<void> {
  if (ids.length === 0) return;
  await pgRun(db, ProcState.recordBackfillFailure, ids, now, ladder);
}

/** ProcState.abandonBackfill, counted (msgx_backfill_abandoned_total). */
export async function abandonBackfill(db: Executor, ids: number[], reason: 'MISSING_ROW' | 'TRANSIENT_DEADLINE', now: Date): Promise<void> {
  if (ids.length === 0) return;
  await pgRun(db, ProcState.abandonBackfill, ids, reason, now);
  metrics.backfillAbandoned.inc({ reason }, ids.length);
}

/** Operator: ProcState.resumeBackfill. Returns the IDs resumed. */
export async function resumeBackfill(db: Executor, sel: { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' }, now: Date): Promise<number[]> {
  const rows = await pgRows(db, ProcState.resumeBackfill, sel.ids ?? null, sel.reason || null, now);
  return rows.map((r) => r.msg_id);
}

/** Operator: ProcState.replay (its whitelist is there); `reasonPrefix` matches the start of the reason. Returns the IDs replayed. */
export async function replay(db: Executor, sel: { ids?: number[]; state?: 'FAILED' | 'DEAD'; reasonPrefix?: string; force?: boolean }, now: Date): Promise<number[]> {
  const rows = await pgRows(db, ProcState.replay, sel.ids ?? null, !!sel.force, sel.state || null, sel.reasonPrefix ? `${sel.reasonPrefix}%` : null, now);
  return rows.map((r) => r.msg_id);
}

/** Wake several graphile-worker tasks (each coalesced by its job_key) with one statement. */
export async function wakeAll(db: Executor, tasks: Iterable<string>): Promise<void> {
  const list = [...new Set(tasks)];
  if (list.length === 0) return;
  await pgRun(db, Jobs.wakeAll, list);
}

/** Wake a graphile-worker task (coalesced by job_key) inside the caller's transaction. */
export async function wake(db: Executor, task: string, runAt?: Date): Promise<void> {
  await pgRun(db, Jobs.wake, task, runAt ?? null);
}
