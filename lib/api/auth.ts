// Bearer-token authentication of the api (issue 15 items 1, 4, 5; issue 10 item 6).
//
// - Only `Authorization: Bearer <token>`; the token is compared as fixed-size SHA-256 digests
//   with timingSafeEqual, so neither its content nor its length leaks through timing.
// - The guard is an `onRequest` hook: it runs before Fastify reads or parses a body, so an
//   unauthenticated client never gets its body buffered or parsed (Node discards what follows
//   the 401 without buffering it; the request timeout bounds a body that never ends).
// - Outside development mode a token of at least MIN_TOKEN_LENGTH characters is required; in
//   development mode (asked for with MSGX_DEV_MODE=true, `npm start` does) an empty token means
//   the token `dev`.
// - Every rejected token is an audit line; repeated failures from one address are rate-limited
//   (@fastify/rate-limit): after AUTH_FAILURES_PER_MINUTE failures that address gets 429 on
//   every guarded route, a right token included, until the window ends.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Slices } from '../core/config.ts';
import type { AuditLog } from './audit.ts';

export const MIN_TOKEN_LENGTH = 32;
export const AUTH_FAILURES_PER_MINUTE = 20;

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Who made a request, for the audit log: "dev" or "token:<first 8 hex digits of the token's SHA-256>". */
const WHO = new WeakMap<FastifyRequest, string>();
export const whoOf = (req: FastifyRequest): string | null => WHO.get(req) ?? null;

export type Guard = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The api's token from the configuration; throws (start-up error) when the rules are not met. */
export function apiToken(http: Slices['http']): { token: string; who: string; dev: boolean } {
  const dev = http.devMode;
  const token = http.apiToken;
  if (!dev) {
    if (!token) throw new Error('MSGX_API_TOKEN is required outside development mode (set it, or MSGX_DEV_MODE=true for local use)');
    if (token.length < MIN_TOKEN_LENGTH) throw new Error(`MSGX_API_TOKEN must have at least ${MIN_TOKEN_LENGTH} characters outside development mode (e.g. openssl rand -hex 32)`);
    if (!/^[\x21-\x7e]+$/.test(token)) throw new Error('MSGX_API_TOKEN must be printable ASCII without spaces');
  }
  if (dev && !['127.0.0.1', '::1', 'localhost'].includes(http.host)) throw new Error(`development mode (MSGX_DEV_MODE=true) only on a loopback address, not msgx.http.host=${http.host}`);
  const effective = token || 'dev';
  return { token: effective, dev, who: token ? `token:${digest(token).toString('hex').slice(0, 8)}` : 'dev' };
}

/**
 * The guard for every token route: put it in the route's `onRequest` (never `preHandler`, which
 * runs after the body was read) or add it as an `onRequest` hook of a scoped plugin.
 * Needs @fastify/rate-limit registered on `app` (global: false).
 */
export function bearerGuard(app: FastifyInstance, o: { token: string; who: string; audit: AuditLog }): Guard {
  const want = digest(o.token);
  const countFailure = app.createRateLimit({ max: AUTH_FAILURES_PER_MINUTE, timeWindow: 60_000 });
  const blocked = new Map<string, number>(); // address → blocked until (ms)
  const refuse = (req: FastifyRequest, reply: FastifyReply, status: 401 | 429, why: string, retryAfter?: number) => {
    o.audit.line(req, 'auth', { route: req.routeOptions.url ?? req.url.split('?')[0], method: req.method, ip: req.ip }, { status, reason: why });
    if (retryAfter) reply.header('retry-after', String(retryAfter));
    return reply
      .code(status)
      .send(
        status === 429
          ? { error: 'too-many-requests', reason: `too many failed authentications from ${req.ip}; retry in ${retryAfter} s` }
          : { error: 'unauthorized', reason: 'missing or wrong bearer token' },
      );
  };
  return async (req, reply) => {
    const now = Date.now();
    const until = blocked.get(req.ip);
    if (until !== undefined) {
      if (until > now) return refuse(req, reply, 429, 'rate-limited', Math.ceil((until - now) / 1000));
      blocked.delete(req.ip);
    }
    const m = /^Bearer ([\x21-\x7e]{1,512})$/i.exec(req.headers.authorization ?? '');
    const ok = m !== null && timingSafeEqual(digest(m[1]), want);
    if (ok) {
      WHO.set(req, o.who);
      return;
    }
    const limit = await countFailure(req);
    if (!limit.isAllowed && limit.isExceeded) {
      if (blocked.size > 10_000) for (const [k, t] of blocked) if (t <= now) blocked.delete(k);
      blocked.set(req.ip, now + limit.ttl);
      return refuse(req, reply, 429, 'rate-limited', limit.ttlInSeconds);
    }
    return refuse(req, reply, 401, req.headers.authorization ? (m ? 'wrong token' : 'not "Bearer <token>"') : 'no Authorization header');
  };
}
