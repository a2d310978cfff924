// SQL of PROC_STATE (a message's processing state), PROC_ATTEMPT (its failed attempts) and
// INTAKE_CURSOR (intake's watermark and gaps), by what the statements do: intake's inserts, the
// pump's batch, business, terminal and failure statements, backfill, operator commands,
// gauges, retention. Statement conventions: lib/db/statement.ts. Wake-ups of graphile-worker
// tasks ride inside the statements that make them due (WAKE below). The console's reads of
// PROC_STATE are in lib/sql/console.ts, the message trace's in lib/sql/trace.ts, the pump's
// savepoints in lib/sql/tx.ts.
import type { ReasonClass, Service } from '../core/errors.ts';
import { PER_EXECUTION, pgStatement } from '../db/statement.ts';

// Statements whose filters are optional (`$n is null or …`: the operator selections below) are
// planned with their values on every run (PER_EXECUTION, lib/db/statement.ts): a generic plan
// cannot drop the filters that are null, so it reads all of PROC_STATE even for ten IDs. They run
// rarely (an operator's command): planning costs nothing.

export type TerminalState = 'SUCCEEDED' | 'SKIPPED' | 'DEAD';
export type OpenState = 'PENDING' | 'FAILED';
export type ProcStateName = OpenState | TerminalState;
export type AbandonReason = 'MISSING_ROW' | 'TRANSIENT_DEADLINE';

/** A whole PROC_STATE row. */
export interface ProcStateRow {
  msg_id: number;
  identity_key: string | null;
  state: ProcStateName;
  reason: string | null;
  reason_class: ReasonClass | null;
  error_class: string | null;
  kind: string | null;
  attempts: number;
  failures_in_row: number;
  failing_since: Date | null;
  next_attempt_at: Date | null;
  /** The inbox's received time, zone-less (timestamp): node-postgres reads it as a local Date. */
  received_at: Date | null;
  enqueued_at: Date;
  terminal_at: Date | null;
  backfill_next_at: Date | null;
  backfill_at: Date | null;
  backfill_attempts: number;
  backfill_abandoned_at: Date | null;
  backfill_abandoned_reason: AbandonReason | null;
  applied_state: TerminalState | null;
  applied_reason: string | null;
  applied_reason_class: ReasonClass | null;
  updated_at: Date;
}

/**
 * A scalar expression that wakes the graphile-worker tasks of the text[] parameter `param` inside
 * the statement it is part of (nothing when the list is empty): graphile-worker's public
 * `add_jobs`, one job per task with job_key = task name. A job of that key that is waiting is
 * replaced (run now); one that is running keeps running and a new one is queued behind it
 * (graphile-worker clears the running job's key) — a wake-up is never lost. Built at module load.
 */
const WAKE = (param: string) =>
  `case when cardinality(${param}::text[]) > 0 then (select count(*) from graphile_worker.add_jobs(
     array(select (t, '{}'::json, null, null, null, t, null, null)::graphile_worker.job_spec from unnest(${param}::text[]) as t))) end`;

// ---- intake: new messages in, and its cursor (lib/pipeline/intake.ts)

export interface IntakeCursorRow {
  watermark: number;
  full_scan_from: number | null;
  full_scan_at: Date | null;
  gap_id: number | null;
  gap_seen_at: Date | null;
  /** Open gaps, each with its first sighting (ISO time). */
  gaps: { lo: number; hi: number; seen: string }[];
  /** Gaps moved past (ISO time), rechecked for late rows. */
  passed_gaps: { lo: number; hi: number; at: string }[];
}

/** Inserts the messages not yet known (insert-if-absent); returns the IDs that were new. */
export const enqueue = pgStatement<[msgIds: number[], received: (string | null)[], now: Date], { msg_id: number }>(
  'proc_state.enqueue',
  `insert into proc_state (msg_id, received_at, enqueued_at, updated_at)
   select u.msg_id, u.received_at, $3::timestamptz, $3::timestamptz
     from unnest($1::bigint[], $2::timestamp[]) with ordinality as u(msg_id, received_at, ord)
    order by u.ord
   on conflict (msg_id) do nothing
   returning msg_id`,
);

