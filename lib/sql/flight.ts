// SQL of FLIGHT_SCHD and its detail tables, FLIGHT_CHANGE, FLIGHT_VERSION_FLOOR,
// FLIGHT_RAW_FRAGMENT and FLIGHT_PURGE_REDIS. Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/lifecycle/trace-records.ts

/** Deletes up to $2 FLIGHT_CHANGE rows created before $1, oldest first (the retention job's batch). */
export const purgeChangesBefore = pgStatement<[cutoff: Date, batch: number]>(
  'flight.purge_changes_before',
  `delete from flight_change where ctid = any(array(
     select ctid from flight_change where created_at < $1::timestamptz order by created_at limit $2))`,
);

// ---- lib/api/message-trace.ts

/** A FLIGHT_CHANGE row (one message's change of one flight, the version it made). */
export interface TraceChangeRow {
  flid: string;
  state_version: number;
  msg_id: number;
  kind: string;
  op: 'CREATE' | 'UPDATE' | 'DELETE' | 'REVIVE';
  cause: 'MESSAGE' | 'CASCADE' | 'MAFL' | 'SNAPSHOT_DELETE';
  /** {"KEY": [before, after], ...} */
  changes: Record<string, [unknown, unknown]>;
  created_at: Date;
}

/** The flight changes message $1 made, per flight in version order. */
export const traceChanges = pgStatement<[msgId: number], TraceChangeRow>('flight.trace_changes', 'select * from flight_change where msg_id = $1::bigint order by flid, state_version');

/** An outbox event of a version a message made, as the message trace shows it. */
export interface TraceEventRow {
  event_id: number;
  target: 'msg' | 'schd';
  flid: string;
  state_version: number;
  state: string;
  attempts: number;
  sent_at: Date | null;
  kafka_partition: number | null;
  kafka_offset: string | null;
  last_error: string | null;
  created_at: Date;
  deleted: boolean;
}

/**
 * The outbox events (MSG_EVENT) of the versions message $1 made: every schd event, and the msg
 * events that carry this message ($2 = its ID as text), in event order.
 */
export const traceEvents = pgStatement<[msgId: number, msgIdText: string], TraceEventRow>(
  'flight.trace_events',
  `select e.event_id, e.target, e.flid, e.state_version, e.state, e.attempts, e.sent_at, e.kafka_partition, e.kafka_offset,
          e.last_error, e.created_at, coalesce((e.payload->>'DELETED')::boolean, false) as deleted
     from flight_change c
     join msg_event e on e.flid = c.flid and e.state_version = c.state_version
    where c.msg_id = $1::bigint and (e.target = 'schd' or e.payload->>'MSG_ID' = $2::text)
    order by e.event_id`,
);
