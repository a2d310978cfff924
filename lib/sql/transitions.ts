// Every PROC_STATE transition (a message's processing state): one function each, with the one
// statement it runs declared beside it and described once, here. The state machine, in the
// pump's step names (docs/design.md "The pump's steps"):
//   enqueue (intake: → PENDING)
//   → recordApplied (business: outcome + identity, claimIdentity deciding the owners, in the batch's one transaction)
//   → markAppliedTerminal (terminal: the applied outcome becomes SUCCEEDED/SKIPPED/DEAD, after the mirror step)
//   | markTerminal (one message, no business transaction) | recordFailure (→ FAILED or DEAD)
//   → recordBackfill / recordBackfillFailure / abandonBackfill / resumeBackfill (the inbox's processed time)
//   replay: FAILED/DEAD → PENDING (operator)
// Reads of PROC_STATE (the pump's heads, gauges, selections, retention) are in proc-state.ts.
// A terminal transition wakes backfill inside its own statement (WAKE); metrics are counted by
// the callers once the transaction committed.
import type { Failure, ReasonClass, Service } from '../core/errors.ts';
import { TASK } from '../core/tasks.ts';
import type { Db } from '../db/postgres.ts';
import { type Executor, PER_EXECUTION, pgOne, pgRows, pgRun, pgStatement } from '../db/statement.ts';
import { type AbandonReason, readIdentityOwners, type TerminalState } from './proc-state.ts';

/** The wake-up of the terminal transitions: backfill owes the inbox a processed time. */
const BACKFILL_WAKE = [TASK.backfill];

/**
 * A scalar expression that wakes the graphile-worker tasks of the text[] parameter `param` inside
 * the statement it is part of (nothing when the list is empty): `msgx_wake`, as lib/sql/jobs.ts
 * wakes — a wake-up is never lost (docs/decisions.md "Duties"). A subquery of its own, so that it
 * runs once per statement (an init plan), not once per row of the select list it sits in: as a
 * bare call it ran for each of a batch's 500 rows, and B1 fell to 0.4 ×.
 */
const WAKE = (param: string) => `case when cardinality(${param}::text[]) > 0 then (select msgx_wake(${param}::text[])) end`;

// ---- intake

const enqueueStatement = pgStatement<[msgIds: number[], received: (string | null)[], now: Date, traces: (string | null)[] | null], { msg_id: number }>(
  'transitions.enqueue',
  `insert into proc_state (msg_id, received_at, enqueued_at, updated_at, trace_context)
   select u.msg_id, u.received_at, $3::timestamptz, $3::timestamptz, u.trace
     from unnest($1::bigint[], $2::timestamp[], $4::text[]) with ordinality as u(msg_id, received_at, trace, ord)
    order by u.ord
   on conflict (msg_id) do nothing
   returning msg_id`,
);

/**
 * → PENDING: inserts the messages not yet known (insert-if-absent), in the given order, each with
 * its trace context when tracing is on (`traces`, index for index; lib/runtime/tracing.ts).
 * Returns the IDs that were new.
 */
export async function enqueue(db: Executor, rows: { id: number; received: string | null }[], now: Date, traces: (string | null)[] | null = null): Promise<number[]> {
  if (rows.length === 0) return [];
  const inserted = await pgRows(
    db,
    enqueueStatement,
    rows.map((r) => r.id),
    rows.map((r) => r.received),
    now,
    traces,
  );
  return inserted.map((r) => r.msg_id);
}

// ---- the pump's business step: inside the batch's one transaction

/**
 * INV-6, the identity rule, written once: a key belongs to the message that bound it first. Given
 * the owners known so far (committed, or met earlier in the same batch: `owners` is updated),
 * returns the owner of `key` for message `msgId`: itself (it binds the key) or another message (a
 * duplicate). The business step applies it to a batch; a failure that makes a message DEAD to that
 * message alone. The unique constraint on IDENTITY_KEY stays the guard.
 */
export function claimIdentity(owners: Map<string, number>, key: string, msgId: number): number {
  const owner = owners.get(key);
  if (owner !== undefined) return owner;
  owners.set(key, msgId);
  return msgId;
}

const bindIdentityStatement = pgStatement<[msgId: number, key: string, now: Date]>(
  'transitions.bind_identity',
  'update proc_state set identity_key = $2::text, updated_at = $3::timestamptz where msg_id = $1::bigint and identity_key is null',
);

export interface AppliedOutcome {
  msgId: number;
  state: TerminalState;
  reason: string | null;
  reasonClass: ReasonClass | null;
  kind: string | null;
  /** The identity this message binds (INV-6: bound once; null = bound already, a duplicate, or none). */
  identityKey: string | null;
}