/** The lowest unterminated (PENDING/FAILED) message (null: none): where intake's full scan starts. */
export const lowestOpen = pgStatement<[], { lo: number | null }>('proc_state.lowest_open', `select min(msg_id)::bigint as lo from proc_state where state in ('PENDING', 'FAILED')`);

/** Intake's cursor (its one row). */
export const intakeCursor = pgStatement<[], IntakeCursorRow>(
  'proc_state.intake_cursor',
  'select watermark, full_scan_from, full_scan_at, gap_id, gap_seen_at, gaps, passed_gaps from intake_cursor where id = 1',
);

/** Saves intake's cursor (gaps as JSON text). */
export const saveIntakeCursor = pgStatement<
  [watermark: number, fullScanFrom: number | null, fullScanAt: Date | null, gapId: number | null, gapSeenAt: Date | null, gapsJson: string, passedGapsJson: string]
>(
  'proc_state.save_intake_cursor',
  `update intake_cursor set watermark = $1::bigint, full_scan_from = $2::bigint, full_scan_at = $3::timestamptz, gap_id = $4::bigint,
                            gap_seen_at = $5::timestamptz, gaps = $6::jsonb, passed_gaps = $7::jsonb
    where id = 1`,
);

// ---- the pump's batch, chosen before its read step (docs/design.md "The pump's steps"): the open
// messages from the head on, and the owners of their identities

export interface HeadRow {
  msg_id: number;
  state: OpenState;
  identity_key: string | null;
  attempts: number;
  failures_in_row: number;
  failing_since: Date | null;
  next_attempt_at: Date | null;
  error_class: string | null;
  /** The service of its last INFRA failure when a probe can tell it answers again (lib/pipeline/failures.ts probeTarget). */
  error_service: Service | null;
  enqueued_at: Date;
  kind: string | null;
  reason: string | null;
  /** Set: the message's business transaction committed this outcome; it is not applied again. */
  applied_state: TerminalState | null;
  applied_reason: string | null;
  applied_reason_class: ReasonClass | null;
}

/** The open messages (PENDING/FAILED) from the head of queue on, at most $1, in MSG_ID order. */
export const heads = pgStatement<[limit: number], HeadRow>(
  'proc_state.heads',
  `select msg_id, state, identity_key, attempts, failures_in_row, failing_since, next_attempt_at, error_class, error_service, enqueued_at, kind, reason, applied_state, applied_reason,
          applied_reason_class
     from proc_state where state in ('PENDING', 'FAILED') order by msg_id limit $1`,
);

/** The messages that own these identity keys already (read at the start of a batch: its duplicates). */
export const identityOwners = pgStatement<[keys: string[]], { identity_key: string; msg_id: number }>(
  'proc_state.identity_owners',
  'select identity_key, msg_id from proc_state where identity_key = any($1::text[])',
);

// ---- the pump's business step: inside its one transaction

/**
 * INV-6: binds identities for a batch in one statement that never raises for a duplicate (so it
 * runs inside the business transaction). A key is bound to the first message of the batch that
 * carries it unless another message owns it already. Returns the owner of each message's key:
 * itself (bound), or another message (a duplicate). The unique constraint stays the guard.
 */
export const bindIdentities = pgStatement<[msgIds: number[], keys: string[], now: Date], { msg_id: number; owner: number; n: number }>(
  'proc_state.bind_identities',
  `with req as (select * from unnest($1::bigint[], $2::text[]) with ordinality as u(msg_id, key, ord)),
        firsts as (select distinct on (key) key, msg_id from req order by key, ord),
        owner as (select identity_key as key, msg_id from proc_state where identity_key = any($2::text[])),
        upd as (update proc_state p set identity_key = f.key, updated_at = $3::timestamptz
                from firsts f where p.msg_id = f.msg_id and p.identity_key is null and not exists (select 1 from owner o where o.key = f.key)
                returning p.msg_id)
   select r.msg_id, coalesce(o.msg_id, f.msg_id) as owner, (select count(*) from upd) as n
   from req r join firsts f on f.key = r.key left join owner o on o.key = r.key`,
);

