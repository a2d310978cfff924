// Bearer-token guard for every mutating/admin route. Constant-time compare.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

export function bearerGuard(token: string) {
  const want = Buffer.from(token);
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const got = Buffer.from((req.headers.authorization ?? '').replace(/^Bearer\s+/i, ''));
    if (!token || got.length !== want.length || !timingSafeEqual(got, want)) {
      return reply.code(401).send({ error: 'unauthorized', reason: 'missing or wrong bearer token' });
    }
  };
}