const recordAppliedStatement = pgStatement<
  [
    msgIds: number[],
    states: TerminalState[],
    reasons: (string | null)[],
    kinds: (string | null)[],
    identityKeys: (string | null)[],
    now: Date,
    wakeTasks: string[],
    reasonClasses: (ReasonClass | null)[],
  ],
  { n: number; woken: number | null }
>(
  'transitions.record_applied',
  `with a as (
     update proc_state p set applied_state = u.state, applied_reason = u.reason, applied_reason_class = u.reason_class, kind = coalesce(u.kind, p.kind),
                             identity_key = coalesce(u.identity_key, p.identity_key), updated_at = $6::timestamptz
     from unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $8::text[]) as u(msg_id, state, reason, kind, identity_key, reason_class)
     where p.msg_id = u.msg_id and p.state in ('PENDING', 'FAILED') returning 1)
   select (select count(*) from a)::int as n, ${WAKE('$7')} as woken`,
);

/**
 * The end of a batch's business transaction, one statement: every message's outcome
 * (APPLIED_STATE: the business effect is known committed, the message stays open until the
 * terminal step) and its identity binding, and the batch's dispatcher wake-ups. The unique
 * constraint on IDENTITY_KEY stays the guard against a duplicate the batch did not see (the
 * transaction then rolls back and is retried). Throws when a message of the batch was no longer
 * open.
 */
