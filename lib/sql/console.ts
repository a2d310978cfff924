// SQL of the operator's read views: the ops console's summary (lib/api/console.ts), its counts,
// pages and last-hour series (lib/api/console-data.ts), and the ops API's message list
// (GET /ops/messages, lib/api/ops-routes.ts). Read-only, over PROC_STATE, MSG_EVENT and REQ_TRACK.
// Statement conventions: lib/db/statement.ts. The message trace's reads: lib/sql/trace.ts.
import type { ReasonClass } from '../core/errors.ts';
import { type Executor, PER_EXECUTION, pgOne, pgRows, pgStatement, type RowOf } from '../db/statement.ts';
import type { AbandonReason, OpenState, ProcStateName, ProcStateRow, TerminalState } from './proc-state.ts';
import type { OutboxTarget } from './outbox/rounds.ts';
import type { RequestKind } from './requests.ts';

// ---- the summary (one repeatable-read transaction, lib/api/console.ts)

const headStatement = pgStatement<
  [],
  {
    msg_id: number;
    state: OpenState;
    kind: string | null;
    reason: string | null;
    attempts: number;
    failures_in_row: number;
    failing_since: Date | null;
    next_attempt_at: Date | null;
    enqueued_at: Date;
  }
>(
  'console.head',
  `select msg_id, state, kind, reason, attempts, failures_in_row, failing_since, next_attempt_at, enqueued_at
     from proc_state where state in ('PENDING','FAILED') order by msg_id limit 1`,
);
/** The head of queue: the open message (PENDING/FAILED) with the smallest MSG_ID. */
export function readHead(db: Executor): Promise<RowOf<typeof headStatement> | undefined> {
  return pgOne(db, headStatement);
}

const countsByStateStatement = pgStatement<[], { state: ProcStateName; n: number }>('console.counts_by_state', 'select state, count(*)::int n from proc_state group by state order by state');
/** Messages per state. */
export function countByState(db: Executor): Promise<RowOf<typeof countsByStateStatement>[]> {
  return pgRows(db, countsByStateStatement);
}

const recentProblemsStatement = pgStatement<[limit: number], { msg_id: number; state: TerminalState; kind: string | null; reason: string | null; terminal_at: Date | null }>(
  'console.recent_problems',
  `select msg_id, state, kind, reason, terminal_at from proc_state
    where state in ('DEAD','SKIPPED') order by msg_id desc limit $1`,
);
/** The latest $1 DEAD/SKIPPED messages, newest first. */
export function listRecentProblems(db: Executor, limit: number): Promise<RowOf<typeof recentProblemsStatement>[]> {
  return pgRows(db, recentProblemsStatement, limit);
}

const abandonedBackfillsStatement = pgStatement<
  [limit: number],
  {
    msg_id: number;
    kind: string | null;
    state: ProcStateName;
    reason: string | null;
    /** Never applied (REASON_CLASS RAW_MISSING): the console says how to recover it. */
    never_applied: boolean;
    backfill_abandoned_reason: AbandonReason | null;
    backfill_abandoned_at: Date | null;
    backfill_attempts: number;
    terminal_at: Date | null;
  }
>(
  'console.abandoned_backfills',
  `select msg_id, kind, state, reason, (state = 'DEAD' and reason_class is not distinct from 'RAW_MISSING') as never_applied,
          backfill_abandoned_reason, backfill_abandoned_at, backfill_attempts, terminal_at from proc_state
    where backfill_abandoned_at is not null order by msg_id desc limit $1`,
);
/** The latest $1 abandoned backfills, newest first. */
export function listAbandonedBackfills(db: Executor, limit: number): Promise<RowOf<typeof abandonedBackfillsStatement>[]> {
  return pgRows(db, abandonedBackfillsStatement, limit);
}

