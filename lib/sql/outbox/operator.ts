// SQL of MSG_EVENT (the outbox of the three dispatchers): the operator's actions on DEAD rows and
// their list, the retention of SENT rows, the metrics' counts. Statement conventions: lib/db/statement.ts.
import { type Executor, PER_EXECUTION, pgOne, pgRows, pgRun, pgStatement, type RowOf } from '../../db/statement.ts';
import type { OutboxTarget } from './rounds.ts';

// ---- lib/dispatch/outbox.ts (the operator's actions, scripts/dispatch-replay.ts, scripts/dispatch-skip.ts)

// The DEAD selector of the operator actions: event ids $1 (null: any), FLID $2 (null: any),
// target $3 (null: any); all null selects every DEAD row. Optional filters: planned with their
// values on every run (PER_EXECUTION, lib/db/statement.ts), as a generic plan cannot drop them.

const replayDeadStatement = pgStatement<[eventIds: number[] | null, flid: string | null, target: OutboxTarget | null], { event_id: number; target: OutboxTarget }>(
  'outbox.replay_dead',
  `update msg_event set state = 'PENDING', attempts = 0, next_attempt_at = null
   where state = 'DEAD' and ($1::bigint[] is null or event_id = any($1::bigint[]))
     and ($2::text is null or flid = $2::text) and ($3::text is null or target = $3::text)
   returning event_id, target`,
  PER_EXECUTION,
);
/** DEAD → PENDING with attempts 0, due now (sent again in EVENT_ID order); last_error is kept. */
export function replayDead(db: Executor, eventIds: number[] | null, flid: string | null, target: OutboxTarget | null): Promise<RowOf<typeof replayDeadStatement>[]> {
  return pgRows(db, replayDeadStatement, eventIds, flid, target);
}

const skipDeadStatement = pgStatement<[eventIds: number[] | null, flid: string | null, target: OutboxTarget | null], { event_id: number; target: OutboxTarget }>(
  'outbox.skip_dead',
  `update msg_event set state = 'SKIPPED', next_attempt_at = null
   where state = 'DEAD' and ($1::bigint[] is null or event_id = any($1::bigint[]))
     and ($2::text is null or flid = $2::text) and ($3::text is null or target = $3::text)
   returning event_id, target`,
  PER_EXECUTION,
);
/** DEAD → SKIPPED (kept, visible; it no longer holds its FLID's later events). */
export function skipDead(db: Executor, eventIds: number[] | null, flid: string | null, target: OutboxTarget | null): Promise<RowOf<typeof skipDeadStatement>[]> {
  return pgRows(db, skipDeadStatement, eventIds, flid, target);
}

const eventSelectionStatement = pgStatement<[eventIds: number[]], { event_id: number; target: OutboxTarget; flid: string; state: string; held_by: number | null }>(
  'outbox.event_selection',
  `select e.event_id, e.target, e.flid, e.state,
     (select min(d.event_id) from msg_event d where d.flid = e.flid and d.target = e.target and d.state = 'DEAD' and d.event_id < e.event_id) as held_by
   from msg_event e where e.event_id = any($1::bigint[]) order by e.event_id`,
);
/**
 * What an id selection of dispatch-replay / dispatch-skip names ($1): each event's state, and for
 * one waiting behind a dead letter of its flight, the first such DEAD event (held_by).
 */
export function selectEvents(db: Executor, eventIds: number[]): Promise<RowOf<typeof eventSelectionStatement>[]> {
  return pgRows(db, eventSelectionStatement, eventIds);
}

/** A dead letter with the number of PENDING msg events of its FLID waiting behind it. */
export interface DeadLetterRow {
  event_id: number;
  target: OutboxTarget;
  flid: string;
  state_version: number;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  payload: unknown;
  /** PENDING events of the same FLID (msg) waiting behind this one. */
  held: number;
}

const listDeadStatement = pgStatement<[target: OutboxTarget | null, limit: number], DeadLetterRow>(
  'outbox.list_dead',
  `select d.event_id, d.target, d.flid, d.state_version, d.attempts, d.last_error, d.created_at, d.payload,
     (select count(*)::int from msg_event h where h.flid = d.flid and h.target = 'msg' and d.target = 'msg'
        and h.event_id > d.event_id and h.state = 'PENDING') as held
   from msg_event d
   where d.state = 'DEAD' and ($1::text is null or d.target = $1::text)
   order by d.event_id
   limit $2::bigint`,
  PER_EXECUTION,
);
/** DEAD rows of target $1 (null: both) in EVENT_ID order, at most $2. */
export function listDead(db: Executor, target: OutboxTarget | null, limit: number): Promise<DeadLetterRow[]> {
  return pgRows(db, listDeadStatement, target, limit);
}

const deleteSentBeforeStatement = pgStatement<[cutoff: Date, batch: number]>(
  'outbox.delete_sent_before',
  `delete from msg_event where event_id in (
     select event_id from msg_event where state = 'SENT' and sent_at < $1::timestamptz
     order by sent_at limit $2::bigint for update skip locked)`,
);
/** Deletes up to $2 SENT rows sent before $1, oldest first, skipping locked rows. */
export function deleteSentBefore(db: Executor, cutoff: Date, batch: number): Promise<number> {
  return pgRun(db, deleteSentBeforeStatement, cutoff, batch);
}

// ---- lib/dispatch/metrics.ts

const countByStateStatement = pgStatement<[targets: OutboxTarget[]], { target: OutboxTarget; state: string; n: number }>(
  'outbox.count_by_state',
  `select target, state, count(*)::int as n from msg_event
   where target = any($1::text[]) and state in ('PENDING', 'DEAD')
   group by target, state`,
);
/** Row counts by target and state (PENDING, DEAD) for the targets $1 (PENDING uses the partial indexes). */
export function countByState(db: Executor, targets: OutboxTarget[]): Promise<RowOf<typeof countByStateStatement>[]> {
  return pgRows(db, countByStateStatement, targets);
}

const oldestPendingAgeStatement = pgStatement<[target: OutboxTarget], { age: number | null }>(
  'outbox.oldest_pending_age',
  `select extract(epoch from now() - created_at)::float8 as age from msg_event
   where target = $1::text and state = 'PENDING' order by event_id limit 1`,
);
/** Age in seconds of the oldest PENDING event of target $1 (no row: none pending). */
export function readOldestPendingAge(db: Executor, target: OutboxTarget): Promise<RowOf<typeof oldestPendingAgeStatement> | undefined> {
  return pgOne(db, oldestPendingAgeStatement, target);
}
