// POST /requests — an operator asks the AODB for reference data or one day's schedule.
// 202 {id, state} once the request is recorded (PENDING) and the `request` job is queued in the
// same transaction; 400 with the reason for a bad shape. Auth is wired by the api process.
// GET /requests/:id and GET /requests?state=&limit= — what became of requests: PENDING, SENT,
// DONE, EXPIRED or FAILED, with the AODB's error text of a FAILED one.
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/postgres.ts';
import type { Clock } from '../core/clock.ts';
import { auditResult, auditTouched } from './audit.ts';
import { bearer, clientErrors, dbId, errors, JSON_BODY_LIMIT, str, responses } from './schema.ts';

const REQUEST_STATES = ['PENDING', 'SENT', 'DONE', 'EXPIRED', 'FAILED'] as const;
const time = { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'null' }] } as const;
/** One request as GET /requests answers it (times in UTC, with their Z). */
const requestBody = {
  type: 'object',
  required: ['id', 'kind', 'state', 'seqn', 'createdAt', 'errorText'],
  additionalProperties: false,
  properties: {
    id: dbId,
    kind: { enum: ['RQRD', 'RQFD'] },
    rtype: { type: ['string', 'null'] },
    operationDay: { type: ['string', 'null'] },
    state: { enum: [...REQUEST_STATES] },
    seqn: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    attemptedAt: time,
    sentAt: time,
    closedAt: time,
    closedByMsgId: { anyOf: [dbId, { type: 'null' }] },
    errorText: { type: ['string', 'null'], description: "FAILED: the AODB's EROR text; EXPIRED: what superseded it" },
    coutmsgsId: { anyOf: [dbId, { type: 'null' }] },
  },
} as const;
import { parseRequestSpec } from '../requests/message.ts';
import { createRequest, type RequestSettings } from '../requests/outbound.ts';
import { getRequest, listRequests, requestView, type RequestState } from '../requests/track.ts';

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
      auditTouched(req, { requestIds: [request.id] });
      return reply.code(202).send({ id: request.id, state: request.state, kind: request.kind, seqn: request.seqn, expired: expiredId ?? null });
    },
  );
  app.get(
    '/requests/:id',
    {
      schema: {
        summary: 'One request to the AODB: its state (PENDING, SENT, DONE, EXPIRED, FAILED), times and error text',
        security: bearer,
        params: { type: 'object', required: ['id'], additionalProperties: false, properties: { id: dbId } },
        response: responses({ 200: requestBody, ...errors(400, 401, 404, 429, 500) }),
      },
    },
    async (req, reply) => {
      const { id } = req.params as { id: number };
      const r = await getRequest(opts.db, id);
      if (!r) return reply.code(404).send({ error: 'not-found', reason: `no request ${id} (never made, or removed by retention after msgx.req-track.retention)` });
      return requestView(r);
    },
  );
  app.get(
    '/requests',
    {
      schema: {
        summary: 'The newest requests to the AODB, optionally of one state, newest first',
        security: bearer,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { state: { enum: [...REQUEST_STATES] }, limit: { type: 'integer', minimum: 1, maximum: 500, default: 50 } },
        },
        response: responses({
          200: { type: 'object', required: ['requests'], additionalProperties: false, properties: { requests: { type: 'array', items: requestBody } } },
          ...errors(400, 401, 429, 500),
        }),
      },
    },
    async (req) => {
      const q = req.query as { state?: RequestState; limit: number };
      return { requests: (await listRequests(opts.db, q)).map(requestView) };
    },
  );
}
