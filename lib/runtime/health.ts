// Readiness per dependency, and the outage log lines, in one place for every process.
//
// Each process registers the named checks of what it needs (Postgres always; MariaDB, Redis,
// Kafka per process — lib/runtime/process.ts). A check is one cheap round trip on a DEDICATED
// connection kept open between checks (lib/runtime/dependency-checks.ts), bounded by a deadline:
// a connection frozen on a dead path (NAT / firewall state lost, failover behind a virtual IP)
// fails it like a refused one, and the next check opens a new connection. The work paths add
// what they see: an edge whose call on a pooled connection timed out (and which threw that
// connection away) calls `report(name, err)`; the dependency counts as down at once (on its own
// checks: at once when the kept connection stops answering, else after two failures in a row,
// so that one slow connect on a busy machine is no outage). It is back
// when it has answered for one whole check interval (two checks in a row) with no timed-out call
// of the work in between: on a frozen path a check's NEW connection answers at once while the
// work's older connections still hang. /healthz answers 503 while any registered condition is
// down, naming it and why; msgx_dependency_up{dependency} says the same.
//
// Log lines per condition: ONE error line when it goes away (with the reason), ONE line when it
// is back (with how long it was away and how many failures were counted meanwhile), and at most
// one summary a minute in between. Failures of the work paths while it is away are counted,
// not logged (`quiet`).
//
// Registering a further condition (e.g. "Postgres is behind the inbox"):
//   rt.health.register('postgres-restore', async () => { if (behind) throw new Error('...') }, { everyMs: 10_000 });
// or list it in the process spec's `conditions` (ProcessSpec.conditions). The check throws to
// say "down" (its message is the reason); it is bounded by `timeoutMs` here as well.
import client from 'prom-client';
import { systemClock, type Clock } from '../core/clock.ts';
import { scrub } from '../core/secrets.ts';
import { Episode } from './episode.ts';
import type { Logger } from './log.ts';
import { withDeadline } from './leader.ts';
import { Loop } from './watch.ts';
import { RUNTIME } from '../core/tuning.ts';

export type HealthCheck = () => Promise<void>;

export interface ConditionOptions {
  /** Time between two checks (default 2 s). */
  everyMs?: number;
  /** Deadline of one step of a check (default 1.5 s; the whole check gets twice that plus 0.5 s). */
  timeoutMs?: number;
  /** Called when the condition is dropped (close the dedicated connection). */
  close?: () => void;
}

export interface ConditionState {
  up: boolean;
  /** When the current state began (ISO). */
  since: string;
  /** Why it is down (null while up). */
  reason: string | null;
}

/** Not registered here: every process exports it (lib/runtime/metrics.ts exportProcessMetrics). */
export const dependencyUp = new client.Gauge({
  registers: [],
  name: 'msgx_dependency_up',
  help: '1 while this process reaches the dependency (a round trip on a dedicated connection within its deadline, and no timed-out call of the work path since), 0 while it does not',
  labelNames: ['dependency'] as const,
});

export const SUMMARY_EVERY_MS = RUNTIME.summaryEveryMs;

class Condition {
  up = true;
  /** When the current state began (ms). */
  since: number;
  reason: string | null = null;
  /** While it is away: one line when it goes, a summary at most once a period, one when it is back. */
  readonly away: Episode;
  /** Failed checks and reported failures since it went down (for the summary and the "back" line). */
  failedChecks = 0;
  reported = 0;
  /** The last reported failure (a check must start after it to count as an answer). */
  reportedAt = 0;
  /** Start of the first check of the current run of answers since the last failure (0: none). */
  okSince = 0;
  /** Failed checks in a row. */
  failStreak = 0;
  loop: Loop | null = null;
  readonly name: string;
  readonly check: HealthCheck;
  readonly everyMs: number;
  readonly timeoutMs: number;
  readonly close?: () => void;
  constructor(name: string, check: HealthCheck, o: { everyMs: number; timeoutMs: number; close?: () => void; clock: Clock; summaryEveryMs: number }) {
    this.name = name;
    this.check = check;
    this.everyMs = o.everyMs;
    this.timeoutMs = o.timeoutMs;
    this.close = o.close;
    this.since = o.clock.now().getTime();
    this.away = new Episode(o.clock, o.summaryEveryMs);
  }
}

