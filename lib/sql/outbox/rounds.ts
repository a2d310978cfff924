// SQL of MSG_EVENT (the outbox of the three dispatchers: msg, schd, state), the dispatchers' rounds:
// a batch frozen or read, then marked SENT or FAILED. Statement conventions: lib/db/statement.ts.
import { type Executor, pgOne, pgRows, pgRun, pgStatement, type RowOf } from '../../db/statement.ts';

/** The outbox's targets (MSG_EVENT.TARGET). */
export type OutboxTarget = 'msg' | 'schd' | 'state';

// ---- lib/dispatch/outbox.ts
// Updates lock with SKIP LOCKED: a row the pump is rewriting right now (schd upsert) is left
// alone (it stays PENDING and goes out again) and the dispatcher never waits on the pump, so
// the two can never deadlock. The rows are locked in a MATERIALIZED CTE that runs once and is
// then joined (never `where id in (select … for update skip locked)`: under the generic plan,
// which guesses 10 array elements, Postgres re-ran that locking subquery for every row updated,
// quadratic in the batch — docs/decisions.md "SQL: plans of the prepared statements").

const freezeMsgBatchStatement = pgStatement<
  [now: Date, limit: number],
  { event_id: number; flid: string; state_version: number; attempts: number; payload: Record<string, unknown>; trace_context: string | null }
>(
  'outbox.freeze_msg_batch',
  `select e.event_id, e.flid, e.state_version, e.attempts, e.payload, e.trace_context
   from msg_event e
   where e.target = 'msg' and e.state = 'PENDING'
     and (e.next_attempt_at is null or e.next_attempt_at <= $1::timestamptz)
     and not exists (
       select 1 from msg_event b
       where b.flid = e.flid and b.event_id < e.event_id and b.target = 'msg'
         and (b.state = 'DEAD' or (b.state = 'PENDING' and b.next_attempt_at > $1::timestamptz)))
   order by e.event_id
   limit $2::bigint`,
);
/**
 * The frozen batch of a msg round: PENDING and due at $1, EVENT_ID order, at most $2, and no
 * earlier event of the same FLID that is DEAD or PENDING-not-due (plan.ts `releasable`).
 */
export function freezeMsgBatch(db: Executor, now: Date, limit: number): Promise<RowOf<typeof freezeMsgBatchStatement>[]> {
  return pgRows(db, freezeMsgBatchStatement, now, limit);
}

/**
 * PENDING rows of one target (schd or state) due at $1, in EVENT_ID order (for schd: oldest write
 * generation first), at most $2. The target is written in the text, one statement each, not a
 * parameter: the generic plan then reads that target's part of the pending index.
 */
const pendingRowsOf = (target: 'schd' | 'state') =>
  pgStatement<[now: Date, limit: number], PendingRow>(
    `outbox.pending_${target}_rows`,
    `select event_id, flid, state_version, attempts, trace_context from msg_event
     where target = '${target}' and state = 'PENDING' and (next_attempt_at is null or next_attempt_at <= $1::timestamptz)
     order by event_id
     limit $2::bigint`,
  );
const pendingRowsStatements = { schd: pendingRowsOf('schd'), state: pendingRowsOf('state') } as const;
/** A PENDING row of the schd or state target. */
export interface PendingRow {
  event_id: number;
  flid: string;
  state_version: number;
  attempts: number;
  trace_context: string | null;
}
/** The PENDING rows of `target` due at `now`, at most `limit`: that target's own statement (above). */
export function listPendingRows(db: Executor, target: 'schd' | 'state', now: Date, limit: number): Promise<PendingRow[]> {
  return pgRows(db, pendingRowsStatements[target], now, limit);
}

const unchangedStateRowsStatement = pgStatement<[eventIds: number[]], { event_id: number }>(
  'outbox.unchanged_state_rows',
  `select event_id from msg_event where event_id = any($1::bigint[]) and target = 'state' and state = 'PENDING'`,
);
/** Of the state rows $1 (event ids), those still PENDING under that event id (not rewritten since). */
export function listUnchangedStateRows(db: Executor, eventIds: number[]): Promise<RowOf<typeof unchangedStateRowsStatement>[]> {
  return pgRows(db, unchangedStateRowsStatement, eventIds);
}

const upsertStateRowsStatement = pgStatement<[now: Date, flids: string[], versions: number[]]>(
  'outbox.upsert_state_rows',
  `insert into msg_event (event_id, target, flid, state_version, payload, created_at)
   select nextval('msg_event_id_seq'), 'state', u.flid, u.ver, jsonb_build_object('FLID', u.flid, 'STATE_VERSION', u.ver), $1::timestamptz
   from unnest($2::text[], $3::integer[]) as u(flid, ver)
   on conflict (target, flid) where target in ('schd', 'state') do update set
     event_id = excluded.event_id, state_version = excluded.state_version, payload = excluded.payload,
     state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null,
     kafka_partition = null, kafka_offset = null, last_error = null, created_at = excluded.created_at`,
);
/**
 * State rows for the FLIDs $2 at versions $3, created at $1 (the history purge's tombstones; the
 * pump writes its own inside flight.write_batch): upserted back to PENDING with a new EVENT_ID.
 */
