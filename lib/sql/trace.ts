// SQL of the message trace (lib/api/message-trace.ts: "what happened to message 1234?"): one
// message's inbox row (MariaDB), its PROC_STATE row and failed attempts (PROC_ATTEMPT), the flight
// changes it made (FLIGHT_CHANGE) and the outbox events of those versions (MSG_EVENT). Read-only.
// Statement conventions: lib/db/statement.ts. The console's reads: lib/sql/console.ts.
import { type Executor, type MyExecutor, myRows, myStatement, pgRows, pgStatement, type RowOf } from '../db/statement.ts';
import type { FlightChangeRow } from './flight.ts';
import type { ProcStateRow } from './proc-state.ts';

export interface InboxTraceRow {
  received: string | null;
  processed: string | null;
  sndr: string | null;
  seqn: number | string | null;
  type: string | null;
  styp: string | null;
  status: string | null;
  chars: number | string;
  excerpt: string | null;
}

const inboxRowStatement = myStatement<[id: number], InboxTraceRow>(
  'trace.inbox_row',
  `SELECT CMINMSGS_DATE_RECEIVED AS received, CMINMSGS_DATE_PROCESSED AS processed, CMINMSGS_SUBSYSTEM_NAME AS sndr,
          CMINMSGS_SUBSYSTEM_SEQUENCE AS seqn, CMINMSGS_SUBSYSTEM_TYPE AS type, CMINMSGS_SUBSYSTEM_SUBTYPE AS styp,
          CMINMSGS_STATUS AS status, CHAR_LENGTH(CMINMSGS_CLOB_MSG) AS chars, LEFT(CMINMSGS_CLOB_MSG, 4000) AS excerpt
     FROM cminmsgs WHERE CMINMSGS_ID = ?`,
);
/** One inbox row as the message trace shows it: times, sender, kind, status, size and the first 4,000 characters (MariaDB). */
export function readInboxRow(my: MyExecutor, id: number): Promise<InboxTraceRow[]> {
  return myRows(my, inboxRowStatement, id);
}

const messageStateStatement = pgStatement<[msgId: number], ProcStateRow & { received_local: string | null }>(
  'trace.message_state',
  'select *, received_at::text as received_local from proc_state where msg_id = $1::bigint',
);
/** One message's PROC_STATE row, with its received time as text (zone-less, as stored). */
export function readMessageState(db: Executor, msgId: number): Promise<(ProcStateRow & { received_local: string | null })[]> {
  return pgRows(db, messageStateStatement, msgId);
}

const messageAttemptsStatement = pgStatement<[msgId: number], { attempt_at: Date; error_class: string; detail: string | null; next_state: string }>(
  'trace.message_attempts',
  'select attempt_at, error_class, detail, next_state from proc_attempt where msg_id = $1::bigint order by attempt_at',
);
/** One message's failed attempts, oldest first. */
export function readMessageAttempts(db: Executor, msgId: number): Promise<RowOf<typeof messageAttemptsStatement>[]> {
  return pgRows(db, messageAttemptsStatement, msgId);
}

const flightChangesStatement = pgStatement<[msgId: number], FlightChangeRow>('trace.flight_changes', 'select * from flight_change where msg_id = $1::bigint order by flid, state_version');
/** The flight changes message $1 made, per flight in version order. */
export function readFlightChanges(db: Executor, msgId: number): Promise<FlightChangeRow[]> {
  return pgRows(db, flightChangesStatement, msgId);
}

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
  /** For a PENDING msg event: the first DEAD event of its flight before it (it waits behind it). */
  held_by: number | null;
}

const outboxEventsStatement = pgStatement<[msgId: number, msgIdText: string], TraceEventRow>(
  'trace.outbox_events',
  `select e.event_id, e.target, e.flid, e.state_version, e.state, e.attempts, e.sent_at, e.kafka_partition, e.kafka_offset,
          e.last_error, e.created_at, coalesce((e.payload->>'DELETED')::boolean, false) as deleted,
          case when e.state = 'PENDING' then (select min(d.event_id) from msg_event d where d.flid = e.flid and d.target = e.target
                                               and d.state = 'DEAD' and d.event_id < e.event_id) end as held_by
     from flight_change c
     join msg_event e on e.flid = c.flid and e.state_version = c.state_version
    where c.msg_id = $1::bigint and (e.target = 'schd' or e.payload->>'MSG_ID' = $2::text)
    order by e.event_id`,
);
/**
 * The outbox events (MSG_EVENT) of the versions message $1 made: every schd event, and the msg
 * events that carry this message ($2 = its ID as text), in event order.
 */
export function readOutboxEvents(db: Executor, msgId: number, msgIdText: string): Promise<TraceEventRow[]> {
  return pgRows(db, outboxEventsStatement, msgId, msgIdText);
}
