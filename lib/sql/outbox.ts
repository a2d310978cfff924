// SQL of MSG_EVENT (the outbox of the three dispatchers: msg, schd, state). Statement conventions: lib/db/statement.ts.
import { PER_EXECUTION, pgStatement } from '../db/statement.ts';

/** The outbox's targets (MSG_EVENT.TARGET). */
export type OutboxTarget = 'msg' | 'schd' | 'state';

// ---- lib/dispatch/outbox.ts
// Updates lock with SKIP LOCKED: a row the pump is rewriting right now (schd upsert) is left
// alone (it stays PENDING and goes out again) and the dispatcher never waits on the pump, so
// the two can never deadlock. The rows are locked in a MATERIALIZED CTE that runs once and is
// then joined (never `where id in (select … for update skip locked)`: under the generic plan,
// which guesses 10 array elements, Postgres re-ran that locking subquery for every row updated,
// quadratic in the batch — docs/decisions.md "SQL: plans of the prepared statements").

/**
 * The frozen batch of a msg round: PENDING and due at $1, EVENT_ID order, at most $2, and no
 * earlier event of the same FLID that is DEAD or PENDING-not-due (plan.ts `releasable`).
 */
export const freezeMsgBatch = pgStatement<
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
 * PENDING rows of one target (schd or state) due at $1, in EVENT_ID order (for schd: oldest write
 * generation first), at most $2. The target is written in the text, one statement each, not a
 * parameter: the generic plan then reads that target's part of the pending index.
 */
const pendingRowsOf = (target: 'schd' | 'state') =>
  pgStatement<[now: Date, limit: number], { event_id: number; flid: string; state_version: number; attempts: number; trace_context: string | null }>(
    `outbox.pending_${target}_rows`,
    `select event_id, flid, state_version, attempts, trace_context from msg_event
     where target = '${target}' and state = 'PENDING' and (next_attempt_at is null or next_attempt_at <= $1::timestamptz)
     order by event_id
     limit $2::bigint`,
  );
export const pendingRows = { schd: pendingRowsOf('schd'), state: pendingRowsOf('state') } as const;

/** Of the state rows $1 (event ids), those still PENDING under that event id (not rewritten since). */
export const unchangedStateRows = pgStatement<[eventIds: number[]], { event_id: number }>(
  'outbox.unchanged_state_rows',
  `select event_id from msg_event where event_id = any($1::bigint[]) and target = 'state' and state = 'PENDING'`,
);

/**
 * State rows for the FLIDs $2 at versions $3, created at $1 (the history purge's tombstones; the
 * pump writes its own inside flight.write_batch): upserted back to PENDING with a new EVENT_ID.
 */
