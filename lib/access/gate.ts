// The gate of every HTTP request of every process, before its body is read (the api's fastify
// onRequest hook, the status server's handler): the Host and Origin allowlist, who is calling
// (identity.ts), and whether the route's role (routes.ts) lets them. The decision is data: allow
// (with the principal, and whether /healthz may show its reasons) or refuse with status and body.
//   400 bad-host     Host not an allowed name (DNS rebinding: a page of attacker.example resolving
//                    to this address) — loopback names always, else msgx.http.allowed-hosts
//   403 bad-origin   a browser's Origin that is not an allowed name (a cross-site request)
//   401              no or a wrong credential on a route that needs a role; after
//                    AUTH_FAILURES_PER_MINUTE failures a minute from one address, 429 until the
//                    minute ends (a right credential always passes)
//   403 forbidden    authenticated, but the route needs a higher role
//   503              the identity provider could not be asked for its keys
// Every refusal is audited (trail.ts, bounded per caller) and counted.
import type { Clock } from '../core/clock.ts';
import type { Identity, Principal } from './identity.ts';
import { allows, type Need } from './roles.ts';
import { needOf } from './routes.ts';
import type { AuditTrail } from './trail.ts';

export const AUTH_FAILURES_PER_MINUTE = 20;
export const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

export interface GateRequest {
  method: string;
  /** The route's pattern (`/flights/:flid`); undefined when no route matches (answered 404 later). */
  route: string | undefined;
  host: string | undefined;
  origin: string | undefined;
  authorization: string | undefined;
  /** The client's address (behind the reverse proxy: as msgx.http.trust-proxy takes it). */
  ip: string;
  requestId: string | null;
}

export type GateAnswer =
  | { allow: true; principal: Principal | null /** /healthz may show its reasons */; details: boolean }
  | { allow: false; status: 400 | 401 | 403 | 429 | 503; body: { error: string; reason: string }; headers: Record<string, string> };

export interface GateOptions {
  identity: Identity;
  /** msgx.http.allowed-hosts (names; the loopback names are always allowed). */
  allowedHosts: readonly string[];
  /** msgx.http.anonymous-reads: paths an anonymous caller may read (`/healthz`: its reasons). */
  anonymousReads: ReadonlySet<string>;
  clock: Clock;
  trail: AuditTrail;
  /** Counts a refusal by status (msgx_http_refusals_total). */
  count?: (status: number) => void;
}

/** The name of a Host header or an Origin: lower case, without port and IPv6 brackets; null when unreadable. */
export function hostName(value: string, origin = false): string | null {
  if (origin) {
    try {
      return new URL(value).hostname.toLowerCase().replace(/^\[|\]$/g, '');
    } catch {
      return null;
    }
  }
  const v = value.trim().toLowerCase();
  if (v.startsWith('[')) return v.slice(1, v.indexOf(']') > 0 ? v.indexOf(']') : undefined);
  return v.split(':')[0] || null;
}

/** Failed authentications per address in fixed one-minute windows (bounded: at most MAX_TRACKED addresses). */
class FailureCounter {
  private windows = new Map<string, { start: number; n: number }>();
  /** Counts one failure of `key` at `now`; the seconds to wait when over the limit, else 0. */
  fail(key: string, now: number): number {
    let w = this.windows.get(key);
    if (!w || now - w.start >= 60_000) {
      if (!w && this.windows.size >= MAX_TRACKED) this.prune(now);
      w = { start: now, n: 0 };
      this.windows.set(key, w);
    }
    w.n++;
    return w.n > AUTH_FAILURES_PER_MINUTE ? Math.max(1, Math.ceil((w.start + 60_000 - now) / 1000)) : 0;
  }
  private prune(now: number) {
    for (const [k, w] of this.windows) if (now - w.start >= 60_000) this.windows.delete(k);
    // Still full (a flood from very many addresses): forget the oldest half; they start again.
    if (this.windows.size >= MAX_TRACKED) for (const k of [...this.windows.keys()].slice(0, MAX_TRACKED / 2)) this.windows.delete(k);
  }
}
const MAX_TRACKED = 10_000;

export class Gate {
  private readonly o: GateOptions;
  private readonly hosts: Set<string>;
  private readonly failures = new FailureCounter();

  constructor(o: GateOptions) {
    this.o = o;
    this.hosts = new Set([...LOOPBACK_NAMES, ...o.allowedHosts.map((h) => h.toLowerCase())]);
  }

  async check(r: GateRequest): Promise<GateAnswer> {
    const need: Need = (r.route === undefined ? undefined : needOf(r.method, r.route)) ?? 'public'; // no route: the 404 says so
    const refuse = (status: 400 | 401 | 403 | 429 | 503, error: string, reason: string, principal: Principal | null, headers: Record<string, string> = {}): GateAnswer => {
      this.o.count?.(status);
      const key = principal ? `subject:${principal.via}:${principal.subject}` : `ip:${r.ip}`;
      this.o.trail.refusal(key, {
        requestId: r.requestId,
        principal,
        ip: r.ip,
        method: r.method,
        route: r.route ?? '(no route)',
        action: 'refused',
        status,
        outcome: 'refused',
        result: { error, reason, need },
      });
      return { allow: false, status, body: { error, reason }, headers: { connection: 'close', ...headers } };
    };
    const host = r.host === undefined ? null : hostName(r.host);
    if (r.host !== undefined && (host === null || !this.hosts.has(host)))
      return refuse(400, 'bad-host', `unexpected Host header: this server answers only ${[...this.hosts].join(', ')} (msgx.http.allowed-hosts)`, null);
    if (r.origin !== undefined && r.origin !== 'null') {
      const o = hostName(r.origin, true);
      if (o === null || !this.hosts.has(o)) return refuse(403, 'bad-origin', 'a request from a page of another site (Origin) is not served', null);
    }
    const id = await this.o.identity.identify(r.authorization);
    const failed = (reason: string, status: 401 | 503 = 401) => {
      if (status === 503) return refuse(503, 'unavailable', reason, null);
      const wait = this.failures.fail(r.ip, this.o.clock.now().getTime());
      return wait
        ? refuse(429, 'too-many-requests', `too many failed authentications from ${r.ip}; a right credential still passes; retry in ${wait} s`, null, { 'retry-after': String(wait) })
        : refuse(401, 'unauthorized', reason, null);
    };
    if (!id.ok) return failed(id.reason, id.status);
    const p = id.principal;
    const details = (p !== null && allows(p.role, 'viewer')) || this.o.anonymousReads.has('/healthz');
    if (allows(p?.role ?? null, need)) return { allow: true, principal: p, details };
    if (p === null) {
      if (need === 'viewer' && r.method !== 'POST' && r.route !== undefined && this.o.anonymousReads.has(r.route)) return { allow: true, principal: null, details };
      return failed(`missing or wrong bearer token: ${r.method} ${r.route} needs the ${need} role (sign in, or send an API key)`);
    }
    return refuse(403, 'forbidden', `${r.method} ${r.route} needs the ${need} role; ${p.name ?? p.subject} has ${p.role ?? 'no role this gateway knows'}`, p);
  }
}
