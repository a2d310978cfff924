// THE Kafka contract: every value msgexchange publishes, built here and nowhere else
// (docs/asyncapi.yaml has the JSON Schemas, docs/consumers.md what a consumer does with them).
//   msg topic (key = FLID): one event per changed flight, in EVENT_ID order per flight
//     - UPSERT     a message changed an ACTIVE flight                (lib/flight/plan.ts)
//     - DELETED    a message deleted the flight                      (lib/flight/plan.ts)
//     - tombstone  the history purge removed an ACTIVE flight by age (lib/lifecycle/flights.ts)
//     The outbox stores the payload without EVENT_ID; the insert adds EVENT_ID from the global
//     sequence (lib/sql/outbox/events.ts outbox.insert_msg_events; the pump's batch write flight.write_batch in lib/sql/flight.ts), and msgValue writes the record value.
//   schd topic (key = "schd"): {"SCHD":{"RECS":n,"FLTR":[state, …]}}, each state the complete
//     flight state as JSON (lib/flight/state.ts toJson); lib/dispatch/plan.ts splitSchd packs
//     states into records of at most max-record-bytes.
//   state topic (key = FLID, compacted): the flight's complete current state, the same JSON as
//     GET /flights/:flid (lib/flight/state.ts toJson, serialised by the caller), or a Kafka
//     tombstone (null value) for a deleted or purged flight; headers EVENT_ID and STATE_VERSION
//     on both (stateRecord).
//   every record, while tracing is on: the W3C Trace Context headers traceparent and tracestate
//     (traceHeaders) naming the span that sent it, in the message's trace (docs/consumers.md "Tracing").
// Pure: no I/O, no import of lib/.

/** A message changed an ACTIVE flight: which keys (CHANGED), by which message. */
export type MsgUpsert = {
  FLID: string;
  STATE_VERSION: number;
  UPDATED_AT: string;
  OP: 'UPSERT';
  MSG_ID: number;
  TYPE: string;
  STYP: string;
  CHANGED: string[];
};

/** A message deleted the flight (FDEL, a snapshot without it, …). */
export type MsgDeleted = { FLID: string; DELETED: true; STATE_VERSION: number; UPDATED_AT: string; MSG_ID: number };

/** The history purge removed an ACTIVE flight by age: version + 1, no message. */
export type MsgTombstone = { FLID: string; DELETED: true; STATE_VERSION: number; UPDATED_AT: string; PURGED: true };

/** A msg payload as the outbox stores it (EVENT_ID is added on insert). */
export type MsgPayload = MsgUpsert | MsgDeleted | MsgTombstone;

export function msgUpsert(a: { flid: string; stateVersion: number; updatedAt: string; msgId: number; type: string; styp: string; changed: string[] }): MsgUpsert {
  return { FLID: a.flid, STATE_VERSION: a.stateVersion, UPDATED_AT: a.updatedAt, OP: 'UPSERT', MSG_ID: a.msgId, TYPE: a.type, STYP: a.styp, CHANGED: a.changed };
}

export function msgDeleted(a: { flid: string; stateVersion: number; updatedAt: string; msgId: number }): MsgDeleted {
  return { FLID: a.flid, DELETED: true, STATE_VERSION: a.stateVersion, UPDATED_AT: a.updatedAt, MSG_ID: a.msgId };
}

export function msgTombstone(a: { flid: string; stateVersion: number; updatedAt: string }): MsgTombstone {
  return { FLID: a.flid, DELETED: true, STATE_VERSION: a.stateVersion, UPDATED_AT: a.updatedAt, PURGED: true };
}

/** Keys of a msg value in the order they are written (docs/asyncapi.yaml); any other key follows, sorted. */
export const MSG_KEY_ORDER = ['EVENT_ID', 'FLID', 'STATE_VERSION', 'UPDATED_AT', 'OP', 'DELETED', 'PURGED', 'MSG_ID', 'TYPE', 'STYP', 'CHANGED'] as const;

/**
 * The msg record value: the stored payload as compact JSON (JSON.stringify, the schd values'
 * style) with a fixed key order, whatever order Postgres' jsonb keeps the keys in.
 */
export function msgValue(payload: Record<string, unknown>): string {
  const known = new Set<string>(MSG_KEY_ORDER);
  const keys = [
    ...MSG_KEY_ORDER.filter((k) => k in payload),
    ...Object.keys(payload)
      .filter((k) => !known.has(k))
      .sort(),
  ];
  return JSON.stringify(Object.fromEntries(keys.map((k) => [k, payload[k]])));
}

/** The schd record value (C-9): `{"SCHD":{"RECS":n,"FLTR":[…]}}` from already serialised states. */
export function schdRecord(states: readonly string[]): string {
  return `{"SCHD":{"RECS":${states.length},"FLTR":[${states.join(',')}]}}`;
}

/** Header names of a state-topic record (docs/asyncapi.yaml): decimal strings. */
export const STATE_HEADERS = { eventId: 'EVENT_ID', stateVersion: 'STATE_VERSION' } as const;

/** A state-topic record: key FLID, value the complete state JSON or null (tombstone), the two headers. */
export interface StateRecord {
  key: string;
  value: string | null;
  headers: Record<string, string>;
}

/**
 * The state topic's record of one outbox row: `state` is the flight's complete state already
 * serialised as GET /flights/:flid answers it, or null when the flight is deleted or purged
 * (a Kafka tombstone: compaction then drops the key). EVENT_ID names the outbox row (a resend
 * carries the same one), STATE_VERSION the flight's version (the deletion's or the purge's for a
 * tombstone).
 */
export function stateRecord(a: { flid: string; eventId: number; stateVersion: number; state: string | null }): StateRecord {
  return { key: a.flid, value: a.state, headers: { [STATE_HEADERS.eventId]: String(a.eventId), [STATE_HEADERS.stateVersion]: String(a.stateVersion) } };
}

/** The W3C Trace Context headers of a record (docs/asyncapi.yaml TraceHeaders): lower case, as the W3C names them. */
export const TRACE_HEADERS = { parent: 'traceparent', state: 'tracestate' } as const;

/** The trace headers of a record from its span's stored context (`traceparent[ tracestate]`); none without one. */
export function traceHeaders(stored: string | null): Record<string, string> {
  if (!stored) return {};
  const space = stored.indexOf(' ');
  if (space < 0) return { [TRACE_HEADERS.parent]: stored };
  return { [TRACE_HEADERS.parent]: stored.slice(0, space), [TRACE_HEADERS.state]: stored.slice(space + 1) };
}