/**
 * The end of a batch's business transaction, one statement: every message's outcome
 * (APPLIED_STATE: the business effect is known committed) and its identity binding, and the
 * batch's dispatcher wake-ups ($7). n = the messages that were open. The unique constraint on
 * IDENTITY_KEY stays the guard against a duplicate the batch did not see (the transaction then
 * rolls back and is retried).
 */
export const recordApplied = pgStatement<
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
  'proc_state.record_applied',
  `with a as (
     update proc_state p set applied_state = u.state, applied_reason = u.reason, applied_reason_class = u.reason_class, kind = coalesce(u.kind, p.kind),
                             identity_key = coalesce(u.identity_key, p.identity_key), updated_at = $6::timestamptz
     from unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $8::text[]) as u(msg_id, state, reason, kind, identity_key, reason_class)
     where p.msg_id = u.msg_id and p.state in ('PENDING', 'FAILED') returning 1)
   select (select count(*) from a)::int as n, ${WAKE('$7')} as woken`,
);

// ---- the pump's terminal step

/**
 * The pump's terminal step for a batch: each message's applied outcome becomes its terminal
 * state, with TERMINAL_AT and the backfill intent, and the tasks of $3 (backfill) are woken when
 * any message finished. Returns what was finished; a message no longer open (e.g. replayed
 * meanwhile) is left alone.
 */
export const markAppliedTerminal = pgStatement<
  [msgIds: number[], now: Date, wakeTasks: string[]],
  { msg_id: number; state: TerminalState; reason: string | null; kind: string | null; woken: number | null }
>(
  'proc_state.mark_applied_terminal',
  `with t as (
     update proc_state set state = applied_state, reason = applied_reason, reason_class = applied_reason_class, terminal_at = $2::timestamptz, backfill_next_at = $2::timestamptz,
                           next_attempt_at = null, updated_at = $2::timestamptz
     where msg_id = any($1::bigint[]) and state in ('PENDING', 'FAILED') and applied_state is not null
     returning msg_id, state, reason, kind)
   select t.*, ${WAKE('$3')} as woken from t order by msg_id`,
);

// ---- a failed attempt (lib/pipeline/transitions.ts recordFailure), and an outcome decided
// without a business transaction

/** The attempt counts of a message, its row locked (a failure is decided on the count as committed). */
export const lockForFailure = pgStatement<[msgId: number], { attempts: number; failures_in_row: number }>(
  'proc_state.lock_for_failure',
  'select attempts, failures_in_row from proc_state where msg_id = $1::bigint for update',
);

/** Records a failed attempt of a message (PROC_ATTEMPT). */
export const insertAttempt = pgStatement<[msgId: number, at: Date, errorClass: string, detail: string, nextState: string]>(
  'proc_state.insert_attempt',
  'insert into proc_attempt (msg_id, attempt_at, error_class, detail, next_state) values ($1::bigint, $2::timestamptz, $3::text, $4::text, $5::text)',
);

/** Counts a message's final attempt ($2: 1 or 0) and its error class, before it is made DEAD. */
export const countFinalAttempt = pgStatement<[msgId: number, add: number, errorClass: string]>(
  'proc_state.count_final_attempt',
  'update proc_state set attempts = attempts + $2::int, error_class = $3::text where msg_id = $1::bigint',
);

