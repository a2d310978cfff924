// Every transition of an outbox row (msg_event) made by the dispatchers and their operator
// actions, one function each (docs/flight-state.md "Outbox", docs/consumers.md):
//   PENDING --send acknowledged--> SENT          markSent (conditional on event_id + version)
//   PENDING --send failed-------> PENDING+backoff | DEAD    markFailed
//   PENDING --schd state too big-> DEAD           (markFailed with a forced DEAD)
//   PENDING schd of a deleted/missing flight -> removed     dropGoneSchdRows
//   (state rows: PENDING -> SENT / backoff / DEAD as above; never removed, a tombstone is sent instead)
//   DEAD --dispatch-replay--> PENDING (attempts 0)          replayDead
//   DEAD --dispatch-skip----> SKIPPED                       skipDead
//   SENT older than retention -> removed                   deleteSentBefore
// Updates lock with SKIP LOCKED: a row the pump is rewriting right now (schd upsert) is left
// alone (it stays PENDING and goes out again) and the dispatcher never waits on the pump, so
// the two can never deadlock.
import { LOCKS } from '../db/postgres.ts';
import type { Executor } from '../db/statement.ts';
import * as Locks from '../sql/locks.ts';
import * as OutboxOperator from '../sql/outbox/operator.ts';
import * as OutboxRounds from '../sql/outbox/rounds.ts';
import type { Target } from './plan.ts';
import { msgValue } from '../contract/kafka.ts';
import type { AfterFailure } from './plan.ts';

/** Transaction-scoped advisory locks: one active round per target across all instances. */
export const DISPATCH_LOCKS: Record<Target, number> = { msg: LOCKS.MSG_DISPATCH_ROUND, schd: LOCKS.SCHD_DISPATCH_ROUND, state: LOCKS.STATE_DISPATCH_ROUND };

export async function tryRoundLock(tx: Executor, target: Target): Promise<boolean> {
  const r = await Locks.tryRoundXactLock(tx, DISPATCH_LOCKS[target]);
  return r!.ok;
}

export interface MsgRow {
  eventId: number;
  flid: string;
  stateVersion: number;
  attempts: number;
  /** The payload as stored (EVENT_ID inside), serialised once as the record value (lib/contract/kafka.ts msgValue). */
  value: string;
  /** The trace context stored with the row (lib/dispatch/trace.ts). */
  trace: string | null;
}

/**
 * The frozen batch of a msg round: PENDING and due, EVENT_ID order, at most `limit`, and no
 * earlier event of the same FLID that is DEAD or PENDING-not-due (plan.ts `releasable`).
 */
export async function freezeMsgBatch(db: Executor, now: Date, limit: number): Promise<MsgRow[]> {
  const rows = await OutboxRounds.freezeMsgBatch(db, now, limit);
  return rows.map((x) => ({ eventId: x.event_id, flid: x.flid, stateVersion: x.state_version, attempts: x.attempts, value: msgValue(x.payload), trace: x.trace_context }));
}

export interface SchdRow {
  eventId: number;
  flid: string;
  stateVersion: number;
  attempts: number;
  /** The trace context stored with the row (lib/dispatch/trace.ts). */
  trace: string | null;
}

/** PENDING, due rows of the schd or state target in EVENT_ID order (schd: oldest write generation first). */
export async function pendingRows(db: Executor, target: 'schd' | 'state', now: Date, limit: number): Promise<SchdRow[]> {
  const rows = await OutboxRounds.listPendingRows(db, target, now, limit);
  return rows.map((x) => ({ eventId: x.event_id, flid: x.flid, stateVersion: x.state_version, attempts: x.attempts, trace: x.trace_context }));
}

/** Of these state rows, the ones still PENDING under the same event id (not rewritten since they were read). */
export async function unchangedStateRows(db: Executor, eventIds: readonly number[]): Promise<Set<number>> {
  if (eventIds.length === 0) return new Set();
  return new Set((await OutboxRounds.listUnchangedStateRows(db, [...eventIds])).map((x) => x.event_id));
}

export interface Acked {
  eventId: number;
  /** The version that went out: the row is marked only if it still holds it. */
  stateVersion: number;
  partition: number;
  offset: string | null;
}

