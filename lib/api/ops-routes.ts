// Operator actions over HTTP (the operator role, lib/access/routes.ts): replay, backfill-resume. The same functions back
// the CLI scripts and the graphile-worker tasks (lib/pipeline/operator.ts).
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/postgres.ts';
import * as ConsoleSql from '../sql/console.ts';
import { InboxUnavailable, replayReport, resumeReport } from '../pipeline/operator.ts';
import type { Inbox } from '../db/mysql.ts';
import { auditResult, auditTouched } from './audit.ts';
import { anyObject, bearer, clientErrors, dbIds, errors, JSON_BODY_LIMIT, str, responses } from './schema.ts';

const STATES = ['PENDING', 'FAILED', 'SUCCEEDED', 'SKIPPED', 'DEAD'] as const;
const idList = { type: 'array', items: { type: 'integer' } } as const;

export async function opsRoutes(app: FastifyInstance, o: { db: Db; clock: Clock; inbox: Inbox; timeoutMs: number; timeZone: string }) {
  clientErrors(app);
  app.post(
    '/ops/replay',
    {
      bodyLimit: JSON_BODY_LIMIT,
      config: { audit: 'replay' },
      schema: {
        summary: 'Replay FAILED / DEAD messages (back to PENDING)',
        security: bearer,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            ids: dbIds,
            state: { enum: ['FAILED', 'DEAD'] },
            reason: str({ maxLength: 64, description: 'reason prefix, e.g. EXHAUSTED, MALFORMED, PROTOCOL' }),
            force: { type: 'boolean' },
          },
        },
        response: responses({
          200: { type: 'object', required: ['replayed'], properties: { replayed: idList, untouched: { type: 'array', items: { type: 'string' } } }, additionalProperties: false },
          ...errors(400, 401, 413, 415, 429, 500, 503),
        }),
      },
    },
    async (req, reply) => {
      const body = req.body as { ids?: number[]; state?: 'FAILED' | 'DEAD'; reason?: string; force?: boolean };
      if (!body.ids?.length && !body.state) return reply.code(400).send({ error: 'bad-request', reason: 'give ids or state' });
      let r: Awaited<ReturnType<typeof replayReport>>;
      try {
        r = await replayReport(o.db, o.clock, body, { inbox: o.inbox, timeoutMs: o.timeoutMs });
      } catch (e) {
        if (!(e instanceof InboxUnavailable)) throw e;
        auditResult(req, { replayed: 0, error: e.message });
        return reply.code(503).send({ error: 'unavailable', reason: e.message });
      }
      auditResult(req, { replayed: r.done.length, untouched: r.untouched.length });
      auditTouched(req, { msgIds: r.done });
      return { replayed: r.done, untouched: r.untouched };
    },
  );
  app.post(
    '/ops/backfill-resume',
    {
      bodyLimit: JSON_BODY_LIMIT,
      config: { audit: 'backfill-resume' },
      schema: {
        summary: 'Resume abandoned backfills',
        security: bearer,
        body: { type: 'object', additionalProperties: false, properties: { ids: dbIds, reason: { enum: ['MISSING_ROW', 'TRANSIENT_DEADLINE'] } } },
        response: responses({
          200: { type: 'object', required: ['resumed'], properties: { resumed: idList, untouched: { type: 'array', items: { type: 'string' } } }, additionalProperties: false },
          ...errors(400, 401, 413, 415, 429, 500, 503),
        }),
      },
    },
    async (req, reply) => {
      const body = req.body as { ids?: number[]; reason?: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' };
      if (!body.ids?.length && !body.reason) return reply.code(400).send({ error: 'bad-request', reason: 'give ids or reason' });
      let r: Awaited<ReturnType<typeof resumeReport>>;
      try {
        r = await resumeReport({ db: o.db, inbox: o.inbox, clock: o.clock, timeoutMs: o.timeoutMs }, body);
      } catch (e) {
        if (!(e instanceof InboxUnavailable)) throw e;
        auditResult(req, { resumed: 0, error: e.message });
        return reply.code(503).send({ error: 'unavailable', reason: e.message });
      }
      auditResult(req, { resumed: r.done.length, untouched: r.untouched.length });
      auditTouched(req, { msgIds: r.done });
      return { resumed: r.done, untouched: r.untouched };
    },
  );
  app.get(
    '/ops/messages',
    {
      schema: {
        summary: 'Recent PROC_STATE rows, newest first',
        security: bearer,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { state: { enum: [...STATES] }, limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
        },
        response: responses({
          200: { type: 'object', required: ['messages'], properties: { messages: { type: 'array', items: anyObject } }, additionalProperties: false },
          ...errors(400, 401, 429, 500),
        }),
      },
    },
    async (req) => {
      const q = req.query as { state?: (typeof STATES)[number]; limit: number };
      return { messages: await ConsoleSql.listRecentMessages(o.db, q.state || null, q.limit, o.timeZone) };
    },
  );
}
