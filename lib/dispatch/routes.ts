// Dead-letter actions over HTTP (fastify plugin; the api registers it behind the bearer guard):
//   POST /ops/dispatch-replay  {eventIds: [...]} | {flid} | {all: true, target?}  → {replayed: [eventId…]}
//   POST /ops/dispatch-skip    same body                                          → {skipped: [eventId…]}
//   GET  /ops/dispatch/dead?target=msg|schd&limit=100                               → {dead: [...]}
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/postgres.ts';
import { dispatchReplay, dispatchSkip, type ReplaySelector } from './actions.ts';
import { listDead } from './outbox.ts';
import type { Target } from './metrics.ts';

const body = {
  type: 'object',
  additionalProperties: false,
  properties: {
    eventIds: { type: 'array', items: { type: 'integer', minimum: 1 }, minItems: 1, maxItems: 10000 },
    flid: { type: 'string', minLength: 1, maxLength: 32 },
    all: { type: 'boolean', const: true },
    target: { enum: ['msg', 'schd'] },
  },
} as const;

const oneOf = (b: ReplaySelector) => [b.eventIds?.length, b.flid !== undefined, b.all].filter(Boolean).length === 1;

export async function dispatchRoutes(app: FastifyInstance, o: { db: Db }): Promise<void> {
  app.post('/ops/dispatch-replay', { schema: { body } }, async (req, reply) => {
    const b = req.body as ReplaySelector;
    if (!oneOf(b)) return reply.code(400).send({ error: 'bad-request', reason: 'give exactly one of eventIds, flid, all' });
    return { replayed: await dispatchReplay(o.db, b) };
  });
  app.post('/ops/dispatch-skip', { schema: { body } }, async (req, reply) => {
    const b = req.body as ReplaySelector;
    if (!oneOf(b)) return reply.code(400).send({ error: 'bad-request', reason: 'give exactly one of eventIds, flid, all' });
    return { skipped: await dispatchSkip(o.db, b) };
  });
  app.get(
    '/ops/dispatch/dead',
    { schema: { querystring: { type: 'object', properties: { target: { enum: ['msg', 'schd'] }, limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } } } } },
    async (req) => {
      const q = req.query as { target?: Target; limit: number };
      return { dead: await listDead(o.db, { target: q.target, limit: q.limit }) };
    },
  );
}
