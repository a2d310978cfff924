// Reads of PROC_STATE (a message's processing state) and the purge of it and of PROC_ATTEMPT
// (its failed attempts): the open messages, what backfill owes, operator selections, gauges,
// retention. Every statement that moves a message from one state to another is in
// lib/sql/transitions.ts, beside the function that runs it; intake's cursor is in
// lib/sql/intake-cursor.ts, the console's reads in lib/sql/console.ts, the message trace's in
// lib/sql/trace.ts. Statement conventions: lib/db/statement.ts.
import type { ReasonClass, Service } from '../core/errors.ts';
import { type Executor, PER_EXECUTION, pgOne, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

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
  /** The message's W3C trace context, `traceparent[ tracestate]` (null: taken while tracing was off). */
  trace_context: string | null;
}

// ---- the open messages (PENDING/FAILED)

const knownStatement = pgStatement<[msgIds: number[]], { msg_id: number }>('proc_state.known', 'select msg_id from proc_state where msg_id = any($1::bigint[])');
/** Which of the messages $1 are known already (intake's rows below the watermark: no trace is started for them). */
export function listKnown(db: Executor, msgIds: number[]): Promise<RowOf<typeof knownStatement>[]> {
  return pgRows(db, knownStatement, msgIds);
}

const lowestOpenStatement = pgStatement<[], { lo: number | null }>('proc_state.lowest_open', `select min(msg_id)::bigint as lo from proc_state where state in ('PENDING', 'FAILED')`);
/** The lowest unterminated (PENDING/FAILED) message (null: none): where intake's full scan starts. */
export function readLowestOpen(db: Executor): Promise<RowOf<typeof lowestOpenStatement> | undefined> {
  return pgOne(db, lowestOpenStatement);
}

// The pump's batch, chosen before its read step (docs/design.md "The pump's steps"): the open
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
  /** Its trace context (lib/runtime/tracing.ts), null while tracing was off. */
  trace_context: string | null;
}

const headsStatement = pgStatement<[limit: number], HeadRow>(
  'proc_state.heads',
  `select msg_id, state, identity_key, attempts, failures_in_row, failing_since, next_attempt_at, error_class, error_service, enqueued_at, kind, reason, applied_state, applied_reason,
          applied_reason_class, trace_context
     from proc_state where state in ('PENDING', 'FAILED') order by msg_id limit $1`,
);
/** The open messages (PENDING/FAILED) from the head of queue on, at most $1, in MSG_ID order. */
export function readHeads(db: Executor, limit: number): Promise<HeadRow[]> {
  return pgRows(db, headsStatement, limit);
}

const identityOwnersStatement = pgStatement<[keys: string[]], { identity_key: string; msg_id: number }>(
  'proc_state.identity_owners',
  'select identity_key, msg_id from proc_state where identity_key = any($1::text[])',
);
/** The messages that own these identity keys already (read at the start of a batch: its duplicates). */
export function readIdentityOwners(db: Executor, keys: string[]): Promise<RowOf<typeof identityOwnersStatement>[]> {
  return pgRows(db, identityOwnersStatement, keys);
}

// ---- what backfill owes (the inbox's processed time)

const backfillCandidatesStatement = pgStatement<
  [now: Date, overdueBefore: Date, limit: number],
  { msg_id: number; terminal_at: Date | null; state: ProcStateName; reason_class: ReasonClass | null; trace_context: string | null }
>(
  'proc_state.backfill_candidates',
  `select msg_id, terminal_at, state, reason_class, trace_context from proc_state
    where state in ('SUCCEEDED', 'SKIPPED', 'DEAD') and backfill_at is null and backfill_abandoned_at is null
      and (backfill_next_at is null or backfill_next_at <= $1::timestamptz or terminal_at < $2::timestamptz)
    order by backfill_attempts, msg_id
    limit $3`,
);
/**
 * Backfill candidates: terminal, neither backfilled nor abandoned, due ($1) or overdue (terminal
 * before $2); fewest attempts first, then inbox order; at most $3.
 */