/** An open message → FAILED with its reason, class, service ($8, null: none to probe), counts ($4: attempt counted, 1 or 0) and next attempt time. */
export const markFailed = pgStatement<[msgId: number, reason: string, errorClass: string, add: number, now: Date, nextAttemptAt: Date, kind: string | null, service: Service | null]>(
  'proc_state.mark_failed',
  `update proc_state set state = 'FAILED', reason = $2::text, reason_class = $3::text, error_class = $3::text, error_service = $8::text, attempts = attempts + $4::int,
                         failures_in_row = failures_in_row + 1, failing_since = coalesce(failing_since, $5::timestamptz),
                         next_attempt_at = $6::timestamptz, updated_at = $5::timestamptz, kind = coalesce($7::text, kind)
    where msg_id = $1::bigint and state in ('PENDING', 'FAILED')`,
);

/**
 * One open message → terminal state + TERMINAL_AT + backfill intent + wake-up of the tasks of $6
 * (backfill), one statement: an outcome decided without a business transaction (e.g. a FAILED
 * head whose attempts are used up, or a failure that makes the message DEAD).
 */
export const markTerminal = pgStatement<
  [msgId: number, state: TerminalState, reason: string | null, now: Date, kind: string | null, wakeTasks: string[], reasonClass: ReasonClass | null],
  { msg_id: number; woken: number | null }
>(
  'proc_state.mark_terminal',
  `with t as (
     update proc_state set state = $2::text, reason = $3::text, reason_class = $7::text, terminal_at = $4::timestamptz, backfill_next_at = $4::timestamptz, next_attempt_at = null,
                           updated_at = $4::timestamptz, kind = coalesce($5::text, kind)
     where msg_id = $1::bigint and state in ('PENDING', 'FAILED') returning msg_id)
   select t.msg_id, ${WAKE('$6')} as woken from t`,
);

// ---- backfill (lib/pipeline/backfill.ts): what is owed, and its outcome

/**
 * Backfill candidates: terminal, neither backfilled nor abandoned, due ($1) or overdue (terminal
 * before $2); fewest attempts first, then inbox order; at most $3.
 */
export const backfillCandidates = pgStatement<[now: Date, overdueBefore: Date, limit: number], { msg_id: number; terminal_at: Date | null; state: ProcStateName; reason_class: ReasonClass | null }>(
  'proc_state.backfill_candidates',
  `select msg_id, terminal_at, state, reason_class from proc_state
    where state in ('SUCCEEDED', 'SKIPPED', 'DEAD') and backfill_at is null and backfill_abandoned_at is null
      and (backfill_next_at is null or backfill_next_at <= $1::timestamptz or terminal_at < $2::timestamptz)
    order by backfill_attempts, msg_id
    limit $3`,
);

/** When the next backfill is due (null: none owed); an owed one is due at the latest $1 ms after TERMINAL_AT. */
export const nextBackfillDue = pgStatement<[overdueMs: number], { due: Date | null }>(
  'proc_state.next_backfill_due',
  `select min(least(coalesce(backfill_next_at, terminal_at), terminal_at + $1::float8 * interval '1 millisecond')) as due from proc_state
    where state in ('SUCCEEDED', 'SKIPPED', 'DEAD') and backfill_at is null and backfill_abandoned_at is null`,
);

/** Rows owed a backfill, and how many of them are at or past $1 attempts (alert gauges). */
export const backfillGauges = pgStatement<[maxAttempts: number], { pending: number; over: number }>(
  'proc_state.backfill_gauges',
  `select count(*) as pending, count(msg_id) filter (where backfill_attempts >= $1::int) as over from proc_state
    where state in ('SUCCEEDED', 'SKIPPED', 'DEAD') and backfill_at is null and backfill_abandoned_at is null`,
);

/** Backfill confirmed (written or already marked) for these messages. */
export const recordBackfill = pgStatement<[msgIds: number[], now: Date]>(
  'proc_state.record_backfill',
  'update proc_state set backfill_at = $2::timestamptz, updated_at = $2::timestamptz where msg_id = any($1::bigint[]) and backfill_at is null',
);