export class Health {
  private readonly conditions = new Map<string, Condition>();
  private readonly downHooks = new Map<string, (() => void)[]>();
  private readonly quietKeys = new Map<string, { last: number; suppressed: number }>();
  private started = false;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly summaryEveryMs: number;
  private readonly onChange?: (name: string, up: boolean) => void;

  constructor(o: { log: Logger; clock?: Clock; summaryEveryMs?: number; onChange?: (name: string, up: boolean) => void }) {
    this.log = o.log;
    this.clock = o.clock ?? systemClock;
    this.summaryEveryMs = o.summaryEveryMs ?? SUMMARY_EVERY_MS;
    this.onChange = o.onChange;
  }

  /** Add a named condition (one place: readiness, gauge and log lines follow from it). */
  register(name: string, check: HealthCheck, o: ConditionOptions = {}): this {
    if (this.conditions.has(name)) throw new Error(`health condition ${name} registered twice`);
    const c = new Condition(name, check, { everyMs: o.everyMs ?? 2000, timeoutMs: o.timeoutMs ?? 1500, close: o.close, clock: this.clock, summaryEveryMs: this.summaryEveryMs });
    this.conditions.set(name, c);
    dependencyUp.set({ dependency: name }, 1);
    if (this.started) this.startLoop(c);
    return this;
  }

  start(): this {
    this.started = true;
    for (const c of this.conditions.values()) this.startLoop(c);
    return this;
  }

  async close(): Promise<void> {
    await Promise.all([...this.conditions.values()].map((c) => c.loop?.stop()));
    for (const c of this.conditions.values()) c.close?.();
  }

  has(name: string): boolean {
    return this.conditions.has(name);
  }

  isUp(name: string): boolean {
    return this.conditions.get(name)?.up ?? true;
  }

  /** Seconds the condition has been down (0 while up). */
  downSeconds(name: string): number {
    const c = this.conditions.get(name);
    return !c || c.up ? 0 : c.away.lasted() / 1000;
  }

  /** What /healthz shows: ok, the state of each condition, and the reasons of those down. */
  snapshot(): { ok: boolean; dependencies: Record<string, ConditionState>; reasons: string[] } {
    const dependencies: Record<string, ConditionState> = {};
    const reasons: string[] = [];
    for (const c of this.conditions.values()) {
      const reason = c.reason === null ? null : scrub(c.reason);
      dependencies[c.name] = { up: c.up, since: new Date(c.since).toISOString(), reason };
      if (!c.up) reasons.push(`${c.name}: ${reason}`);
    }
    return { ok: reasons.length === 0, dependencies, reasons };
  }

  /**
   * A work path saw the dependency fail to answer (a call timed out on a pooled connection, which
   * it threw away): down at once, until a check that starts after this answers.
   */
  report(name: string, err: Error): void {
    const c = this.conditions.get(name);
    if (!c) return;
    c.reportedAt = this.now();
    c.okSince = 0;
    if (!c.up) {
      c.reported++;
      return;
    }
    this.down(c, `${err.message} (seen by the work path)`);
    c.reported = 1;
  }

  /**
   * Run `fn` each time the condition goes away: an edge starts over on new connections (its idle
   * ones were opened on the same path as the check's, which no longer answers).
   */
  onDown(name: string, fn: () => void): void {
    const hooks = this.downHooks.get(name) ?? [];
    hooks.push(fn);
    this.downHooks.set(name, hooks);
  }

  /** report() bound to one name, for an edge's onFault option. */
  reporter(name: string): (err: Error) => void {
    return (err) => this.report(name, err);
  }

