// Operator actions over HTTP (bearer token): replay, backfill-resume. The same functions back
// the CLI scripts and the graphile-worker tasks (lib/pipeline/operator.ts).
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/postgres.ts';
import { replayReport, resumeReport } from '../pipeline/operator.ts';

const ids = { type: 'array', items: { type: 'integer', minimum: 1 }, maxItems: 10000 } as const;

export async function opsRoutes(app: FastifyInstance, o: { db: Db; clock: Clock; guard: (req: never, reply: never) => Promise<unknown> }) {
  app.post(
    '/ops/replay',
    {
      preHandler: o.guard as never,
      schema: {
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { ids, state: { enum: ['FAILED', 'DEAD'] }, reason: { type: 'string' }, force: { type: 'boolean' } },
        },
      },
    },
    async (req, reply) => {
      const body = req.body as { ids?: number[]; state?: 'FAILED' | 'DEAD'; reason?: string; force?: boolean };
      if (!body.ids?.length && !body.state) return reply.code(400).send({ error: 'bad-request', reason: 'give ids or state' });
      const r = await replayReport(o.db, o.clock, body);
      return { replayed: r.done, untouched: r.untouched };
    },
  );
  app.post(
    '/ops/backfill-resume',
    {
      preHandler: o.guard as never,
      schema: { body: { type: 'object', additionalProperties: false, properties: { ids, reason: { enum: ['MISSING_ROW', 'TRANSIENT_DEADLINE'] } } } },
    },
    async (req, reply) => {
      const body = req.body as { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' };
      if (!body.ids?.length && !body.reason) return reply.code(400).send({ error: 'bad-request', reason: 'give ids or reason' });
      const r = await resumeReport(o.db, o.clock, body);
      return { resumed: r.done, untouched: r.untouched };
    },
  );
  app.get('/ops/messages', { preHandler: o.guard as never }, async (req) => {
    const q = req.query as { state?: string; limit?: string };
    let sel = o.db.selectFrom('proc_state').selectAll().orderBy('msg_id', 'desc').limit(Math.min(Number(q.limit ?? 100) || 100, 1000));
    if (q.state) sel = sel.where('state', '=', q.state as never);
    return { messages: await sel.execute() };
  });
}