export const upsertStateRows = pgStatement<[now: Date, flids: string[], versions: number[]]>(
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
 * Marks acknowledged rows SENT at $1 (partition, offset per row); a row rewritten meanwhile (new
 * event_id / version) or locked by the pump stays PENDING. Returns the event ids marked.
 */
export const markSent = pgStatement<[now: Date, eventIds: number[], stateVersions: number[], partitions: number[], offsets: (string | null)[]], { event_id: number }>(
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
 * Records failed sends (backoff or DEAD) with the error text $1; a row changed meanwhile
 * (attempts differ: replayed, rewritten) or locked by the pump is left alone. Returns the rows
 * updated with their new state.
 */
export const markFailed = pgStatement<
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

/** Removes these PENDING schd rows (their flight is missing or DELETED), skipping rows locked by the pump. */
export const dropGoneSchdRows = pgStatement<[eventIds: number[]]>(
  'outbox.drop_gone_schd_rows',
  `with l as materialized (
     select event_id from msg_event where event_id = any($1::bigint[]) and target = 'schd' and state = 'PENDING'
     for update skip locked)
   delete from msg_event m using l where m.event_id = l.event_id`,
);

/** Makes these PENDING events that back off due at once (Kafka answers again, lib/dispatch/outage.ts). */
export const releaseBackoff = pgStatement<[eventIds: number[]]>(
  'outbox.release_backoff',
  `update msg_event set next_attempt_at = null
   where event_id = any($1::bigint[]) and state = 'PENDING' and next_attempt_at is not null`,
);

/** Earliest retry after $2 among PENDING rows of target $1 (null: nothing waits on backoff). */
export const nextAttemptAt = pgStatement<[target: OutboxTarget, now: Date], { at: Date | null }>(
  'outbox.next_attempt_at',
  `select min(next_attempt_at) as at from msg_event where target = $1::text and state = 'PENDING' and next_attempt_at > $2::timestamptz`,
);

// The DEAD selector of the operator actions: event ids $1 (null: any), FLID $2 (null: any),
// target $3 (null: any); all null selects every DEAD row. Optional filters: planned with their
// values on every run (PER_EXECUTION, lib/db/statement.ts), as a generic plan cannot drop them.

/** DEAD → PENDING with attempts 0, due now (sent again in EVENT_ID order); last_error is kept. */
export const replayDead = pgStatement<[eventIds: number[] | null, flid: string | null, target: OutboxTarget | null], { event_id: number; target: OutboxTarget }>(
  'outbox.replay_dead',
  `update msg_event set state = 'PENDING', attempts = 0, next_attempt_at = null
   where state = 'DEAD' and ($1::bigint[] is null or event_id = any($1::bigint[]))
     and ($2::text is null or flid = $2::text) and ($3::text is null or target = $3::text)
   returning event_id, target`,
  PER_EXECUTION,
);

/** DEAD → SKIPPED (kept, visible; it no longer holds its FLID's later events). */
export const skipDead = pgStatement<[eventIds: number[] | null, flid: string | null, target: OutboxTarget | null], { event_id: number; target: OutboxTarget }>(
  'outbox.skip_dead',
  `update msg_event set state = 'SKIPPED', next_attempt_at = null
   where state = 'DEAD' and ($1::bigint[] is null or event_id = any($1::bigint[]))
     and ($2::text is null or flid = $2::text) and ($3::text is null or target = $3::text)
   returning event_id, target`,
  PER_EXECUTION,
);

/**
 * What an id selection of dispatch-replay / dispatch-skip names ($1): each event's state, and for
 * one waiting behind a dead letter of its flight, the first such DEAD event (held_by).
 */
export const eventSelection = pgStatement<[eventIds: number[]], { event_id: number; target: OutboxTarget; flid: string; state: string; held_by: number | null }>(
  'outbox.event_selection',
  `select e.event_id, e.target, e.flid, e.state,
     (select min(d.event_id) from msg_event d where d.flid = e.flid and d.target = e.target and d.state = 'DEAD' and d.event_id < e.event_id) as held_by
   from msg_event e where e.event_id = any($1::bigint[]) order by e.event_id`,
);

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

/** DEAD rows of target $1 (null: both) in EVENT_ID order, at most $2. */
export const listDead = pgStatement<[target: OutboxTarget | null, limit: number], DeadLetterRow>(
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

/** Deletes up to $2 SENT rows sent before $1, oldest first, skipping locked rows. */
export const deleteSentBefore = pgStatement<[cutoff: Date, batch: number]>(
  'outbox.delete_sent_before',
  `delete from msg_event where event_id in (
     select event_id from msg_event where state = 'SENT' and sent_at < $1::timestamptz
     order by sent_at limit $2::bigint for update skip locked)`,
);

// ---- lib/dispatch/metrics.ts

/** Row counts by target and state (PENDING, DEAD) for the targets $1 (PENDING uses the partial indexes). */
export const countByState = pgStatement<[targets: OutboxTarget[]], { target: OutboxTarget; state: string; n: number }>(
  'outbox.count_by_state',
  `select target, state, count(*)::int as n from msg_event
   where target = any($1::text[]) and state in ('PENDING', 'DEAD')
   group by target, state`,
);

/** Age in seconds of the oldest PENDING event of target $1 (no row: none pending). */
export const oldestPendingAge = pgStatement<[target: OutboxTarget], { age: number | null }>(
  'outbox.oldest_pending_age',
  `select extract(epoch from now() - created_at)::float8 as age from msg_event
   where target = $1::text and state = 'PENDING' order by event_id limit 1`,
);

// ---- lib/flight/store.ts
// (The pump's batch write also writes MSG_EVENT, inside flight.write_batch: lib/sql/flight.ts.)

/** msg topic events for the FLIDs $2 at versions $3 with payloads $4, created at $1: EVENT_IDs taken from the global sequence in array order. */
export const insertMsgEvents = pgStatement<[now: Date, flids: string[], versions: number[], payloads: string[]]>(
  'outbox.insert_msg_events',
  `insert into msg_event (event_id, target, flid, state_version, payload, created_at)
   select x.id, 'msg', x.flid, x.ver, x.p || jsonb_build_object('EVENT_ID', x.id), $1::timestamptz
   from (select nextval('msg_event_id_seq') as id, u.flid, u.ver, u.p
         from (select * from unnest($2::text[], $3::integer[], $4::jsonb[]) with ordinality as t(flid, ver, p, ord)
               order by ord) u) x`,
);

/** Deleted flights never go to schd: drop the pending (or dead) schd rows of the FLIDs $1. */
export const removePendingSchd = pgStatement<[flids: string[]]>(
  'outbox.remove_pending_schd',
  "delete from msg_event where target = 'schd' and state in ('PENDING', 'DEAD') and flid = any($1::text[])",
);

// ---- lib/api/flight-routes.ts

/**
 * The msg topic position of GET /all/flights: per partition, the offset after the highest one
 * acknowledged for a SENT msg event the outbox still holds (docs/consumers.md "Starting from
 * nothing"); also where the restore check starts reading the topic (lib/watches/restore-kafka.ts). One index probe per partition (msg_event_msg_sent_offset): the partitions are
 * walked with a recursive skip over the index, not by grouping every SENT row.
 */
export const msgPositions = pgStatement<[], { partition: number; offset: string }>(
  'outbox.msg_positions',
  `with recursive p(part) as (
     select min(kafka_partition) from msg_event where target = 'msg' and state = 'SENT' and kafka_offset is not null
     union all
     select (select min(kafka_partition) from msg_event
             where target = 'msg' and state = 'SENT' and kafka_offset is not null and kafka_partition > p.part)
     from p where p.part is not null)
   select p.part as partition,
          ((select max((kafka_offset)::bigint) from msg_event
            where target = 'msg' and state = 'SENT' and kafka_offset is not null and kafka_partition = p.part) + 1)::text as offset
   from p where p.part is not null order by p.part`,
);

// ---- lib/flight/timeline.ts

/** The msg outbox events of flight $1 in EVENT_ID order (what is left of versions whose change record is gone). */
export const timelineEvents = pgStatement<[flid: string], { state_version: number; payload: Record<string, unknown>; created_at: Date }>(
  'outbox.timeline_events',
  "select state_version, payload, created_at from msg_event where target = 'msg' and flid = $1::text order by event_id",
);

// ---- lib/watches/ (the derived topics' checks, docs/operations.md "Derived stores")

/**
 * The state topic's recorded positions: per partition, one past the highest offset acknowledged
 * for a SENT state row (one index probe per partition, msg_event_state_sent_offset). The same
 * walk as msgPositions with its own target literal: each matches its partial index, which a
 * target given as $1 would not (a generic plan cannot prove the index's predicate).
 */
export const statePositions = pgStatement<[], { partition: number; offset: string }>(
  'outbox.state_positions',
  `with recursive p(part) as (
     select min(kafka_partition) from msg_event where target = 'state' and state = 'SENT' and kafka_offset is not null
     union all
     select (select min(kafka_partition) from msg_event
             where target = 'state' and state = 'SENT' and kafka_offset is not null and kafka_partition > p.part)
     from p where p.part is not null)
   select p.part as partition,
          ((select max((kafka_offset)::bigint) from msg_event
            where target = 'state' and state = 'SENT' and kafka_offset is not null and kafka_partition = p.part) + 1)::text as offset
   from p where p.part is not null order by p.part`,
);

/**
 * The re-seed of the state topic, at $1: a state row for every ACTIVE flight that has none (the
 * dispatch retention deletes SENT rows after msgx.pipeline.event-retention, whatever the target),
 * and every SENT state row back to PENDING with its own EVENT_ID (attempts 0, placement
 * forgotten); PENDING rows backing off (sends to the vanished topic) are due at once. A row the pump writes meanwhile wins (on conflict do nothing; its upsert replaces
 * ours). DEAD rows stay the operator's. Returns the counts and the highest event id touched.
 */
export const reseedState = pgStatement<[now: Date], { inserted: number; requeued: number; high: number | null; dead: number }>(
  'outbox.reseed_state',
  `with ins as (
     insert into msg_event (event_id, target, flid, state_version, payload, created_at)
     select nextval('msg_event_id_seq'), 'state', f.flid, f.state_version, jsonb_build_object('FLID', f.flid, 'STATE_VERSION', f.state_version), $1::timestamptz
     from flight_schd f
     where f.state = 'ACTIVE' and not exists (select 1 from msg_event m where m.target = 'state' and m.flid = f.flid)
     on conflict (target, flid) where target in ('schd', 'state') do nothing
     returning event_id),
   req as (
     update msg_event set state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null, kafka_partition = null, kafka_offset = null
     where target = 'state' and state = 'SENT'
     returning event_id),
   due as (
     update msg_event set next_attempt_at = null
     where target = 'state' and state = 'PENDING' and next_attempt_at is not null)
   select (select count(*)::int from ins) as inserted, (select count(*)::int from req) as requeued,
          greatest((select max(event_id) from ins), (select max(event_id) from req))::bigint as high,
          (select count(*)::int from msg_event where target = 'state' and state = 'DEAD') as dead`,
);

/** How far a re-seed is: state rows up to event id $1 still PENDING, and DEAD state rows up to it. */
export const reseedProgress = pgStatement<[high: number], { pending: number; dead: number }>(
  'outbox.reseed_progress',
  `select (select count(*)::int from msg_event where target = 'state' and state = 'PENDING' and event_id <= $1::bigint) as pending,
          (select count(*)::int from msg_event where target = 'state' and state = 'DEAD' and event_id <= $1::bigint) as dead`,
);

/**
 * The msg topic's check: its recorded positions (as outbox.msg_positions) and, in the same
 * statement, the open losses of topic $1 (rows with partition null).
 */
export const msgTopicCheck = pgStatement<
  [topic: string],
  { partition: number | null; offset: string | null; loss_id: number | null; loss_partitions: number[] | null; loss_events: number | null; loss_first: number | null; loss_last: number | null }
>(
  'outbox.msg_topic_check',
  `with recursive p(part) as (
     select min(kafka_partition) from msg_event where target = 'msg' and state = 'SENT' and kafka_offset is not null
     union all
     select (select min(kafka_partition) from msg_event
             where target = 'msg' and state = 'SENT' and kafka_offset is not null and kafka_partition > p.part)
     from p where p.part is not null)
   select p.part as partition,
          ((select max((kafka_offset)::bigint) from msg_event
            where target = 'msg' and state = 'SENT' and kafka_offset is not null and kafka_partition = p.part) + 1)::text as offset,
          null::bigint as loss_id, null::integer[] as loss_partitions, null::integer as loss_events, null::bigint as loss_first, null::bigint as loss_last
   from p where p.part is not null
   union all
   select null, null, l.id, l.partitions, l.events, l.first_event_id, l.last_event_id
   from topic_loss l where l.topic = $1::text and l.resolved_at is null`,
);

/**
 * A loss of the msg topic $1 found at $2: the SENT msg events recorded in partitions $4 at or
 * above the end offsets $5 (the topic no longer holds them) lose their recorded offset, and one
 * open topic_loss row ($3 = what was found) names their range. Nothing when no event is lost.
 */
export const recordMsgLoss = pgStatement<
  [topic: string, now: Date, detail: string, partitions: number[], ends: string[]],
  { id: number; first_event_id: number; last_event_id: number; events: number; partitions: number[] }
>(
  'outbox.record_msg_loss',
  `with lost as (
     update msg_event m set kafka_offset = null
     from unnest($4::integer[], $5::bigint[]) as x(p, e)
     where m.target = 'msg' and m.state = 'SENT' and m.kafka_offset is not null
       and m.kafka_partition = x.p and (m.kafka_offset)::bigint >= x.e
     returning m.event_id, m.kafka_partition)
   insert into topic_loss (topic, detected_at, detail, partitions, first_event_id, last_event_id, events)
   select $1::text, $2::timestamptz, $3::text, array_agg(distinct kafka_partition order by kafka_partition), min(event_id), max(event_id), count(*)::int
   from lost having count(*) > 0
   returning id, first_event_id, last_event_id, events, partitions`,
);

// ---- lib/dispatch/resend.ts (scripts/dispatch-resend.ts)

/** The msg events the outbox still holds: lowest and highest EVENT_ID (null: none). */
export const msgEventBounds = pgStatement<[], { low: number | null; high: number | null }>(
  'outbox.msg_event_bounds',
  `select (select min(event_id) from msg_event where target = 'msg') as low, (select max(event_id) from msg_event where target = 'msg') as high`,
);

/**
 * SENT msg events $1..$2 back to PENDING (attempts 0, placement forgotten): the msg round sends
 * them again in EVENT_ID order per FLID. PENDING, DEAD and SKIPPED events are left as they are.
 */
export const resendMsgRange = pgStatement<[from: number, to: number], { events: number; flids: number; first: number | null; last: number | null }>(
  'outbox.resend_msg_range',
  `with r as (
     update msg_event set state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null, kafka_partition = null, kafka_offset = null
     where target = 'msg' and state = 'SENT' and event_id between $1::bigint and $2::bigint
     returning event_id, flid)
   select count(*)::int as events, count(distinct flid)::int as flids, min(event_id) as first, max(event_id) as last from r`,
);

/** The open losses of topic $1, oldest first. */
export const openLosses = pgStatement<[topic: string], { id: number; detected_at: Date; detail: string; partitions: number[]; first_event_id: number; last_event_id: number; events: number }>(
  'outbox.open_losses',
  `select id, detected_at, detail, partitions, first_event_id, last_event_id, events
   from topic_loss where topic = $1::text and resolved_at is null order by id`,
);

/** Closes the losses $1 at $2 with what the operator did ($3). */
export const resolveLosses = pgStatement<[ids: number[], now: Date, resolution: string], { id: number }>(
  'outbox.resolve_losses',
  `update topic_loss set resolved_at = $2::timestamptz, resolution = $3::text
   where id = any($1::bigint[]) and resolved_at is null returning id`,
);