export function listBackfillCandidates(db: Executor, now: Date, overdueBefore: Date, limit: number): Promise<RowOf<typeof backfillCandidatesStatement>[]> {
  return pgRows(db, backfillCandidatesStatement, now, overdueBefore, limit);
}

const nextBackfillDueStatement = pgStatement<[overdueMs: number], { due: Date | null }>(
  'proc_state.next_backfill_due',
  `select min(least(coalesce(backfill_next_at, terminal_at), terminal_at + $1::float8 * interval '1 millisecond')) as due from proc_state
    where state in ('SUCCEEDED', 'SKIPPED', 'DEAD') and backfill_at is null and backfill_abandoned_at is null`,
);
/** When the next backfill is due (null: none owed); an owed one is due at the latest $1 ms after TERMINAL_AT. */
export function readNextBackfillDue(db: Executor, overdueMs: number): Promise<RowOf<typeof nextBackfillDueStatement> | undefined> {
  return pgOne(db, nextBackfillDueStatement, overdueMs);
}

const backfillGaugesStatement = pgStatement<[maxAttempts: number], { pending: number; over: number }>(
  'proc_state.backfill_gauges',
  `select count(*) as pending, count(msg_id) filter (where backfill_attempts >= $1::int) as over from proc_state
    where state in ('SUCCEEDED', 'SKIPPED', 'DEAD') and backfill_at is null and backfill_abandoned_at is null`,
);
/** Rows owed a backfill, and how many of them are at or past $1 attempts (alert gauges). */
export function readBackfillGauges(db: Executor, maxAttempts: number): Promise<RowOf<typeof backfillGaugesStatement> | undefined> {
  return pgOne(db, backfillGaugesStatement, maxAttempts);
}

// ---- what an operator's selection matches (replay, backfill-resume: lib/sql/transitions.ts)

const replaySelectionStatement = pgStatement<
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
/** What a replay selection matches (IDs $1, state $2, reason LIKE pattern $3; null = any), in MSG_ID order. */
export function selectReplay(db: Executor, msgIds: number[] | null, state: 'FAILED' | 'DEAD' | null, reasonLike: string | null): Promise<RowOf<typeof replaySelectionStatement>[]> {
  return pgRows(db, replaySelectionStatement, msgIds, state, reasonLike);
}

const resumeSelectionStatement = pgStatement<
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
/** What a backfill-resume selection matches (IDs $1, abandon reason $2; null = any), in MSG_ID order. */
export function selectResume(db: Executor, msgIds: number[] | null, reason: AbandonReason | null): Promise<RowOf<typeof resumeSelectionStatement>[]> {
  return pgRows(db, resumeSelectionStatement, msgIds, reason);
}

// ---- gauges

const headGaugesStatement = pgStatement<[], { n: number; enqueued_at: Date | null; state: string | null; error_class: string | null; failing_since: Date | null }>(
  'proc_state.head_gauges',
  `select (select count(*)::int from proc_state where state in ('PENDING', 'FAILED')) as n, h.enqueued_at, h.state, h.error_class, h.failing_since
   from (select 1) one left join lateral (select enqueued_at, state, error_class, failing_since from proc_state
                                          where state in ('PENDING', 'FAILED') order by msg_id limit 1) h on true`,
);
/** The open messages' count and the head of queue's times, state and class (head gauges); one row. */
export function readHeadGauges(db: Executor): Promise<RowOf<typeof headGaugesStatement> | undefined> {
  return pgOne(db, headGaugesStatement);
}

// ---- retention: the PROC_STATE purge, orphan attempts, the inbox purge's
// candidates, and the open messages whose flights the history purge protects

const purgeCandidatesStatement = pgStatement<[after: number, states: readonly string[], cutoff: Date, readOnly: boolean, limit: number], { msg_id: number }>(
  'proc_state.purge_candidates',
  `select msg_id from proc_state
    where msg_id > $1::bigint and state = any($2::text[]) and updated_at < $3::timestamptz and ($4::boolean or backfill_at is not null)
    order by msg_id limit $5`,
);
/**
 * Purge candidates: messages after $1 in a state of $2 last updated before $3, backfilled unless
 * the instance is read-only ($4, which never backfills); at most $5, in MSG_ID order.
 */
