// The audit trail (docs/operations.md "Access and roles"): one row in ACCESS_AUDIT and one JSON
// log line (`"audit":true`, whatever msgx.log.level says unless "silent") per operator action and
// per refused request, naming the person (the token's sub and name, the key's name), their role,
// the route, the IDs it touched and the outcome. The log line is written at once; the row within
// msgx.io.timeout (a row that cannot be written is counted and logged, the line stays).
// Refusals are bounded: at most one per caller (an address, or an authenticated subject) a
// minute; the refusals left out are counted in `suppressed` of that caller's next one, or in one
// of their own once the minute is over, so a flood of guesses cannot grow the trail without bound.
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { withTimeout } from '../core/timeout.ts';
import type { Executor } from '../db/statement.ts';
import * as AuditSql from '../sql/access-audit.ts';
import type { Principal } from './identity.ts';

export interface AuditEntry {
  requestId: string | null;
  principal: Principal | null;
  ip: string | null;
  method: string;
  route: string;
  /** The operator action (`replay`, `dispatch-skip`, …) or `refused`. */
  action: string;
  status: number;
  outcome: 'done' | 'failed' | 'refused';
  /** The IDs the action touched: {msgIds}, {eventIds}, {requestIds}. */
  touched?: Record<string, unknown[]> | null;
  selection?: unknown;
  result?: Record<string, unknown>;
  suppressed?: number;
}

/** One refusal row per key per window; at most MAX_KEYS keys held (more share one count). */
export const REFUSAL_WINDOW_MS = 60_000;
const MAX_KEYS = 10_000;

export interface TrailOptions {
  process: string;
  log: Logger;
  clock: Clock;
  /** Postgres; without it, log lines only. */
  db?: Executor;
  timeoutMs: number;
  /** A row that could not be written (counted by the caller). */
  onWriteFailed?: (e: unknown) => void;
}

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));
/** How the log line and the row name the caller: `key:prometheus`, `oidc:<sub>`, `dev`; null anonymous. */
export const whoOf = (p: Principal | null): string | null => (p === null ? null : p.via === 'dev' ? 'dev' : `${p.via}:${p.subject}`);

export class AuditTrail {
  private readonly o: TrailOptions;
  private readonly out: Logger;
  private readonly held = new Map<string, { start: number; last: AuditEntry; suppressed: number }>();
  private readonly pending = new Set<Promise<unknown>>();
  private readonly timer: NodeJS.Timeout;

  constructor(o: TrailOptions) {
    this.o = o;
    this.out = o.log.child({ audit: true }, { level: o.log.level === 'silent' ? 'silent' : 'info' });
    this.timer = setInterval(() => this.flush(false), REFUSAL_WINDOW_MS);
    this.timer.unref();
  }

  /** An action (or a refusal already bounded by the caller): the log line now, the row soon. */
  record(e: AuditEntry): void {
    const p = e.principal;
    this.out.info(
      {
        requestId: e.requestId,
        who: whoOf(p),
        name: p?.name ?? null,
        role: p?.role ?? null,
        ip: e.ip,
        route: `${e.method} ${e.route}`,
        action: e.action,
        status: e.status,
        touched: e.touched ?? null,
        selection: e.selection ?? null,
        result: e.result ?? null,
        suppressed: e.suppressed ?? 0,
      },
      `audit ${e.action}`,
    );
    const db = this.o.db;
    if (!db) return;
    const at = this.o.clock.now();
    const write = withTimeout(
      this.o.timeoutMs,
      'audit row',
      AuditSql.insert(
        db,
        at,
        this.o.process,
        e.requestId,
        p?.via ?? null,
        p?.subject ?? null,
        p?.name ?? null,
        p?.role ?? null,
        e.ip,
        e.method,
        e.route,
        e.action,
        e.status,
        e.outcome,
        json(e.touched),
        json(e.selection),
        json(e.result),
        e.suppressed ?? 0,
      ),
    ).catch((err: unknown) => this.o.onWriteFailed?.(err));
    this.pending.add(write);
    void write.finally(() => this.pending.delete(write));
  }

  /** A refused request of `key` (`ip:…` or `subject:…`): recorded at most once per key per window. */
  refusal(key: string, e: AuditEntry): void {
    const t = this.o.clock.now().getTime();
    if (!this.held.has(key) && this.held.size >= MAX_KEYS) {
      this.flush(false);
      if (this.held.size >= MAX_KEYS) key = '(other callers)';
    }
    const h = this.held.get(key);
    if (h && t - h.start < REFUSAL_WINDOW_MS) {
      h.suppressed++;
      h.last = e;
      return;
    }
    this.held.set(key, { start: t, last: e, suppressed: 0 });
    this.record({ ...e, suppressed: h?.suppressed ?? 0 });
  }

  /** The counts held back of windows that are over (all of them: at close), each as a row of its own. */
  private flush(all: boolean): void {
    const t = this.o.clock.now().getTime();
    for (const [key, h] of this.held) {
      if (!all && t - h.start < REFUSAL_WINDOW_MS) continue;
      if (h.suppressed > 0) this.record({ ...h.last, requestId: null, suppressed: h.suppressed, result: { ...h.last.result, note: 'refusals not recorded one by one in the last minute' } });
      this.held.delete(key);
    }
  }

  /** Writes the counts still held back and waits (bounded) for the rows on their way. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.flush(true);
    await Promise.allSettled([...this.pending]);
  }
}
