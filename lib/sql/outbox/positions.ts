// SQL of MSG_EVENT (the outbox of the three dispatchers): the topics' positions as the outbox
// records them, the derived topics' checks, and the msg topic's losses and resends. Statement
// conventions: lib/db/statement.ts.
import { type Executor, pgOne, pgRows, pgStatement, type RowOf } from '../../db/statement.ts';

// ---- lib/api/flight-routes.ts

/**
 * The walk of one target's SENT partitions (msg or state), with its target as a literal: each
 * statement then matches its own partial index, which a target given as $1 would not (a generic
 * plan cannot prove the index's predicate).
 */
const partitionWalk = (target: 'msg' | 'state') =>
  `with recursive p(part) as (
     select min(kafka_partition) from msg_event where target = '${target}' and state = 'SENT' and kafka_offset is not null
     union all
     select (select min(kafka_partition) from msg_event
             where target = '${target}' and state = 'SENT' and kafka_offset is not null and kafka_partition > p.part)
     from p where p.part is not null)
   select p.part as partition,
          ((select max((kafka_offset)::bigint) from msg_event
            where target = '${target}' and state = 'SENT' and kafka_offset is not null and kafka_partition = p.part) + 1)::text as offset`;
const positionsText = (target: 'msg' | 'state') => `${partitionWalk(target)}
   from p where p.part is not null order by p.part`;

const msgPositionsStatement = pgStatement<[], { partition: number; offset: string }>('outbox.msg_positions', positionsText('msg'));
/**
 * The msg topic position of GET /all/flights: per partition, the offset after the highest one
 * acknowledged for a SENT msg event the outbox still holds (docs/consumers.md "Starting from
 * nothing"); also where the restore check starts reading the topic (lib/watches/restore-kafka.ts). One index probe per partition (msg_event_msg_sent_offset): the partitions are
 * walked with a recursive skip over the index, not by grouping every SENT row.
 */
export function readMsgPositions(db: Executor): Promise<RowOf<typeof msgPositionsStatement>[]> {
  return pgRows(db, msgPositionsStatement);
}

// ---- lib/watches/ (the derived topics' checks, docs/operations.md "Derived stores")

const statePositionsStatement = pgStatement<[], { partition: number; offset: string }>('outbox.state_positions', positionsText('state'));
/**
 * The state topic's recorded positions: per partition, one past the highest offset acknowledged
 * for a SENT state row (one index probe per partition, msg_event_state_sent_offset): the walk of
 * readMsgPositions, with its own target literal (positionsText).
 */
export function readStatePositions(db: Executor): Promise<RowOf<typeof statePositionsStatement>[]> {
  return pgRows(db, statePositionsStatement);
}