/** Mark acknowledged rows SENT; rows rewritten meanwhile (new event_id / version) stay PENDING. Returns the event ids marked. */
export async function markSent(tx: Executor, acked: readonly Acked[], now: Date): Promise<number[]> {
  if (acked.length === 0) return [];
  const rows = await OutboxRounds.markSent(
    tx,
    now,
    acked.map((a) => a.eventId),
    acked.map((a) => a.stateVersion),
    acked.map((a) => a.partition),
    acked.map((a) => a.offset),
  );
  return rows.map((x) => x.event_id);
}

export interface Failed {
  eventId: number;
  /** attempts as read: a row changed meanwhile (replayed, rewritten) is left alone. */
  attemptsBefore: number;
  next: AfterFailure;
}

/** Record failed sends (backoff or DEAD) with the error text. Returns the event ids that went DEAD. */
export async function markFailed(tx: Executor, failed: readonly Failed[], error: string): Promise<number[]> {
  if (failed.length === 0) return [];
  const rows = await OutboxRounds.markFailed(
    tx,
    error.slice(0, 2000),
    failed.map((f) => f.eventId),
    failed.map((f) => f.attemptsBefore),
    failed.map((f) => f.next.state),
    failed.map((f) => f.next.attempts),
    failed.map((f) => f.next.nextAttemptAt?.toISOString() ?? null),
  );
  return rows.filter((x) => x.state === 'DEAD').map((x) => x.event_id);
}

/** schd rows whose flight is missing or DELETED: removed (deletions are never published on schd, C-9). */
export async function dropGoneSchdRows(tx: Executor, eventIds: readonly number[]): Promise<number> {
  if (eventIds.length === 0) return 0;
  return OutboxRounds.dropGoneSchdRows(tx, [...eventIds]);
}

/** Events that backed off only because Kafka was unreachable: due at once now that it answers (lib/dispatch/outage.ts). */
export async function releaseBackoff(db: Executor, eventIds: readonly number[]): Promise<number> {
  if (eventIds.length === 0) return 0;
  return OutboxRounds.releaseBackoff(db, [...eventIds]);
}

/** Earliest future retry among PENDING rows of a target (null: nothing waits on backoff). */
export async function nextAttemptAt(db: Executor, target: Target, now: Date): Promise<Date | null> {
  return (await OutboxRounds.readNextAttemptAt(db, target, now))?.at ?? null;
}

export interface DeadSelector {
  eventIds?: number[];
  flid?: string;
  /** Every DEAD row (of `target` when given). */
  all?: boolean;
  target?: Target;
}

/**
 * The selector as the statements' parameters: a filter not given (or an empty id list) is null;
 * null when a FLID given as null (a task payload) selects no row at all (flid = null holds for none).
 */
function deadParams(s: DeadSelector): [eventIds: number[] | null, flid: string | null, target: Target | null] | null {
  if ((s.flid as string | null | undefined) === null) return null;
  return [s.eventIds?.length ? s.eventIds : null, s.flid ?? null, s.target || null];
}

/** DEAD → PENDING with attempts 0, due now (sent again in EVENT_ID order). last_error is kept. */
export async function replayDead(tx: Executor, s: DeadSelector): Promise<{ eventId: number; target: Target }[]> {
  const p = deadParams(s);
  const rows = p ? await OutboxOperator.replayDead(tx, ...p) : [];
  return rows.map((x) => ({ eventId: x.event_id, target: x.target })).sort((a, b) => a.eventId - b.eventId);
}

/** DEAD → SKIPPED (kept, visible; it no longer holds its FLID's later events). */
export async function skipDead(tx: Executor, s: DeadSelector): Promise<{ eventId: number; target: Target }[]> {
  const p = deadParams(s);
  const rows = p ? await OutboxOperator.skipDead(tx, ...p) : [];
  return rows.map((x) => ({ eventId: x.event_id, target: x.target })).sort((a, b) => a.eventId - b.eventId);
}

export type DeadRow = OutboxOperator.DeadLetterRow;

export async function listDead(db: Executor, q: { target?: Target; limit: number }): Promise<DeadRow[]> {
  return OutboxOperator.listDead(db, q.target || null, q.limit);
}

/** Delete up to `batch` SENT rows sent before `cutoff`. Returns the number deleted. */
export async function deleteSentBefore(db: Executor, cutoff: Date, batch: number): Promise<number> {
  return OutboxOperator.deleteSentBefore(db, cutoff, batch);
}