const backfillPendingStatement = pgStatement<[], { n: number }>(
  'console.backfill_pending',
  `select count(*)::int n from proc_state where state in ('SUCCEEDED','SKIPPED','DEAD') and backfill_at is null and backfill_abandoned_at is null`,
);
/** Messages owed a backfill: terminal, neither backfilled nor abandoned. */
export function readBackfillPending(db: Executor): Promise<RowOf<typeof backfillPendingStatement> | undefined> {
  return pgOne(db, backfillPendingStatement);
}

const deadLettersStatement = pgStatement<
  [limit: number],
  { event_id: number; target: OutboxTarget; flid: string; state_version: number; attempts: number; last_error: string | null; created_at: Date; held: number }
>(
  'console.dead_letters',
  `select d.event_id, d.target, d.flid, d.state_version, d.attempts, d.last_error, d.created_at,
     (select count(*)::int from msg_event h where h.flid = d.flid and h.target = 'msg' and d.target = 'msg'
        and h.event_id > d.event_id and h.state = 'PENDING') as held
     from msg_event d where d.state = 'DEAD' order by d.event_id limit $1`,
);
/** The first $1 dead-lettered outbox events in event order, each with the msg events of its flight it holds back. */
export function listDeadLetters(db: Executor, limit: number): Promise<RowOf<typeof deadLettersStatement>[]> {
  return pgRows(db, deadLettersStatement, limit);
}

const outboxPendingByTargetStatement = pgStatement<[], { target: string; n: number }>(
  'console.outbox_pending_by_target',
  `select target, count(*)::int n from msg_event where state = 'PENDING' group by target order by target`,
);
/** PENDING outbox events per target. */
export function countOutboxPendingByTarget(db: Executor): Promise<RowOf<typeof outboxPendingByTargetStatement>[]> {
  return pgRows(db, outboxPendingByTargetStatement);
}

const openRequestsStatement = pgStatement<[], { id: number; kind: RequestKind; rtype: string | null; operation_day: string | null; state: 'PENDING' | 'SENT'; created_at: Date; sent_at: Date | null }>(
  'console.open_requests',
  `select id, kind, rtype, operation_day::text as operation_day, state, created_at, sent_at from req_track
    where state in ('PENDING','SENT') order by id`,
);
/** The open (PENDING/SENT) requests to the AODB, oldest first. */
export function listOpenRequests(db: Executor): Promise<RowOf<typeof openRequestsStatement>[]> {
  return pgRows(db, openRequestsStatement);
}

// ---- counts, pages and the last hour (lib/api/console-data.ts)

/**
 * The reason class of a PROC_STATE reason: the text before the first ':' (e.g. "EXHAUSTED(INTERNAL)",
 * "PROTOCOL"), at most 60 characters; '' = no reason. A never-read message (REASON_CLASS RAW_MISSING:
 * its inbox row was gone) is a class of its own, 'raw-missing', not a wrong message.
 */
const REASON_CLASS = `case when reason_class = 'RAW_MISSING' then 'raw-missing' else left(split_part(coalesce(reason, ''), ':', 1), 60) end`;

const countsByReasonStatement = pgStatement<[], { state: string; reason: string; n: number }>(
  'console.counts_by_reason',
  `select state, ${REASON_CLASS} as reason, count(*)::int as n from proc_state group by 1, 2 order by 1, 3 desc, 2`,
);
/** Messages per state and reason class, the largest groups of a state first. */
export function countByReason(db: Executor): Promise<RowOf<typeof countsByReasonStatement>[]> {
  return pgRows(db, countsByReasonStatement);
}

const listPageStatement = pgStatement<
  [state: ProcStateName, reasonClass: string | null, before: number | null, limit: number],
  {
    msg_id: number;
    state: ProcStateName;
    kind: string | null;
    reason: string | null;
    reason_class: ReasonClass | null;
    error_class: string | null;
    attempts: number;
    enqueued_at: Date;
    terminal_at: Date | null;
    backfill_at: Date | null;
    backfill_abandoned_reason: AbandonReason | null;
  }