const reseedStateStatement = pgStatement<[now: Date], { inserted: number; requeued: number; high: number | null; dead: number }>(
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
/**
 * The re-seed of the state topic, at $1: a state row for every ACTIVE flight that has none (the
 * dispatch retention deletes SENT rows after msgx.pipeline.event-retention, whatever the target),
 * and every SENT state row back to PENDING with its own EVENT_ID (attempts 0, placement
 * forgotten); PENDING rows backing off (sends to the vanished topic) are due at once. A row the pump writes meanwhile wins (on conflict do nothing; its upsert replaces
 * ours). DEAD rows stay the operator's. Returns the counts and the highest event id touched.
 */
export function reseedState(db: Executor, now: Date): Promise<RowOf<typeof reseedStateStatement> | undefined> {
  return pgOne(db, reseedStateStatement, now);
}

const reseedProgressStatement = pgStatement<[high: number], { pending: number; dead: number }>(
  'outbox.reseed_progress',
  `select (select count(*)::int from msg_event where target = 'state' and state = 'PENDING' and event_id <= $1::bigint) as pending,
          (select count(*)::int from msg_event where target = 'state' and state = 'DEAD' and event_id <= $1::bigint) as dead`,
);
/** How far a re-seed is: state rows up to event id $1 still PENDING, and DEAD state rows up to it. */
export function readReseedProgress(db: Executor, high: number): Promise<RowOf<typeof reseedProgressStatement> | undefined> {
  return pgOne(db, reseedProgressStatement, high);
}

const msgTopicCheckStatement = pgStatement<
  [topic: string],
  { partition: number | null; offset: string | null; loss_id: number | null; loss_partitions: number[] | null; loss_events: number | null; loss_first: number | null; loss_last: number | null }
>(
  'outbox.msg_topic_check',
  `${partitionWalk('msg')},
          null::bigint as loss_id, null::integer[] as loss_partitions, null::integer as loss_events, null::bigint as loss_first, null::bigint as loss_last
   from p where p.part is not null
   union all
   select null, null, l.id, l.partitions, l.events, l.first_event_id, l.last_event_id
   from topic_loss l where l.topic = $1::text and l.resolved_at is null`,
);
/**
 * The msg topic's check: its recorded positions (as outbox.msg_positions) and, in the same
 * statement, the open losses of topic $1 (rows with partition null).
 */
export function checkMsgTopic(db: Executor, topic: string): Promise<RowOf<typeof msgTopicCheckStatement>[]> {
  return pgRows(db, msgTopicCheckStatement, topic);
}

const recordMsgLossStatement = pgStatement<
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
/**
 * A loss of the msg topic $1 found at $2: the SENT msg events recorded in partitions $4 at or
 * above the end offsets $5 (the topic no longer holds them) lose their recorded offset, and one
 * open topic_loss row ($3 = what was found) names their range. Nothing when no event is lost.
 */
export function recordMsgLoss(db: Executor, topic: string, now: Date, detail: string, partitions: number[], ends: string[]): Promise<RowOf<typeof recordMsgLossStatement> | undefined> {
  return pgOne(db, recordMsgLossStatement, topic, now, detail, partitions, ends);
}

// ---- lib/dispatch/resend.ts (scripts/dispatch-resend.ts)

const msgEventBoundsStatement = pgStatement<[], { low: number | null; high: number | null }>(
  'outbox.msg_event_bounds',
  `select (select min(event_id) from msg_event where target = 'msg') as low, (select max(event_id) from msg_event where target = 'msg') as high`,
);
/** The msg events the outbox still holds: lowest and highest EVENT_ID (null: none). */
export function readMsgEventBounds(db: Executor): Promise<RowOf<typeof msgEventBoundsStatement> | undefined> {
  return pgOne(db, msgEventBoundsStatement);
}

const resendMsgRangeStatement = pgStatement<[from: number, to: number], { events: number; flids: number; first: number | null; last: number | null }>(
  'outbox.resend_msg_range',
  `with r as (
     update msg_event set state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null, kafka_partition = null, kafka_offset = null
     where target = 'msg' and state = 'SENT' and event_id between $1::bigint and $2::bigint
     returning event_id, flid)
   select count(*)::int as events, count(distinct flid)::int as flids, min(event_id) as first, max(event_id) as last from r`,
);
/**
 * SENT msg events $1..$2 back to PENDING (attempts 0, placement forgotten): the msg round sends
 * them again in EVENT_ID order per FLID. PENDING, DEAD and SKIPPED events are left as they are.
 */
export function resendMsgRange(db: Executor, from: number, to: number): Promise<RowOf<typeof resendMsgRangeStatement> | undefined> {
  return pgOne(db, resendMsgRangeStatement, from, to);
}

const openLossesStatement = pgStatement<[topic: string], { id: number; detected_at: Date; detail: string; partitions: number[]; first_event_id: number; last_event_id: number; events: number }>(
  'outbox.open_losses',
  `select id, detected_at, detail, partitions, first_event_id, last_event_id, events
   from topic_loss where topic = $1::text and resolved_at is null order by id`,
);
/** The open losses of topic $1, oldest first. */
export function listOpenLosses(db: Executor, topic: string): Promise<RowOf<typeof openLossesStatement>[]> {
  return pgRows(db, openLossesStatement, topic);
}

const resolveLossesStatement = pgStatement<[ids: number[], now: Date, resolution: string], { id: number }>(
  'outbox.resolve_losses',
  `update topic_loss set resolved_at = $2::timestamptz, resolution = $3::text
   where id = any($1::bigint[]) and resolved_at is null returning id`,
);
/** Closes the losses $1 at $2 with what the operator did ($3). */
export function resolveLosses(db: Executor, ids: number[], now: Date, resolution: string): Promise<RowOf<typeof resolveLossesStatement>[]> {
  return pgRows(db, resolveLossesStatement, ids, now, resolution);
}