/** Backfill transient failure: the next try after the ladder's step ($3, ms) for the attempt; its last step repeats. */
export const recordBackfillFailure = pgStatement<[msgIds: number[], now: Date, ladderMs: number[]]>(
  'proc_state.record_backfill_failure',
  `update proc_state set backfill_attempts = backfill_attempts + 1,
                         backfill_next_at = $2::timestamptz + ((($3::bigint[])[least(backfill_attempts + 1, cardinality($3::bigint[]))]) || ' milliseconds')::interval,
                         updated_at = $2::timestamptz
    where msg_id = any($1::bigint[])`,
);

/** Abandons the backfill of these messages ($2: MISSING_ROW | TRANSIENT_DEADLINE); abandoned ≠ backfilled. */
export const abandonBackfill = pgStatement<[msgIds: number[], reason: AbandonReason, now: Date]>(
  'proc_state.abandon_backfill',
  `update proc_state set backfill_abandoned_at = $3::timestamptz, backfill_abandoned_reason = $2::text, updated_at = $3::timestamptz
    where msg_id = any($1::bigint[]) and backfill_at is null`,
);

// ---- operator commands (lib/pipeline/operator.ts): what a selection matches, then the command

/** What a replay selection matches (IDs $1, state $2, reason LIKE pattern $3; null = any), in MSG_ID order. */
export const replaySelection = pgStatement<
  [msgIds: number[] | null, state: 'FAILED' | 'DEAD' | null, reasonLike: string | null],
  { msg_id: number; state: ProcStateName; reason: string | null; reason_class: ReasonClass | null }
>(
  'proc_state.replay_selection',
  `select msg_id, state, reason, reason_class from proc_state
    where ($1::bigint[] is null or msg_id = any($1::bigint[]))
      and ($2::text is null or state = $2::text)
      and ($3::text is null or reason like $3::text)
    order by msg_id`,
  PER_EXECUTION,
);

/**
 * Whitelisted FAILED/DEAD → PENDING, attempts and times reset, IDENTITY_KEY kept.
 * Whitelist (on REASON_CLASS): FAILED (any class), DEAD(EXHAUSTED); DEAD(MALFORMED|PROTOCOL|RAW_MISSING) only with force ($2).
 * Optional selections: IDs ($1), state ($3), reason LIKE pattern ($4).
 */