  /**
   * A work path's failure, logged at most once per `key` a minute (the first at once, then a
   * summary with the count of the suppressed ones); nothing at all while `dependency` is known
   * to be down — its own "went away" / "back" lines say it. Returns whether a line was written.
   */
  quiet(key: string, err: unknown, message: string, dependency?: string | readonly string[]): boolean {
    for (const name of typeof dependency === 'string' ? [dependency] : (dependency ?? [])) {
      const c = this.conditions.get(name);
      if (c && !c.up) {
        c.reported++;
        return false;
      }
    }
    const now = this.now();
    const q = this.quietKeys.get(key);
    if (q && now - q.last < this.summaryEveryMs) {
      q.suppressed++;
      return false;
    }
    const suppressed = q?.suppressed ?? 0;
    this.quietKeys.set(key, { last: now, suppressed: 0 });
    this.log.error({ err, ...(suppressed ? { suppressedSinceLastLine: suppressed } : {}) }, suppressed ? `${message} (${suppressed} more like it in the last minute)` : message);
    return true;
  }

  /** The condition's checks on the watches' loop (./watch.ts): one at a time, every everyMs. */
  private startLoop(c: Condition): void {
    if (c.loop) return;
    c.loop = new Loop({ clock: this.clock, every: () => c.everyMs, tick: () => this.checkOnce(c) });
    void c.loop.start();
  }

  private async checkOnce(c: Condition): Promise<void> {
    const started = this.now();
    try {
      // the checks bound each step themselves (connect, round trip): this is the backstop
      await withDeadline(c.check(), 2 * c.timeoutMs + 500, `${c.name} check`);
      c.failStreak = 0;
      if (started <= c.reportedAt) c.okSince = 0;
      else {
        c.okSince ||= started;
        // back: answers for one whole check interval (two checks in a row), none of the work's calls timed out meanwhile
        if (c.up || this.now() - c.okSince >= c.everyMs) this.upAgain(c);
      }
    } catch (e) {
      c.okSince = 0;
      c.failStreak++;
      this.failed(c, (e as Error).message, (e as { kept?: boolean }).kept === true);
    }
  }

  private failed(c: Condition, reason: string, kept: boolean): void {
    if (c.up) {
      // Away: a connection that answered before stopped answering (a frozen path: the next check,
      // on a new connection, would not see it again), two failed checks in a row (one failed
      // connect may be a busy machine), or a timed-out call of the work (report).
      if (!kept && c.failStreak < 2) return;
      this.down(c, reason);
      c.failedChecks = c.failStreak;
      return;
    }
    c.failedChecks++;
    c.reason = reason;
    if (!c.away.remind()) return;
    this.log.warn(
      { dependency: c.name, downForS: Math.round(c.away.lasted() / 1000), failedChecks: c.failedChecks, failuresCounted: c.reported, reason },
      `dependency ${c.name} still away (${c.failedChecks} failed checks, ${c.reported} failures of the work counted and not logged)`,
    );
  }

  private down(c: Condition, reason: string): void {
    c.up = false;
    c.since = this.now();
    c.away.begin();
    c.reason = reason;
    c.failedChecks = 0;
    c.reported = 0;
    dependencyUp.set({ dependency: c.name }, 0);
    this.log.error({ dependency: c.name, reason }, `dependency ${c.name} went away: ${reason}`);
    this.onChange?.(c.name, false);
    for (const fn of this.downHooks.get(c.name) ?? []) {
      try {
        fn();
      } catch {
        // a hook's failure must not stop the others
      }
    }
  }

  private upAgain(c: Condition): void {
    if (c.up) return;
    const downForMs = c.away.end() ?? 0;
    c.up = true;
    c.since = this.now();
    c.reason = null;
    dependencyUp.set({ dependency: c.name }, 1);
    this.log.warn({ dependency: c.name, downForMs, failedChecks: c.failedChecks, failuresCounted: c.reported }, `dependency ${c.name} back after ${(downForMs / 1000).toFixed(1)} s`);
    this.onChange?.(c.name, true);
  }

  private now(): number {
    return this.clock.now().getTime();
  }
}