export function upsertStateRows(db: Executor, now: Date, flids: string[], versions: number[]): Promise<number> {
  return pgRun(db, upsertStateRowsStatement, now, flids, versions);
}

const markSentStatement = pgStatement<[now: Date, eventIds: number[], stateVersions: number[], partitions: number[], offsets: (string | null)[]], { event_id: number }>(
  'outbox.mark_sent',
  `with l as materialized (
     select m.event_id, u.p, u.o from unnest($2::bigint[], $3::integer[], $4::integer[], $5::text[]) as u(id, ver, p, o)
     join msg_event m on m.event_id = u.id
     where m.state_version = u.ver and m.state = 'PENDING'
     for update of m skip locked)
   update msg_event m set state = 'SENT', sent_at = $1::timestamptz, attempts = m.attempts + 1, next_attempt_at = null,
     kafka_partition = l.p, kafka_offset = l.o
   from l
   where m.event_id = l.event_id
   returning m.event_id`,
);
/**
 * Marks acknowledged rows SENT at $1 (partition, offset per row); a row rewritten meanwhile (new
 * event_id / version) or locked by the pump stays PENDING. Returns the event ids marked.
 */
export function markSent(db: Executor, now: Date, eventIds: number[], stateVersions: number[], partitions: number[], offsets: (string | null)[]): Promise<RowOf<typeof markSentStatement>[]> {
  return pgRows(db, markSentStatement, now, eventIds, stateVersions, partitions, offsets);
}

const markFailedStatement = pgStatement<
  [error: string, eventIds: number[], attemptsBefore: number[], states: string[], attempts: number[], nextAttemptAt: (string | null)[]],
  { event_id: number; state: string }
>(
  'outbox.mark_failed',
  `with l as materialized (
     select m.event_id, u.st, u.att, u.nxt from unnest($2::bigint[], $3::integer[], $4::text[], $5::integer[], $6::timestamptz[]) as u(id, before, st, att, nxt)
     join msg_event m on m.event_id = u.id
     where m.attempts = u.before and m.state = 'PENDING'
     for update of m skip locked)
   update msg_event m set state = l.st, attempts = l.att, next_attempt_at = l.nxt, last_error = $1::text
   from l
   where m.event_id = l.event_id
   returning m.event_id, m.state`,
);
/**
 * Records failed sends (backoff or DEAD) with the error text $1; a row changed meanwhile
 * (attempts differ: replayed, rewritten) or locked by the pump is left alone. Returns the rows
 * updated with their new state.
 */
export function markFailed(
  db: Executor,
  error: string,
  eventIds: number[],
  attemptsBefore: number[],
  states: string[],
  attempts: number[],
  nextAttemptAt: (string | null)[],
): Promise<RowOf<typeof markFailedStatement>[]> {
  return pgRows(db, markFailedStatement, error, eventIds, attemptsBefore, states, attempts, nextAttemptAt);
}

const dropGoneSchdRowsStatement = pgStatement<[eventIds: number[]]>(
  'outbox.drop_gone_schd_rows',
  `with l as materialized (
     select event_id from msg_event where event_id = any($1::bigint[]) and target = 'schd' and state = 'PENDING'
     for update skip locked)
   delete from msg_event m using l where m.event_id = l.event_id`,
);
/** Removes these PENDING schd rows (their flight is missing or DELETED), skipping rows locked by the pump. */
export function dropGoneSchdRows(db: Executor, eventIds: number[]): Promise<number> {
  return pgRun(db, dropGoneSchdRowsStatement, eventIds);
}

const releaseBackoffStatement = pgStatement<[eventIds: number[]]>(
  'outbox.release_backoff',
  `update msg_event set next_attempt_at = null
   where event_id = any($1::bigint[]) and state = 'PENDING' and next_attempt_at is not null`,
);
/** Makes these PENDING events that back off due at once (Kafka answers again, lib/dispatch/outage.ts). */
export function releaseBackoff(db: Executor, eventIds: number[]): Promise<number> {
  return pgRun(db, releaseBackoffStatement, eventIds);
}

const nextAttemptAtStatement = pgStatement<[target: OutboxTarget, now: Date], { at: Date | null }>(
  'outbox.next_attempt_at',
  `select min(next_attempt_at) as at from msg_event where target = $1::text and state = 'PENDING' and next_attempt_at > $2::timestamptz`,
);
/** Earliest retry after $2 among PENDING rows of target $1 (null: nothing waits on backoff). */
export function readNextAttemptAt(db: Executor, target: OutboxTarget, now: Date): Promise<RowOf<typeof nextAttemptAtStatement> | undefined> {
  return pgOne(db, nextAttemptAtStatement, target, now);
}
