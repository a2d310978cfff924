// POST /requests — an operator asks the AODB for reference data or one day's schedule.
// 202 {id, state} once the request is recorded (PENDING) and the `request` job is queued in the
// same transaction; 400 with the reason for a bad shape. Auth is wired by the api process.
import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { parseRequestSpec } from './message.ts';
import { createRequest } from './outbound.ts';

export interface RequestRoutesOptions {
  db: Kysely<any>;
  config: Config;
  clock: Clock;
  /** Queue graphile-worker's `request` job with the request (default true; needs its schema). */
  enqueue?: boolean;
}

export async function requestRoutes(app: FastifyInstance, opts: RequestRoutesOptions): Promise<void> {
  app.post('/requests', async (req, reply) => {
    const spec = parseRequestSpec(req.body);
    if ('error' in spec) return reply.code(400).send({ error: 'bad-request', reason: spec.error });
    const { request, expiredId } = await createRequest(opts.db, {
      config: opts.config,
      now: opts.clock.now(),
      spec,
      enqueue: opts.enqueue ?? true,
    });
    return reply.code(202).send({ id: request.id, state: request.state, kind: request.kind, seqn: request.seqn, expired: expiredId ?? null });
  });
}
