// Bearer-token authentication of the api.
//
// - Only `Authorization: Bearer <token>`; the token is compared as fixed-size SHA-256 digests
//   with timingSafeEqual, so neither its content nor its length leaks through timing.
// - The guard is an `onRequest` hook: it runs before Fastify reads or parses a body, so an
//   unauthenticated client never gets its body buffered or parsed.
// - Outside development mode a token of at least MIN_TOKEN_LENGTH characters is required; in
//   development mode (asked for with MSGX_DEV_MODE=true, `npm start` does) an empty token means
//   the token `dev`.
// - A right token always passes, whatever happened before from its address. Only failed
//   authentications are counted, per client address (req.ip: the TCP peer, or behind the reverse
//   proxy the address it forwards, msgx.http.trust-proxy): after AUTH_FAILURES_PER_MINUTE in a
//   minute, that address's further wrong or missing tokens get 429 instead of 401 until the
//   minute ends. One anonymous client behind the proxy therefore never locks an operator out.
// - A refused request (401/429) closes its connection after the answer: its body is never read,
//   and a slow or endless body does not keep the connection for the request timeout.
// - Every refusal goes to the audit log, at most one line per address per minute
//   (lib/api/audit.ts refusal(): the lines left out are counted in the next one).
import { systemClock } from '../core/clock.ts';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Slices } from '../core/config.ts';
import type { AuditLog } from './audit.ts';
import { setWho } from './who.ts';

export const MIN_TOKEN_LENGTH = 32;
export const AUTH_FAILURES_PER_MINUTE = 20;

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

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

/** Failed authentications per address in fixed one-minute windows (bounded: at most MAX_TRACKED addresses). */
class FailureCounter {
  private windows = new Map<string, { start: number; n: number }>();
  private readonly limit: number;
  private readonly windowMs: number;
  constructor(limit: number, windowMs: number) {
    this.limit = limit;
    this.windowMs = windowMs;
  }
  /** Counts one failure of `key` at `now`; the seconds to wait when over the limit, else 0. */
  fail(key: string, now: number): number {
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      if (!w && this.windows.size >= MAX_TRACKED) this.prune(now);
      w = { start: now, n: 0 };
      this.windows.set(key, w);
    }
    w.n++;
    return w.n > this.limit ? Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000)) : 0;
  }
  private prune(now: number) {
    for (const [k, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(k);
    // Still full (a flood from very many addresses): forget the oldest half; they start again.
    if (this.windows.size >= MAX_TRACKED) for (const k of [...this.windows.keys()].slice(0, MAX_TRACKED / 2)) this.windows.delete(k);
  }
}
const MAX_TRACKED = 10_000;

/**
 * The guard for every token route: put it in the route's `onRequest` (never `preHandler`, which
 * runs after the body was read) or add it as an `onRequest` hook of a scoped plugin.
 */
export function bearerGuard(_app: FastifyInstance, o: { token: string; who: string; audit: AuditLog; now?: () => number }): Guard {
  const want = digest(o.token);
  const now = o.now ?? (() => systemClock.now().getTime());
  const failures = new FailureCounter(AUTH_FAILURES_PER_MINUTE, 60_000);
  return async (req, reply) => {
    const m = /^Bearer ([\x21-\x7e]{1,512})$/i.exec(req.headers.authorization ?? '');
    if (m !== null && timingSafeEqual(digest(m[1]), want)) {
      setWho(req, o.who);
      return;
    }
    const why = req.headers.authorization ? (m ? 'wrong token' : 'not "Bearer <token>"') : 'no Authorization header';
    const retryAfter = failures.fail(req.ip, now());
    const status = retryAfter ? 429 : 401;
    o.audit.refusal(req, req.ip, 'auth', { route: req.routeOptions.url ?? req.url.split('?')[0], method: req.method, ip: req.ip }, { status, reason: retryAfter ? 'rate-limited' : why });
    // The body (if any) is never read: answer and close the connection.
    reply.header('connection', 'close');
    if (retryAfter) reply.header('retry-after', String(retryAfter));
    return reply
      .code(status)
      .send(
        status === 429
          ? { error: 'too-many-requests', reason: `too many failed authentications from ${req.ip}; a right token still passes; retry in ${retryAfter} s` }
          : { error: 'unauthorized', reason: 'missing or wrong bearer token' },
      );
  };
}
