// Response schemas of the operator's view (lib/api/trace-routes.ts): the message trace
// (message-trace.ts), the flight timeline (flight/timeline.ts), and the console reads
// (console-data.ts). Documentation and contract: GET /openapi.json shows them and
// test/integration/openapi.test.ts validates real answers against them; answers are serialised
// with JSON.stringify, so a schema never drops a field (keep it in step with those functions).
import { PROC_STATES } from './console-data.ts';

const orNull = <T extends object>(s: T) => ({ anyOf: [s, { type: 'null' }] }) as const;
/** ISO-8601 in the airport's zone with its offset (flight/state.ts isoLocal). */
const time = { type: 'string', format: 'date-time' } as const;
const timeOrNull = orNull(time);
const text = { type: 'string' } as const;
const textOrNull = orNull(text);
const int = { type: 'integer' } as const;
const intOrNull = orNull(int);
const obj = (required: string[], properties: Record<string, unknown>) => ({ type: 'object', required, properties, additionalProperties: false }) as const;
const all = (properties: Record<string, unknown>) => obj(Object.keys(properties), properties);

/** A field before -> after: any JSON value of the flight state (null = absent). */
const fieldChange = all({ key: text, before: {}, after: {} });
const changeView = all({
  flid: text,
  stateVersion: int,
  msgId: int,
  kind: text,
  op: { enum: ['CREATE', 'UPDATE', 'DELETE', 'REVIVE'] },
  cause: { enum: ['MESSAGE', 'CASCADE', 'MAFL', 'SNAPSHOT_DELETE'] },
  at: time,
  changes: { type: 'array', items: fieldChange },
});

export const messageTraceSchema = all({
  msgId: int,
  found: { type: 'boolean' },
  timeZone: text,
  inbox: obj(['present'], {
    present: orNull({ type: 'boolean' }),
    error: text,
    received: textOrNull,
    processed: textOrNull,
    sender: textOrNull,
    sequence: intOrNull,
    type: textOrNull,
    subtype: textOrNull,
    status: textOrNull,
    chars: int,
    excerpt: text,
  }),
  identity: textOrNull,
  traceId: textOrNull,
  traceUrl: textOrNull,
  state: orNull(
    all({
      state: { enum: [...PROC_STATES] },
      reason: textOrNull,
      errorClass: textOrNull,
      kind: textOrNull,
      attempts: int,
      failuresInRow: int,
      failingSince: timeOrNull,
      nextAttemptAt: timeOrNull,
      received: textOrNull,
      enqueuedAt: timeOrNull,
      terminalAt: timeOrNull,
      appliedState: textOrNull,
      appliedReason: textOrNull,
    }),
  ),
  attempts: { type: 'array', items: all({ at: timeOrNull, errorClass: text, detail: textOrNull, nextState: text }) },
  flights: { type: 'array', items: changeView },
  events: {
    type: 'array',
    items: all({
      eventId: int,
      target: { enum: ['msg', 'schd'] },
      topic: text,
      flid: text,
      stateVersion: int,
      tombstone: { type: 'boolean' },
      state: text,
      attempts: int,
      createdAt: timeOrNull,
      sentAt: timeOrNull,
      partition: intOrNull,
      offset: textOrNull,
      lastError: textOrNull,
      heldBy: { ...intOrNull, description: 'a PENDING msg event waiting behind this DEAD event of its flight' },
    }),
  },
  backfill: orNull(
    all({
      status: {
        enum: ['WRITTEN', 'KEPT_EARLIER', 'ABANDONED', 'OWED', 'NOT_YET'],
        description: 'KEPT_EARLIER: the inbox already held a processing time from an earlier outcome (before a replay) and keeps it (docs/decisions.md)',
      },
      at: timeOrNull,
      inboxValue: { ...timeOrNull, description: 'the processing time the inbox holds (what the AODB sees), null when none or the inbox is unavailable' },
      nextAt: timeOrNull,
      attempts: int,
      abandonedAt: timeOrNull,
      abandonedReason: textOrNull,
    }),
  ),
});

export const timelineSchema = all({
  flid: text,
  timeZone: text,
  status: { enum: ['ACTIVE', 'DELETED', 'ARCHIVED'] },
  current: orNull(all({ stateVersion: int, operationDay: textOrNull, createdAt: timeOrNull, updatedAt: timeOrNull, deletedAt: timeOrNull, lastMsgId: intOrNull })),
  archived: { type: 'array', items: all({ stateVersion: int, operationDay: textOrNull, flightState: text, purgeRule: text, archivedAt: timeOrNull }) },
  versions: {
    type: 'array',
    items: all({
      stateVersion: int,
      op: { ...text, description: 'CREATE/UPDATE/DELETE/REVIVE from the change record; UPSERT/DELETE/PURGE when only the outbox event is left' },
      cause: orNull({ enum: ['MESSAGE', 'CASCADE', 'MAFL', 'SNAPSHOT_DELETE'] }),
      message: orNull(all({ id: int, kind: textOrNull, received: textOrNull, state: textOrNull })),
      at: timeOrNull,
      source: { enum: ['change', 'event'] },
      changes: { type: 'array', items: fieldChange },
      changedKeys: { type: 'array', items: text },
    }),
  },
});

export const statesSchema = all({
  timeZone: text,
  states: {
    type: 'array',
    items: all({ state: { enum: [...PROC_STATES] }, count: int, reasons: { type: 'array', items: all({ reason: { ...text, description: "reason class; '' = no reason" }, count: int }) } }),
  },
});

export const listSchema = all({
  state: { enum: [...PROC_STATES] },
  reason: textOrNull,
  messages: {
    type: 'array',
    items: all({ msgId: int, state: text, kind: textOrNull, reason: textOrNull, needsForce: { type: 'boolean' }, attempts: int, enqueuedAt: timeOrNull, terminalAt: timeOrNull, backfill: textOrNull }),
  },
  nextBefore: { ...intOrNull, description: 'pass as `before` for the next page; null = last page' },
});

const perMinute = (items: object) => ({ type: 'array', items, minItems: 60, maxItems: 60 }) as const;
export const lastHourSchema = all({
  timeZone: text,
  now: time,
  minutes: perMinute(time),
  backlog: perMinute(int),
  applied: all({ SUCCEEDED: perMinute(int), SKIPPED: perMinute(int), DEAD: perMinute(int) }),
  latencySeconds: all({ p50: perMinute(orNull({ type: 'number' })), p95: perMinute(orNull({ type: 'number' })), max: perMinute(orNull({ type: 'number' })) }),
  dispatchPending: perMinute(int),
});
