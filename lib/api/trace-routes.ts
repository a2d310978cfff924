// The operator's view over HTTP, for a viewer like every /ops read (lib/access/routes.ts):
//   GET /ops/messages/:id          → the message trace (lib/api/message-trace.ts); 404 unknown id
//   GET /flights/:flid/timeline    → the flight timeline (lib/flight/timeline.ts); 404 nothing retained
//   GET /ops/states                → counts per state and reason class
//   GET /ops/list?state=&reason=&before=&limit=  → one page of messages of a state (and reason class)
//   GET /ops/last-hour             → the console's charts: per minute of the last hour
// Registered under the api's rules (lib/app/api.ts): the access gate before any parameter is
// looked at, full parameter schemas, and response schemas (lib/api/trace-schemas.ts).
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../core/clock.ts';
import type { Slices } from '../core/config.ts';
import type { Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import { flightTimeline } from '../flight/timeline.ts';
import { lastHour, listMessages, PROC_STATES, stateCounts, type ProcStateName } from './console-data.ts';
import { messageTrace } from './message-trace.ts';
import { bearer, clientErrors, dbId, errors, flid, noQuery, responses, str } from './schema.ts';
import { lastHourSchema, listSchema, messageTraceSchema, statesSchema, timelineSchema } from './trace-schemas.ts';

export interface TraceRoutesOptions {
  db: Db;
  inbox: Inbox;
  clock: Clock;
  /** Airport zone, topic names, I/O timeout. */
  settings: Slices['trace'];
}

export const LIST_MAX = 500;

const params = (name: string, schema: object) => ({ type: 'object', required: [name], additionalProperties: false, properties: { [name]: schema } }) as const;
const listQuery = {
  type: 'object',
  required: ['state'],
  additionalProperties: false,
  properties: {
    state: { enum: [...PROC_STATES] },
    // any text but NUL: a class is cut from stored reasons, which may hold a tab or newline
    reason: str({ maxLength: 60, pattern: '^[^\\u0000]*$', description: "reason class (the text before the first ':'); '' = messages without a reason" }),
    before: { ...dbId, description: 'cursor: only messages with a smaller id (nextBefore of the previous page)' },
    limit: { type: 'integer', minimum: 1, maximum: LIST_MAX, default: 50 },
  },
} as const;

export async function traceRoutes(app: FastifyInstance, o: TraceRoutesOptions): Promise<void> {
  clientErrors(app);
  const tz = o.settings.timezone;
  const deps = {
    db: o.db,
    inbox: o.inbox,
    timeZone: tz,
    topics: { msg: o.settings.msgTopic, schd: o.settings.schdTopic },
    ioTimeoutMs: o.settings.timeoutMs,
    traceLink: o.settings.traceLink,
  };

  app.get<{ Params: { id: number } }>(
    '/ops/messages/:id',
    {
      schema: {
        summary: 'What happened to one inbox message: inbox row, state, attempts, flights changed, outbox events, backfill',
        security: bearer,
        params: params('id', { ...dbId, description: 'inbox message id (CMINMSGS_ID)' }),
        querystring: noQuery,
        response: responses({ 200: messageTraceSchema, ...errors(400, 401, 404, 429, 500) }),
      },
    },
    async (req, reply) => {
      const id = req.params.id;
      const t = await messageTrace(deps, id);
      if (!t.found) return reply.code(404).send({ error: 'not-found', reason: `no message ${id} in the inbox or in PROC_STATE` });
      return t;
    },
  );

  app.get<{ Params: { flid: string } }>(
    '/flights/:flid/timeline',
    {
      schema: {
        summary: 'Every retained version of a flight, with the message that made it and the fields it changed',
        security: bearer,
        params: params('flid', flid),
        querystring: noQuery,
        response: responses({ 200: timelineSchema, ...errors(400, 401, 404, 429, 500) }),
      },
    },
    async (req, reply) => {
      const id = req.params.flid.replace(/^0+(?=\d)/, '');
      const t = await flightTimeline(o.db, id, tz);
      if (!t) return reply.code(404).send({ error: 'not-found', reason: `nothing is retained about flight ${id}` });
      return t;
    },
  );

  app.get(
    '/ops/states',
    {
      schema: { summary: 'Messages per state and reason class', security: bearer, querystring: noQuery, response: responses({ 200: statesSchema, ...errors(400, 401, 429, 500) }) },
    },
    async () => ({ timeZone: tz, ...(await stateCounts(o.db)) }),
  );

  app.get<{ Querystring: { state: ProcStateName; reason?: string; before?: number; limit: number } }>(
    '/ops/list',
    {
      schema: {
        summary: 'One page of the messages of a state (and reason class), newest first',
        security: bearer,
        querystring: listQuery,
        response: responses({ 200: listSchema, ...errors(400, 401, 429, 500) }),
      },
    },
    async (req) => {
      const q = req.query;
      return listMessages(o.db, { state: q.state, reason: q.reason, before: q.before, limit: q.limit }, tz);
    },
  );

  app.get(
    '/ops/last-hour',
    {
      schema: { summary: "The console's charts: per minute of the last hour", security: bearer, querystring: noQuery, response: responses({ 200: lastHourSchema, ...errors(400, 401, 429, 500) }) },
    },
    async () => lastHour(o.db, o.clock, tz),
  );
}
