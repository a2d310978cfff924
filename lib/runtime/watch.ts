// One loop for every watch (docs/decisions.md "Watches"). A watch looks at something at a
// period and repairs what it can: the restore watch, the Redis heal, the topic watches
// (lib/watches/), the pool watch (./pool-watch.ts). What they share is written here once:
//
//   Loop   one tick at a time; the next starts `every()` ms after the last one started, or at
//          once when asked (tickNow); stop ends the delay and waits for the running tick
//          (after pg-boss's worker loop: start, notify, stop, an abortable delay).
//   Watch  a Loop around what an instance declares — check() (what is wrong), repair() (how it
//          is put right), status() (how /healthz and the gauge say it) — plus what every watch
//          does the same way: the start race (a frozen path does not keep the process from
//          starting), the short period while something is wrong, one backoff rule for a refused
//          repair (backoffMs over a Backoff of lib/core/tuning.ts), the /healthz condition
//          (lib/runtime/conditions.ts: "not checked yet" until the first verdict, then the
//          problem), and the derived stores' gauges (msgx_mirror_behind, msgx_mirror_rebuilds_total).
import client from 'prom-client';
import type { Clock } from '../core/clock.ts';
import { type Backoff, WATCH } from '../core/tuning.ts';
import { clearCondition, setCondition } from './conditions.ts';
import type { Logger } from './log.ts';

/** The wait after `failures` failures in a row (≥ 1): firstMs doubled failures − 1 times, at most capMs. */
export function backoffMs(b: Backoff, failures: number): number {
  return Math.min(b.capMs, b.firstMs * 2 ** Math.min(Math.max(0, failures - 1), 30));
}

/** Resolves when p settles or ms have passed, whichever is first (p goes on; its outcome is its own). */
export async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    p.then(
      () => {},
      () => {},
    ),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}

export interface LoopSpec {
  clock: Clock;
  /** The period, read after each tick (a watch that found something looks again sooner). */
  every: () => number;
  /** One tick; its failure is its own (the loop goes on). */
  tick: () => Promise<void>;
}

export class Loop {
  private readonly o: LoopSpec;
  private stopped = false;
  private ticking: Promise<void> | null = null;
  /** The tick asked for while one ran: it runs right after, and its askers share it. */
  private queued: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private running: Promise<void> | null = null;
  /** Ticks started so far, and when the last one started. */
  private started = 0;
  private startedAt = 0;

  constructor(o: LoopSpec) {
    this.o = o;
  }

  /** The first tick now, then one every period; returns that first tick. */
  start(): Promise<void> {
    if (!this.running && !this.stopped) {
      const first = this.current();
      this.running = this.run(first);
      return first;
    }
    return this.ticking ?? Promise.resolve();
  }

  /** A tick that starts after this call: now, or right after the running one. The period starts again from it. */
  tickNow(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    const p = this.ticking ? (this.queued ??= this.ticking.then(() => ((this.queued = null), this.stopped ? undefined : this.current()))) : this.current();
    this.wake?.();
    return p;
  }

  /** No tick starts after this; resolves once the running one ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await (this.running ?? this.ticking);
  }

  private async run(first: Promise<void>): Promise<void> {
    await first;
    while (!this.stopped) {
      const seen = this.started;
      await this.delay(this.o.every() - (this.ms() - this.startedAt));
      if (this.stopped) return;
      // a tick asked for during the delay counts as this one, and the period starts from it
      await (this.started === seen ? this.current() : this.ticking);
    }
  }

  /** The running tick, or a new one. */
  private current(): Promise<void> {
    if (!this.ticking) {
      this.started++;
      this.startedAt = this.ms();
      this.ticking = this.o
        .tick()
        .catch(() => {})
        .finally(() => (this.ticking = null));
    }
    return this.ticking;
  }

  private delay(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const t = setTimeout(() => resolve(), ms);
      t.unref(); // a watch never keeps its process alive
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    }).finally(() => (this.wake = null));
  }

  private ms(): number {
    return this.o.clock.now().getTime();
  }
}

// ---- the derived stores' gauges (docs/operations.md "Derived stores")

/** The derived stores: Redis and the state topic are copies of Postgres rebuilt from it; the msg topic is history (a loss is detected, an operator decides). */
export type Store = 'redis' | 'state-topic' | 'msg-topic';

export const mirrorBehind = new client.Gauge({
  registers: [],
  name: 'msgx_mirror_behind',
  help: 'Items the store was last found behind Postgres by (redis: flights missing or older; state-topic: 1 while missing, mis-configured or below the recorded offsets; msg-topic: partitions whose end offset is below the recorded one), 0 once healed',
  labelNames: ['store'] as const,
});