export async function recordApplied(db: Executor, rows: readonly AppliedOutcome[], now: Date, wakeTasks: Iterable<string>): Promise<void> {
  const result = await pgOne(
    db,
    recordAppliedStatement,
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

// ---- the pump's terminal step, and an outcome decided without a business transaction

const markAppliedTerminalStatement = pgStatement<
  [msgIds: number[], now: Date, wakeTasks: string[]],
  { msg_id: number; state: TerminalState; reason: string | null; reason_class: ReasonClass | null; kind: string | null; woken: number | null }
>(
  'transitions.mark_applied_terminal',
  `with t as (
     update proc_state set state = applied_state, reason = applied_reason, reason_class = applied_reason_class, terminal_at = $2::timestamptz, backfill_next_at = $2::timestamptz,
                           next_attempt_at = null, updated_at = $2::timestamptz
     where msg_id = any($1::bigint[]) and state in ('PENDING', 'FAILED') and applied_state is not null
     returning msg_id, state, reason, reason_class, kind)
   select t.*, ${WAKE('$3')} as woken from t order by msg_id`,
);

/**
 * The pump's terminal step for a batch, one statement: each message's applied outcome becomes its
 * terminal state, with TERMINAL_AT and the backfill intent, and backfill is woken when any
 * message finished. Returns what became terminal, in MSG_ID order; a message no longer open
 * (e.g. replayed meanwhile) is left alone.
 */
export async function markAppliedTerminal(
  db: Executor,
  msgIds: readonly number[],
  now: Date,
): Promise<{ msg_id: number; state: TerminalState; reason: string | null; reason_class: ReasonClass | null; kind: string | null }[]> {
  if (msgIds.length === 0) return [];
  return pgRows(db, markAppliedTerminalStatement, [...msgIds], now, BACKFILL_WAKE);
}

const markTerminalStatement = pgStatement<
  [msgId: number, state: TerminalState, reason: string | null, now: Date, kind: string | null, wakeTasks: string[], reasonClass: ReasonClass | null],
  { msg_id: number; woken: number | null }
>(
  'transitions.mark_terminal',
  `with t as (
     update proc_state set state = $2::text, reason = $3::text, reason_class = $7::text, terminal_at = $4::timestamptz, backfill_next_at = $4::timestamptz, next_attempt_at = null,
                           updated_at = $4::timestamptz, kind = coalesce($5::text, kind)
     where msg_id = $1::bigint and state in ('PENDING', 'FAILED') returning msg_id)
   select t.msg_id, ${WAKE('$6')} as woken from t`,
);

/**
 * One open message → terminal state + TERMINAL_AT + backfill intent + backfill wake-up, one
 * statement: an outcome decided without a business transaction (a FAILED head whose attempts are
 * used up, or a failure that makes the message DEAD). Throws when the message was not open.
 */
export async function markTerminal(db: Executor, msgId: number, state: TerminalState, why: { reason: string; reasonClass: ReasonClass } | null, now: Date, kind?: string | null): Promise<void> {
  const rows = await pgRows(db, markTerminalStatement, msgId, state, why?.reason ?? null, now, kind || null, BACKFILL_WAKE, why?.reasonClass ?? null);
  if (rows.length !== 1) throw new Error(`message ${msgId} was not open when marking it ${state}`);
}

// ---- a failed attempt

const lockForFailure = pgStatement<[msgId: number], { attempts: number; failures_in_row: number }>(
  'transitions.lock_for_failure',
  'select attempts, failures_in_row from proc_state where msg_id = $1::bigint for update',
);

const insertAttempt = pgStatement<[msgId: number, at: Date, errorClass: string, detail: string, nextState: string]>(
  'transitions.insert_attempt',
  'insert into proc_attempt (msg_id, attempt_at, error_class, detail, next_state) values ($1::bigint, $2::timestamptz, $3::text, $4::text, $5::text)',
);

const countFinalAttempt = pgStatement<[msgId: number, add: number, errorClass: string]>(
  'transitions.count_final_attempt',
  'update proc_state set attempts = attempts + $2::int, error_class = $3::text where msg_id = $1::bigint',
);

const markFailed = pgStatement<[msgId: number, reason: string, errorClass: string, add: number, now: Date, nextAttemptAt: Date, kind: string | null, service: Service | null]>(
  'transitions.mark_failed',
  `update proc_state set state = 'FAILED', reason = $2::text, reason_class = $3::text, error_class = $3::text, error_service = $8::text, attempts = attempts + $4::int,
                         failures_in_row = failures_in_row + 1, failing_since = coalesce(failing_since, $5::timestamptz),
                         next_attempt_at = $6::timestamptz, updated_at = $5::timestamptz, kind = coalesce($7::text, kind)
    where msg_id = $1::bigint and state in ('PENDING', 'FAILED')`,
);

/** What recordFailure's caller decided (lib/pipeline/failures.ts Decision): FAILED with a retry time, or DEAD. */
export type FailureDecision = { reason: string; reasonClass: ReasonClass; countAttempt: boolean } & ({ next: 'DEAD' } | { next: 'FAILED'; retryInMs: number });

/**
 * A failure of message `msgId` (class `errorClass`), decided on the attempt count as committed:
 * the row is locked first, so a replay that reset the message while it was being processed is not
 * undone by a decision taken on the count as read. Records the attempt (PROC_ATTEMPT), then
 * FAILED with its reason, class, service to probe and next attempt time, or DEAD (markTerminal);
 * `bindKey`: a DEAD message keeps its identity (the failed business transaction rolled the
 * binding back). One transaction. Throws when the message is not known.
 */
export async function recordFailure<D extends FailureDecision>(
  db: Db,
  msgId: number,
  f: Failure,
  decideFor: (h: { attempts: number; failuresInRow: number }) => D,
  now: Date,
  kind: string | null,
  bindKey: string | null = null,
): Promise<D> {
  return db.transaction().execute(async (tx) => {
    const h = await pgOne(tx, lockForFailure, msgId);
    if (!h) throw new Error(`message ${msgId} is not known`);
    const d = decideFor({ attempts: h.attempts, failuresInRow: h.failures_in_row });
    await pgRun(tx, insertAttempt, msgId, now, f.cls, f.detail.slice(0, 2000), d.next);
    if (d.next === 'DEAD') {
      if (bindKey) {
        const owners = new Map((await readIdentityOwners(tx, [bindKey])).map((x) => [x.identity_key, x.msg_id]));
        if (claimIdentity(owners, bindKey, msgId) === msgId) await pgRun(tx, bindIdentityStatement, msgId, bindKey, now);
      }
      await pgRun(tx, countFinalAttempt, msgId, d.countAttempt ? 1 : 0, f.cls);
      await markTerminal(tx, msgId, 'DEAD', d, now, kind);
      return d;
    }
    await pgRun(tx, markFailed, msgId, d.reason, f.cls, d.countAttempt ? 1 : 0, now, new Date(now.getTime() + d.retryInMs), kind, f.service ?? null);
    return d;
  });
}

// ---- backfill: the inbox's processed time written, retried or abandoned

const recordBackfillStatement = pgStatement<[msgIds: number[], now: Date]>(
  'transitions.record_backfill',
  'update proc_state set backfill_at = $2::timestamptz, updated_at = $2::timestamptz where msg_id = any($1::bigint[]) and backfill_at is null',
);

/** Backfill confirmed (written, or found already marked) for these messages. */
export async function recordBackfill(db: Executor, ids: number[], now: Date): Promise<void> {
  if (ids.length === 0) return;
  await pgRun(db, recordBackfillStatement, ids, now);
}

const recordBackfillFailureStatement = pgStatement<[msgIds: number[], now: Date, ladderMs: number[]]>(
  'transitions.record_backfill_failure',
  `update proc_state set backfill_attempts = backfill_attempts + 1,
                         backfill_next_at = $2::timestamptz + ((($3::bigint[])[least(backfill_attempts + 1, cardinality($3::bigint[]))]) || ' milliseconds')::interval,
                         updated_at = $2::timestamptz
    where msg_id = any($1::bigint[])`,
);

/** A transient backfill failure: the next try after the step of `ladder` (ms) for the attempt; its last step repeats. */
export async function recordBackfillFailure(db: Executor, ids: number[], ladder: number[], now: Date): Promise<void> {
  if (ids.length === 0) return;
  await pgRun(db, recordBackfillFailureStatement, ids, now, ladder);
}

const abandonBackfillStatement = pgStatement<[msgIds: number[], reason: AbandonReason, now: Date]>(
  'transitions.abandon_backfill',
  `update proc_state set backfill_abandoned_at = $3::timestamptz, backfill_abandoned_reason = $2::text, updated_at = $3::timestamptz
    where msg_id = any($1::bigint[]) and backfill_at is null`,
);

/** Abandons the backfill of these messages (MISSING_ROW | TRANSIENT_DEADLINE); abandoned ≠ backfilled. */
export async function abandonBackfill(db: Executor, ids: number[], reason: AbandonReason, now: Date): Promise<void> {
  if (ids.length === 0) return;
  await pgRun(db, abandonBackfillStatement, ids, reason, now);
}

// ---- operator commands (lib/pipeline/operator.ts checks the selection first). Their filters are
// optional (`$n is null or …`): planned with their values on every run (PER_EXECUTION,
// lib/db/statement.ts), since a generic plan cannot drop the filters that are null and would read
// all of PROC_STATE even for ten IDs. They run rarely: planning costs nothing.

const resumeBackfillStatement = pgStatement<[msgIds: number[] | null, reason: AbandonReason | null, now: Date], { msg_id: number }>(
  'transitions.resume_backfill',
  `update proc_state set backfill_abandoned_at = null, backfill_abandoned_reason = null, backfill_attempts = 0, backfill_next_at = $3::timestamptz, updated_at = $3::timestamptz
    where backfill_abandoned_at is not null
      and reason_class is distinct from 'RAW_MISSING' -- never applied: never marked processed
      and ($1::bigint[] is null or msg_id = any($1::bigint[]))
      and ($2::text is null or backfill_abandoned_reason = $2::text)
   returning msg_id`,
  PER_EXECUTION,
);

/** Resumes abandoned backfills (never a RAW_MISSING message: never applied, never marked processed), optionally only these IDs and/or this reason. Returns the IDs resumed. */
export async function resumeBackfill(db: Executor, sel: { ids?: number[]; reason?: AbandonReason }, now: Date): Promise<number[]> {
  const rows = await pgRows(db, resumeBackfillStatement, sel.ids ?? null, sel.reason || null, now);
  return rows.map((r) => r.msg_id);
}

const replayStatement = pgStatement<[msgIds: number[] | null, force: boolean, state: 'FAILED' | 'DEAD' | null, reasonLike: string | null, now: Date], { msg_id: number }>(
  'transitions.replay',
  `update proc_state set state = 'PENDING', reason = null, reason_class = null, error_class = null, attempts = 0, failures_in_row = 0, failing_since = null,
                         next_attempt_at = null, terminal_at = null, backfill_next_at = null, backfill_at = null, backfill_attempts = 0,
                         backfill_abandoned_at = null, backfill_abandoned_reason = null, applied_state = null, applied_reason = null, applied_reason_class = null,
                         updated_at = $5::timestamptz
    where (state = 'FAILED'
           or (state = 'DEAD' and reason_class = 'EXHAUSTED')
           or ($2::boolean and state = 'DEAD' and reason_class in ('MALFORMED', 'PROTOCOL', 'RAW_MISSING')))
      and ($1::bigint[] is null or msg_id = any($1::bigint[]))
      and ($3::text is null or state = $3::text)
      and ($4::text is null or reason like $4::text)
   returning msg_id`,
  PER_EXECUTION,
);

/**
 * Replay: whitelisted FAILED/DEAD → PENDING, attempts and times reset, IDENTITY_KEY kept. The
 * whitelist, on REASON_CLASS: FAILED (any class), DEAD(EXHAUSTED); DEAD(MALFORMED | PROTOCOL |
 * RAW_MISSING) only with `force`. Optional selections: IDs, state, and `reasonPrefix` (the start
 * of the reason). Returns the IDs replayed.
 */
export async function replay(db: Executor, sel: { ids?: number[]; state?: 'FAILED' | 'DEAD'; reasonPrefix?: string; force?: boolean }, now: Date): Promise<number[]> {
  const rows = await pgRows(db, replayStatement, sel.ids ?? null, !!sel.force, sel.state || null, sel.reasonPrefix ? `${sel.reasonPrefix}%` : null, now);
  return rows.map((r) => r.msg_id);
}
