// Dead-letter actions over HTTP (fastify plugin; operator actions, lib/access/routes.ts):
//   POST /ops/dispatch-replay  {eventIds: [...]} | {flid} | {all: true, target?}  → {replayed: [eventId…], untouched: [why…]}
//   POST /ops/dispatch-skip    same body                                          → {skipped: [eventId…], untouched: [why…]}
//   GET  /ops/dispatch/dead?target=msg|schd&limit=100                               → {dead: [...]}
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/postgres.ts';
import { auditResult, auditTouched } from './audit.ts';
import { anyObject, bearer, clientErrors, dbIds, errors, flid, JSON_BODY_LIMIT, responses } from './schema.ts';
import { dispatchReplayReport, dispatchSkipReport, type ReplaySelector } from '../dispatch/actions.ts';
import { listDead } from '../dispatch/outbox.ts';
import type { Target } from '../dispatch/plan.ts';

const body = {
  type: 'object',
  additionalProperties: false,
  description: 'exactly one of eventIds, flid, all',
  properties: {
    eventIds: dbIds,
    flid,
    all: { type: 'boolean', const: true },
    target: { enum: ['msg', 'schd', 'state'] },
  },
} as const;
const ids = (name: string) => ({
  type: 'object',
  required: [name, 'untouched'],
  properties: {
    [name]: { type: 'array', items: { type: 'integer' } },
    untouched: { type: 'array', items: { type: 'string' }, description: 'why named events were left (not DEAD, held behind another, no such event)' },
  },
  additionalProperties: false,
});

const oneOf = (b: ReplaySelector) => [b.eventIds?.length, b.flid !== undefined, b.all].filter(Boolean).length === 1;

export async function dispatchRoutes(app: FastifyInstance, o: { db: Db }): Promise<void> {
  clientErrors(app);
  app.post(
    '/ops/dispatch-replay',
    {
      bodyLimit: JSON_BODY_LIMIT,
      config: { audit: 'dispatch-replay' },
      schema: { summary: 'Send DEAD outbox events again, in order', security: bearer, body, response: responses({ 200: ids('replayed'), ...errors(400, 401, 413, 415, 429, 500) }) },
    },
    async (req, reply) => {
      const b = req.body as ReplaySelector;
      if (!oneOf(b)) return reply.code(400).send({ error: 'bad-request', reason: 'give exactly one of eventIds, flid, all' });
      const r = await dispatchReplayReport(o.db, b);
      auditResult(req, { replayed: r.done.length, untouched: r.untouched.length });
      auditTouched(req, { eventIds: r.done });
      return { replayed: r.done, untouched: r.untouched };
    },
  );
  app.post(
    '/ops/dispatch-skip',
    {
      bodyLimit: JSON_BODY_LIMIT,
      config: { audit: 'dispatch-skip' },
      schema: { summary: 'Give up on DEAD outbox events (kept as SKIPPED)', security: bearer, body, response: responses({ 200: ids('skipped'), ...errors(400, 401, 413, 415, 429, 500) }) },
    },
    async (req, reply) => {
      const b = req.body as ReplaySelector;
      if (!oneOf(b)) return reply.code(400).send({ error: 'bad-request', reason: 'give exactly one of eventIds, flid, all' });
      const r = await dispatchSkipReport(o.db, b);
      auditResult(req, { skipped: r.done.length, untouched: r.untouched.length });
      auditTouched(req, { eventIds: r.done });
      return { skipped: r.done, untouched: r.untouched };
    },
  );
  app.get(
    '/ops/dispatch/dead',
    {
      schema: {
        summary: 'DEAD outbox events',
        security: bearer,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { target: { enum: ['msg', 'schd', 'state'] }, limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
        },
        response: responses({ 200: { type: 'object', required: ['dead'], properties: { dead: { type: 'array', items: anyObject } }, additionalProperties: false }, ...errors(400, 401, 429, 500) }),
      },
    },
    async (req) => {
      const q = req.query as { target?: Target; limit: number };
      return { dead: await listDead(o.db, { target: q.target, limit: q.limit }) };
    },
  );
}
