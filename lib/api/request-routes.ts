// POST /requests — an operator asks the AODB for reference data or one day's schedule.
// 202 {id, state} once the request is recorded (PENDING) and the `request` job is queued in the
// same transaction; 400 with the reason for a bad shape. Auth is wired by the api process.
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/postgres.ts';
import type { Clock } from '../core/clock.ts';
import { auditResult } from './audit.ts';
import { bearer, clientErrors, dbId, errors, JSON_BODY_LIMIT, str, responses } from './schema.ts';
import { parseRequestSpec } from '../requests/message.ts';
import { createRequest, type RequestSettings } from '../requests/outbound.ts';

export interface RequestRoutesOptions extends RequestSettings {
  db: Db;
  clock: Clock;
  /** Queue graphile-worker's `request` job with the request (default true; needs its schema). */
  enqueue?: boolean;
}

const body = {
  type: 'object',
  required: ['type'],
  additionalProperties: false,
  description: '{"type":"RQRD","rtype":"SLST"} or {"type":"RQFD","operationDay":"2026-12-01"}',
  properties: {
    type: { enum: ['RQRD', 'RQFD'] },
    rtype: str({ minLength: 1, maxLength: 8, pattern: '^[A-Za-z ]+$', description: 'reference data type (RQRD)' }),
    operationDay: str({ maxLength: 10, pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'YYYY-MM-DD (RQFD)' }),
  },
} as const;

const accepted = {
  type: 'object',
  required: ['id', 'state', 'kind', 'seqn', 'expired'],
  properties: {
    id: dbId,
    state: { type: 'string' },
    kind: { enum: ['RQRD', 'RQFD'] },
    seqn: { type: 'integer' },
    expired: { anyOf: [dbId, { type: 'null' }] },
  },
  additionalProperties: false,
} as const;

export async function requestRoutes(app: FastifyInstance, opts: RequestRoutesOptions): Promise<void> {
  clientErrors(app);
  app.post(
    '/requests',
    {
      bodyLimit: JSON_BODY_LIMIT,
      config: { audit: 'request' },
      schema: { summary: 'Ask the AODB for reference data (RQRD) or a day’s schedule (RQFD)', security: bearer, body, response: responses({ 202: accepted, ...errors(400, 401, 413, 415, 429, 500) }) },
    },
    async (req, reply) => {
      const spec = parseRequestSpec(req.body);
      if ('error' in spec) return reply.code(400).send({ error: 'bad-request', reason: spec.error });
      const { request, expiredId } = await createRequest(opts.db, {
        requests: opts.requests,
        airport: opts.airport,
        now: opts.clock.now(),
        spec,
        enqueue: opts.enqueue ?? true,
      });
      auditResult(req, { id: request.id, kind: request.kind });
      return reply.code(202).send({ id: request.id, state: request.state, kind: request.kind, seqn: request.seqn, expired: expiredId ?? null });
    },
  );
}