>(
  'console.list_page',
  `select msg_id, state, kind, reason, reason_class, error_class, attempts, enqueued_at, terminal_at, backfill_at, backfill_abandoned_reason
     from proc_state
    where state = $1::text
      and ($2::text is null or ${REASON_CLASS} = $2::text)
      and ($3::bigint is null or msg_id < $3::bigint)
    order by msg_id desc
    limit $4`,
  PER_EXECUTION,
);
/**
 * A page of one state's messages ($1), of one reason class ($2; null = any), below MSG_ID $3
 * (null = from the newest), newest first, at most $4. PER_EXECUTION: its filters are optional (a
 * generic plan reads all of PROC_STATE for a page below a cursor, docs/decisions.md).
 */
export function listPage(db: Executor, state: ProcStateName, reasonClass: string | null, before: number | null, limit: number): Promise<RowOf<typeof listPageStatement>[]> {
  return pgRows(db, listPageStatement, state, reasonClass, before, limit);
}

const lastHourMessagesStatement = pgStatement<[timeZone: string, from: Date], { state: string; enqueued_at: Date; terminal_at: Date | null; received: Date | null }>(
  'console.last_hour_messages',
  `select state, enqueued_at, terminal_at, (received_at at time zone $1::text) as received
     from proc_state
    where state in ('PENDING', 'FAILED') or (updated_at >= $2::timestamptz and state in ('SUCCEEDED', 'SKIPPED', 'DEAD'))`,
);
/** PROC_STATE rows open now or terminal and touched since $2, with the received time as an instant in zone $1 (the last-hour series). */
export function readLastHourMessages(db: Executor, timeZone: string, from: Date): Promise<RowOf<typeof lastHourMessagesStatement>[]> {
  return pgRows(db, lastHourMessagesStatement, timeZone, from);
}

const lastHourEventsStatement = pgStatement<[from: Date], { state: string; created_at: Date; sent_at: Date | null }>(
  'console.last_hour_events',
  `select state, created_at, sent_at from msg_event where state = 'PENDING'
   union all
   select state, created_at, sent_at from msg_event where state = 'SENT' and sent_at >= $1::timestamptz and target in ('msg', 'schd')`,
);
/** Outbox events PENDING now or sent since $1 (the last-hour series). */
export function readLastHourEvents(db: Executor, from: Date): Promise<RowOf<typeof lastHourEventsStatement>[]> {
  return pgRows(db, lastHourEventsStatement, from);
}

// ---- the ops API's message list (GET /ops/messages, lib/api/ops-routes.ts)

const recentMessagesStatement = pgStatement<[state: ProcStateName | null, limit: number, timeZone: string], Omit<ProcStateRow, 'received_at'> & { received_at: Date | null }>(
  'console.recent_messages',
  `select msg_id, identity_key, state, reason, error_class, kind, attempts, failures_in_row, failing_since, next_attempt_at,
          (received_at at time zone $3::text) as received_at, enqueued_at, terminal_at, backfill_next_at, backfill_at, backfill_attempts,
          backfill_abandoned_at, backfill_abandoned_reason, updated_at, applied_state, applied_reason
     from proc_state where ($1::text is null or state = $1::text) order by msg_id desc limit $2`,
  PER_EXECUTION,
);
/**
 * The latest $2 PROC_STATE rows of state $1 (null = any), newest first. The inbox's received
 * time is stored zone-less (airport wall time): it is returned as an instant read in the
 * airport's zone $3, so that its JSON (UTC, Z) is true like every other time of the API.
 * PER_EXECUTION: the state filter is optional.
 */
export function listRecentMessages(db: Executor, state: ProcStateName | null, limit: number, timeZone: string): Promise<(Omit<ProcStateRow, 'received_at'> & { received_at: Date | null })[]> {
  return pgRows(db, recentMessagesStatement, state, limit, timeZone);
}