export const mirrorRebuilds = new client.Counter({
  registers: [],
  name: 'msgx_mirror_rebuilds_total',
  help: 'Rebuilds of a derived store from Postgres that completed (redis: a re-sync or a repair of stale keys; state-topic: a re-seed); msg-topic counts losses detected (never rebuilt by itself)',
  labelNames: ['store'] as const,
});

function registerStore(store: Store): void {
  if (!client.register.getSingleMetric('msgx_mirror_behind')) client.register.registerMetric(mirrorBehind);
  if (!client.register.getSingleMetric('msgx_mirror_rebuilds_total')) client.register.registerMetric(mirrorRebuilds);
  mirrorBehind.set({ store }, 0);
  mirrorRebuilds.inc({ store }, 0);
}

// ---- the watch

/** A repair the store refused (read-only, an ACL, a policy): retried after the backoff, named by /healthz meanwhile. */
export class Refused extends Error {
  override name = 'Refused';
  /** What kind of refusal (a reply code): one ERROR line per kind in a row (default: the message). */
  readonly kind: string;
  constructor(message: string, kind = message) {
    super(message);
    this.kind = kind;
  }
}

export interface WatchSpec<F> {
  /** The /healthz condition it sets while something is wrong (none: it only repairs). */
  condition?: string;
  /** Until the first verdict, this condition says "not checked yet" (the process is not ready before the watch knows). */
  pendingCondition?: string;
  /** The derived store whose gauges it reports. */
  store?: Store;
  clock: Clock;
  log: Logger;
  /** The I/O deadline: start waits for the first check at most WATCH.startWaitTimeouts of it. */
  timeoutMs: number;
  everyMs: number;
  /** The period while something is wrong, a repair is refused or nothing is known yet (default everyMs). */
  behindEveryMs?: number;
  /** A cheap look on a period of its own, between checks and beside a long one, that may ask for a check at once (watch.check()). */
  glance?: { everyMs: number; look: () => Promise<void> };
  /** The backoff of a refused repair (default WATCH.refusedBackoff). */
  backoff?: Backoff;
  /** Its refusals are not logged (the pool watch: an unreachable server is an outage the dependency checks report). */
  quiet?: boolean;
  /** What is wrong that repair can put right (null: nothing). Throws when the check could not run: the last verdict stays. */
  check: () => Promise<F | null>;
  /** How it is put right. Throws Refused when the store refuses: retried after the backoff. Other errors: tried again next period. */
  repair?: (found: F) => Promise<void>;
  /** What /healthz says (null: ready) and the store's gauge, from the watch's own state. */
  status: () => Status;
}

export interface Status {
  problem: string | null;
  behind: number;
  /** Whether what the watch must know before the process acts has been checked (default: a check has ended). */
  checked?: boolean;
}

/** A refused repair: why, how often in a row, and not before when again. */
interface Refusal {
  reason: string;
  kind: string;
  failures: number;
  retryAt: number;
}

export class Watch<F> {
  private readonly s: WatchSpec<F>;
  private readonly loop: Loop;
  private readonly glancer: Loop | null;
  private refused: Refusal | null = null;
  private verdict = false;
  private halted = false;
  private soonAt = Number.NEGATIVE_INFINITY;

  constructor(s: WatchSpec<F>) {
    this.s = s;
    if (s.store) registerStore(s.store);
    if (s.pendingCondition) setCondition(s.pendingCondition, 'not checked yet (start-up)', s.clock.now());
    this.loop = new Loop({ clock: s.clock, every: () => this.period(), tick: () => this.tick() });
    const glance = s.glance;
    this.glancer = glance ? new Loop({ clock: s.clock, every: () => glance.everyMs, tick: glance.look }) : null;
  }

  /** The first check (waited for at most WATCH.startWaitTimeouts I/O deadlines), then the period; the glance from then on. */
  async start(): Promise<void> {
    await within(this.loop.start(), this.s.timeoutMs * WATCH.startWaitTimeouts);
    void this.glancer?.start();
  }

  /** A check that starts after this call (concurrent calls share it). */
  check(): Promise<void> {
    return this.loop.tickNow();
  }

  /** A user of the store saw it fail (a send found the topic missing): check now, at most once a short period. */
  soon(): void {
    const now = this.now();
    if (this.halted || now - this.soonAt < (this.s.behindEveryMs ?? this.s.everyMs)) return;
    this.soonAt = now;
    void this.check();
  }

  /** The check of `check()`, waited for at most ms. */
  checkWithin(ms: number): Promise<void> {
    return within(this.check(), ms);
  }