export function listPurgeCandidates(db: Executor, after: number, states: readonly string[], cutoff: Date, readOnly: boolean, limit: number): Promise<RowOf<typeof purgeCandidatesStatement>[]> {
  return pgRows(db, purgeCandidatesStatement, after, states, cutoff, readOnly, limit);
}

const purgeStatement = pgStatement<[msgIds: number[], states: readonly string[], cutoff: Date, readOnly: boolean]>(
  'proc_state.purge',
  `delete from proc_state
    where msg_id = any($1::bigint[]) and state = any($2::text[]) and updated_at < $3::timestamptz and ($4::boolean or backfill_at is not null)`,
);
/**
 * Deletes these messages ($1) with every purge condition repeated (state $2, updated before $3,
 * backfilled unless read-only $4): a row a replay has just reset is skipped, never lost.
 */
export function purge(db: Executor, msgIds: number[], states: readonly string[], cutoff: Date, readOnly: boolean): Promise<number> {
  return pgRun(db, purgeStatement, msgIds, states, cutoff, readOnly);
}

const purgeOrphanAttemptsStatement = pgStatement<[batch: number]>(
  'proc_state.purge_orphan_attempts',
  `delete from proc_attempt where ctid = any(array(
     select a.ctid from proc_attempt a where not exists (select 1 from proc_state p where p.msg_id = a.msg_id) limit $1))`,
);
/** Deletes up to $1 PROC_ATTEMPT rows whose message's PROC_STATE row is gone. */
export function purgeOrphanAttempts(db: Executor, batch: number): Promise<number> {
  return pgRun(db, purgeOrphanAttemptsStatement, batch);
}

const inboxPurgeCandidatesStatement = pgStatement<[after: number, terminal: readonly string[], cutoff: Date, limit: number], { msg_id: number }>(
  'proc_state.inbox_purge_candidates',
  `select msg_id from proc_state
    where msg_id > $1::bigint and state = any($2::text[]) and backfill_at is not null and backfill_at < $3::timestamptz
    order by msg_id limit $4::int`,
);
/**
 * Inbox retention candidates: messages after $1 in a terminal state of $2 whose backfill
 * mark (BACKFILL_AT) was written before $3, ascending, at most $4.
 */
export function listInboxPurgeCandidates(db: Executor, after: number, terminal: readonly string[], cutoff: Date, limit: number): Promise<RowOf<typeof inboxPurgeCandidatesStatement>[]> {
  return pgRows(db, inboxPurgeCandidatesStatement, after, terminal, cutoff, limit);
}

const openIdsStatement = pgStatement<[], { msg_id: number }>('proc_state.open_ids', "select msg_id from proc_state where state in ('PENDING', 'FAILED')");
/**
 * The open messages (PENDING/FAILED). The states are written in the text, not a parameter: the
 * generic plan of `state = any($1)` cannot know the states are the rare open ones and reads all
 * of PROC_STATE; `state in ('PENDING', 'FAILED')` reads the open-message index (proc_state_open).
 */
export function listOpenIds(db: Executor): Promise<RowOf<typeof openIdsStatement>[]> {
  return pgRows(db, openIdsStatement);
}

// ---- the messages of a flight's timeline

const timelineMessagesStatement = pgStatement<[msgIds: number[]], { msg_id: number; kind: string | null; state: string; received: string | null }>(
  'proc_state.timeline_messages',
  'select msg_id, kind, state, received_at::text as received from proc_state where msg_id = any($1::bigint[])',
);
/** Kind, state and reception time (the zone-less local DATETIME as text) of the messages $1. */
export function readTimelineMessages(db: Executor, msgIds: number[]): Promise<RowOf<typeof timelineMessagesStatement>[]> {
  return pgRows(db, timelineMessagesStatement, msgIds);
}
