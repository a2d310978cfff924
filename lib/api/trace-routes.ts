// The operator's view over HTTP (issue 12), bearer token like every /ops route:
//   GET /ops/messages/:id          → the message trace (lib/api/message-trace.ts); 404 unknown id
//   GET /flights/:flid/timeline    → the flight timeline (lib/flight/timeline.ts); 404 nothing retained
//   GET /ops/states                → counts per state and reason class
//   GET /ops/list?state=&reason=&before=&limit=  → one page of messages of a state (and reason class)
//   GET /ops/last-hour             → the console's charts: per minute of the last hour
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../core/clock.ts';
import type { Config } from '../core/config.ts';
import type { Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import { flightTimeline } from '../flight/timeline.ts';
import { lastHour, listMessages, PROC_STATES, stateCounts, type ProcStateName } from './console-data.ts';
import { messageTrace } from './message-trace.ts';

export interface TraceRoutesOptions {
  db: Db;
  inbox: Inbox;
  clock: Clock;
  config: Config;
  guard: (req: never, reply: never) => Promise<unknown>;
}

const idParam = { type: 'object', required: ['id'], additionalProperties: false, properties: { id: { type: 'string', pattern: '^[0-9]{1,15}$' } } } as const;
const flidParam = { type: 'object', required: ['flid'], additionalProperties: false, properties: { flid: { type: 'string', pattern: '^[0-9]{1,30}$' } } } as const;
const noQuery = { type: 'object', additionalProperties: false, properties: {} } as const;
const listQuery = {
  type: 'object',
  required: ['state'],
  additionalProperties: false,
  properties: {
    state: { enum: [...PROC_STATES] },
    reason: { type: 'string', maxLength: 60 },
    before: { type: 'string', pattern: '^[0-9]{1,15}$' },
    limit: { type: 'string', pattern: '^[0-9]{1,4}$' },
  },
} as const;

export const LIST_MAX = 500;

export async function traceRoutes(app: FastifyInstance, o: TraceRoutesOptions): Promise<void> {
  const tz = o.config['msgx.airport.timezone'];
  const guard = o.guard as never;
  const deps = {
    db: o.db,
    inbox: o.inbox,
    timeZone: tz,
    topics: { msg: o.config['msgx.kafka.msg-topic'], schd: o.config['msgx.kafka.schd-topic'] },
    ioTimeoutMs: o.config['msgx.io.timeout'],
  };

  app.get<{ Params: { id: string } }>('/ops/messages/:id', { preHandler: guard, schema: { params: idParam, querystring: noQuery } }, async (req, reply) => {
    const id = Number(req.params.id);
    const t = await messageTrace(deps, id);
    if (!t.found) return reply.code(404).send({ error: 'not-found', reason: `no message ${id} in the inbox or in PROC_STATE` });
    return t;
  });

  app.get<{ Params: { flid: string } }>('/flights/:flid/timeline', { preHandler: guard, schema: { params: flidParam, querystring: noQuery } }, async (req, reply) => {
    const flid = req.params.flid.replace(/^0+(?=\d)/, '');
    const t = await flightTimeline(o.db, flid, tz);
    if (!t) return reply.code(404).send({ error: 'not-found', reason: `nothing is retained about flight ${flid}` });
    return t;
  });

  app.get('/ops/states', { preHandler: guard, schema: { querystring: noQuery } }, async () => ({ timeZone: tz, ...(await stateCounts(o.db)) }));

  app.get<{ Querystring: { state: ProcStateName; reason?: string; before?: string; limit?: string } }>(
    '/ops/list',
    { preHandler: guard, schema: { querystring: listQuery } },
    async (req, reply) => {
      const q = req.query;
      const limit = q.limit === undefined ? 50 : Number(q.limit);
      if (limit < 1 || limit > LIST_MAX) return reply.code(400).send({ error: 'bad-request', reason: `limit must be an integer 1–${LIST_MAX}` });
      return listMessages(o.db, { state: q.state, reason: q.reason, before: q.before === undefined ? undefined : Number(q.before), limit }, tz);
    },
  );

  app.get('/ops/last-hour', { preHandler: guard, schema: { querystring: noQuery } }, async () => lastHour(o.db, o.clock, tz));
}