  /** Stops checking: this process no longer acts on what it watched, so it no longer reports it either. */
  async stop(): Promise<void> {
    this.halted = true;
    const done = Promise.all([this.loop.stop(), this.glancer?.stop()]);
    for (const c of new Set([this.s.condition, this.s.pendingCondition])) if (c) clearCondition(c);
    if (this.s.store) mirrorBehind.set({ store: this.s.store }, 0);
    await done;
  }

  get stopped(): boolean {
    return this.halted;
  }

  /** A derived store rebuilt from Postgres (or, for the msg topic, a loss recorded). */
  rebuilt(): void {
    if (this.s.store) mirrorRebuilds.inc({ store: this.s.store });
  }

  /** Publishes the instance's status now (a check that learns something before it ends). */
  publish(): void {
    if (this.halted) return;
    const st = this.s.status();
    const checked = st.checked ?? this.verdict;
    const problem = [this.refused && `${this.refused.reason} (tried again in ${Math.round((this.refused.retryAt - this.now()) / 1000)} s)`, st.problem].filter(Boolean).join('; ');
    if (this.s.store) mirrorBehind.set({ store: this.s.store }, Math.max(st.behind, this.refused ? 1 : 0));
    if (this.s.pendingCondition && checked) clearCondition(this.s.pendingCondition);
    if (!this.s.condition || (!checked && !problem)) return;
    if (problem) setCondition(this.s.condition, problem, this.s.clock.now());
    else clearCondition(this.s.condition);
  }

  private period(): number {
    const st = this.s.status();
    return this.refused || st.problem || !(st.checked ?? this.verdict) ? (this.s.behindEveryMs ?? this.s.everyMs) : this.s.everyMs;
  }

  private async tick(): Promise<void> {
    let found: F | null;
    try {
      found = await this.s.check();
      this.verdict = true;
    } catch (e) {
      if (e instanceof Refused) return this.refuse(e);
      this.s.log.debug({ err: e, watch: this.name() }, 'watch check could not run; kept its last verdict');
      // no verdict yet: /healthz says why, not only "not checked yet"
      const pending = this.s.pendingCondition;
      if (!this.verdict && pending) setCondition(pending, `not checked yet: the check could not run (${errorText(e)}); retried every ${this.period()} ms`, this.s.clock.now());
      return;
    }
    if (found !== null && this.s.repair && (!this.refused || this.now() >= this.refused.retryAt)) {
      try {
        await this.s.repair(found);
        if (this.refused && !this.s.quiet) this.s.log.info({ watch: this.name(), refusals: this.refused.failures }, `${this.name()}: the repair works again`);
        this.refused = null;
      } catch (e) {
        if (e instanceof Refused) return this.refuse(e);
        this.s.log.debug({ err: e, watch: this.name() }, 'watch repair could not run; tried again next period');
      }
    } else if (found === null) this.refused = null;
    this.publish();
  }

  /** One ERROR line per distinct kind; the backoff grows with every refusal in a row. */
  private refuse(e: Refused): void {
    const failures = (this.refused?.failures ?? 0) + 1;
    if (this.refused?.kind !== e.kind && !this.s.quiet) this.s.log.error({ watch: this.name(), store: this.s.store, err: e.message }, `${e.message}; retried with backoff`);
    this.refused = { reason: e.message, kind: e.kind, failures, retryAt: this.now() + backoffMs(this.s.backoff ?? WATCH.refusedBackoff, failures) };
    this.publish();
  }

  private name(): string {
    return this.s.store ?? this.s.condition ?? 'watch';
  }

  private now(): number {
    return this.s.clock.now().getTime();
  }
}

/** What an instance of a watch offers its process, from the Watch it builds (its `watch`). */
export abstract class Watched<F> {
  protected abstract readonly watch: Watch<F>;

  /** The first check (bounded: a frozen path leaves the process starting, not hanging), then the period. */
  start(): Promise<void> {
    return this.watch.start();
  }

  stop(): Promise<void> {
    return this.watch.stop();
  }

  /** A check (and its repair) now; concurrent calls share it. */
  check(): Promise<void> {
    return this.watch.check();
  }

  /** A user of the store saw it fail (a send found the topic missing): check now, at most once a short period. */
  checkSoon(): void {
    this.watch.soon();
  }
}

/** An error as one short text: its Kafka code or class, and its message. */
export function errorText(e: unknown): string {
  const x = e as { name?: string; type?: string; message?: string };
  return `${x.type ?? x.name ?? 'Error'}: ${x.message ?? String(e)}`;
}