export const replay = pgStatement<[msgIds: number[] | null, force: boolean, state: 'FAILED' | 'DEAD' | null, reasonLike: string | null, now: Date], { msg_id: number }>(
  'proc_state.replay',
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

/** What a backfill-resume selection matches (IDs $1, abandon reason $2; null = any), in MSG_ID order. */
export const resumeSelection = pgStatement<
  [msgIds: number[] | null, reason: AbandonReason | null],
  { msg_id: number; state: ProcStateName; reason: string | null; reason_class: ReasonClass | null; backfill_abandoned_at: Date | null; backfill_abandoned_reason: AbandonReason | null }
>(
  'proc_state.resume_selection',
  `select msg_id, state, reason, reason_class, backfill_abandoned_at, backfill_abandoned_reason from proc_state
    where ($1::bigint[] is null or msg_id = any($1::bigint[]))
      and ($2::text is null or backfill_abandoned_reason = $2::text)
    order by msg_id`,
  PER_EXECUTION,
);

/** Resumes abandoned backfills, optionally only of these IDs ($1) and/or this reason ($2). */
export const resumeBackfill = pgStatement<[msgIds: number[] | null, reason: AbandonReason | null, now: Date], { msg_id: number }>(
  'proc_state.resume_backfill',
  `update proc_state set backfill_abandoned_at = null, backfill_abandoned_reason = null, backfill_attempts = 0, backfill_next_at = $3::timestamptz, updated_at = $3::timestamptz
    where backfill_abandoned_at is not null
      and reason_class is distinct from 'RAW_MISSING' -- never applied: never marked processed
      and ($1::bigint[] is null or msg_id = any($1::bigint[]))
      and ($2::text is null or backfill_abandoned_reason = $2::text)
   returning msg_id`,
  PER_EXECUTION,
);

// ---- gauges (lib/pipeline/gauges.ts)

/** The open messages' count and the head of queue's times, state and class (head gauges); one row. */
export const headGauges = pgStatement<[], { n: number; enqueued_at: Date | null; state: string | null; error_class: string | null; failing_since: Date | null }>(
  'proc_state.head_gauges',
  `select (select count(*)::int from proc_state where state in ('PENDING', 'FAILED')) as n, h.enqueued_at, h.state, h.error_class, h.failing_since
   from (select 1) one left join lateral (select enqueued_at, state, error_class, failing_since from proc_state
                                          where state in ('PENDING', 'FAILED') order by msg_id limit 1) h on true`,
);

// ---- retention (lib/lifecycle/): the PROC_STATE purge, orphan attempts, the inbox purge's
// candidates, and the open messages whose flights the history purge protects

/**
 * Purge candidates: messages after $1 in a state of $2 last updated before $3, backfilled unless
 * the instance is read-only ($4, which never backfills); at most $5, in MSG_ID order.
 */
export const purgeCandidates = pgStatement<[after: number, states: readonly string[], cutoff: Date, readOnly: boolean, limit: number], { msg_id: number }>(
  'proc_state.purge_candidates',
  `select msg_id from proc_state
    where msg_id > $1::bigint and state = any($2::text[]) and updated_at < $3::timestamptz and ($4::boolean or backfill_at is not null)
    order by msg_id limit $5`,
);

/**
 * Deletes these messages ($1) with every purge condition repeated (state $2, updated before $3,
 * backfilled unless read-only $4): a row a replay has just reset is skipped, never lost.
 */
export const purge = pgStatement<[msgIds: number[], states: readonly string[], cutoff: Date, readOnly: boolean]>(
  'proc_state.purge',
  `delete from proc_state
    where msg_id = any($1::bigint[]) and state = any($2::text[]) and updated_at < $3::timestamptz and ($4::boolean or backfill_at is not null)`,
);

/** Deletes up to $1 PROC_ATTEMPT rows whose message's PROC_STATE row is gone. */
export const purgeOrphanAttempts = pgStatement<[batch: number]>(
  'proc_state.purge_orphan_attempts',
  `delete from proc_attempt where ctid = any(array(
     select a.ctid from proc_attempt a where not exists (select 1 from proc_state p where p.msg_id = a.msg_id) limit $1))`,
);

/**
 * Inbox retention candidates: messages after $1 in a terminal state of $2 whose backfill
 * mark (BACKFILL_AT) was written before $3, ascending, at most $4.
 */
export const inboxPurgeCandidates = pgStatement<[after: number, terminal: readonly string[], cutoff: Date, limit: number], { msg_id: number }>(
  'proc_state.inbox_purge_candidates',
  `select msg_id from proc_state
    where msg_id > $1::bigint and state = any($2::text[]) and backfill_at is not null and backfill_at < $3::timestamptz
    order by msg_id limit $4::int`,
);

/**
 * The open messages (PENDING/FAILED). The states are written in the text, not a parameter: the
 * generic plan of `state = any($1)` cannot know the states are the rare open ones and reads all
 * of PROC_STATE; `state in ('PENDING', 'FAILED')` reads the open-message index (proc_state_open).
 */
export const openIds = pgStatement<[], { msg_id: number }>('proc_state.open_ids', "select msg_id from proc_state where state in ('PENDING', 'FAILED')");

// ---- the flight timeline (lib/flight/timeline.ts)

/** Kind, state and reception time (the zone-less local DATETIME as text) of the messages $1. */
export const timelineMessages = pgStatement<[msgIds: number[]], { msg_id: number; kind: string | null; state: string; received: string | null }>(
  'proc_state.timeline_messages',
  'select msg_id, kind, state, received_at::text as received from proc_state where msg_id = any($1::bigint[])',
);
