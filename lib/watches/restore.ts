// Postgres restored from a backup: detected, held, recovered by the operator (docs/operations.md
// "Postgres restored from a backup"; docs/decisions.md "Restore from backup").
//
// After a restore, state and events roll back to the backup point. What Postgres no longer knows
// is still visible elsewhere, and each is a sign that Postgres is behind (./restore-signs.ts,
// ./restore-kafka.ts):
//   inbox  rows above intake's watermark already marked processed (only backfill marks rows, and
//          only rows Postgres enqueued: above the watermark there are none unless Postgres forgot);
//   redis  a flight whose STATE_VERSION in Redis is newer than Postgres's, or that Postgres lacks
//          (Redis is written after the business commit, so it is never ahead of a live Postgres);
//   kafka  the msg topic holds an EVENT_ID above the highest one Postgres handed out (the
//          sequence never goes back otherwise).
// While any is seen (or before the first check of the inbox and Redis completed) the pump and the
// intake hold: applying a new message now would publish (FLID, STATE_VERSION) pairs that are
// already on the topic with other content, and taking in rows above the lost range would move the
// watermark past it. /healthz answers 503 with the reason, msgx_postgres_behind{source} = 1, one
// ERROR line, then a reminder at most once a minute. Nothing is repaired here: `npm run
// recover-restore` (lib/pipeline/restore-recover.ts) takes the lost range in again, re-syncs Redis
// from Postgres and moves the EVENT_ID sequence past the topic.
//
// A watch of lib/runtime/watch.ts: the check of every source every WATCH.restore.everyMs
// (heldEveryMs while held), and a glance every glanceEveryMs at intake's watermark and the
// EVENT_ID sequence: neither goes back unless Postgres did (a restore under running processes),
// and then every source is checked at once instead of at its next period. A check that fails
// keeps the source's last verdict; a failing Kafka check never holds (the pump does not need Kafka
// otherwise; the EVENT_ID check comes back with Kafka).
import client from 'prom-client';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { withTimeout } from '../core/timeout.ts';
import { WATCH } from '../core/tuning.ts';
import type { Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import type { Redis } from '../db/redis.ts';
import { Episode } from '../runtime/episode.ts';
import { Watch, Watched } from '../runtime/watch.ts';
import * as Restore from '../sql/restore.ts';
import { type Finding, type SignChecks, signChecks, type Source, SOURCES } from './restore-signs.ts';

/** The condition name /healthz reports. */
export const CONDITION = 'postgres-behind';
/** Until the first check of the inbox (and Redis) completed, the process holds and says so. */
export const UNCHECKED = 'restore-check-pending';

export const postgresBehind = new client.Gauge({
  registers: [],
  name: 'msgx_postgres_behind',
  help: '1 while this process sees that Postgres is behind the inbox, Redis or the Kafka msg topic (restored from a backup); the pump and the intake hold until recover-restore',
  labelNames: ['source'] as const,
});

export interface RestoreWatchDeps {
  db: Db;
  inbox: Inbox;
  /** The pump's client; the intake has none (its check is the inbox alone). */
  redis?: Redis;
  /**
   * msgx.inbox.read-only: a shadow instance never marks the inbox, another instance does — rows
   * above its watermark marked processed are no sign; its inbox check is off.
   */
  inboxReadOnly?: boolean;
  /** The Kafka check (./restore-kafka.ts), pump only. */
  kafka?: () => Promise<Finding | null>;
  clock: Clock;
  timeoutMs: number;
  log: Logger;
  /** Between checks while nothing is behind, and while held (tests; defaults WATCH.restore). */
  everyMs?: number;
  heldEveryMs?: number;
}

export class RestoreWatch extends Watched<never> {
  private readonly behind = new Map<Source, string>();
  private readonly checked = new Set<Source>();
  protected readonly watch: Watch<never>;
  private readonly holding: Episode;
  private stopped = false;
  private glancing = false;
  private wentBack = false;
  private marks = { watermark: 0, events: 0 };
  private readonly d: RestoreWatchDeps;
  /** What it checks: the signs of ./restore-signs.ts this process can see. */
  private readonly checks: SignChecks;

  constructor(d: RestoreWatchDeps) {
    super();
    this.d = d;
    this.checks = signChecks(d);
    this.holding = new Episode(d.clock, WATCH.remindEveryMs);
    if (!client.register.getSingleMetric('msgx_postgres_behind')) client.register.registerMetric(postgresBehind);
    for (const s of this.sources()) postgresBehind.set({ source: s }, 0);
    this.watch = new Watch<never>({
      condition: CONDITION,
      pendingCondition: UNCHECKED,
      clock: d.clock,
      log: d.log,
      timeoutMs: d.timeoutMs,
      everyMs: d.everyMs ?? WATCH.restore.everyMs,
      behindEveryMs: d.heldEveryMs ?? WATCH.restore.heldEveryMs,
      glance: { everyMs: WATCH.restore.glanceEveryMs, look: () => this.glance() },
      check: async () => (await this.checkSources(), null),
      status: () => ({ problem: this.problem(), behind: this.behind.size, checked: this.firstChecked() }),
    });
  }

  private sources(): Source[] {
    return SOURCES.filter((s) => s in this.checks);
  }

  held(): boolean {
    if (this.behind.size > 0 || this.wentBack) return true;
    return !this.firstChecked();
  }

  /**
   * held(), once a check of every source has completed or waitMs has passed: a duty that runs once
   * at the process's start (retention's kick) is not skipped only because the first check is still
   * under way or failed (it is tried again now).
   */
  async heldOnceChecked(waitMs = this.d.timeoutMs * WATCH.startWaitTimeouts): Promise<boolean> {
    if (!this.stopped && !this.firstChecked()) await this.watch.checkWithin(waitMs);
    return this.held();
  }

  /** Held only because no check of the inbox and Redis has completed yet (nothing was found behind). */
  unchecked(): boolean {
    return this.behind.size === 0 && !this.wentBack && !this.firstChecked();
  }

  private firstChecked(): boolean {
    return this.checked.has('inbox') && (!this.d.redis || this.checked.has('redis'));
  }

  findings(): Finding[] {
    return SOURCES.filter((s) => this.behind.has(s)).map((source) => ({ source, detail: this.behind.get(source)! }));
  }

  /** Stops checking; this process no longer acts on Postgres (shutdown, lost leadership), so it no longer reports it either. */
  override async stop(): Promise<void> {
    this.stopped = true;
    for (const s of this.sources()) postgresBehind.set({ source: s }, 0);
    await this.watch.stop();
  }

  /** The watermark or the EVENT_ID sequence went back: hold, and check every source now. */
  private async glance(): Promise<void> {
    // one query at a time: a glance that timed out keeps its pool connection until Postgres answers
    if (this.glancing) return;
    this.glancing = true;
    const query = Restore.readMarks(this.d.db);
    query.then(
      () => (this.glancing = false),
      () => (this.glancing = false),
    );
    try {
      const m = await withTimeout(this.d.timeoutMs, 'restore glance', query);
      if (!m) return;
      const was = this.marks;
      const back = m.watermark < was.watermark || m.events < was.events;
      this.marks = back ? m : { watermark: Math.max(m.watermark, was.watermark), events: Math.max(m.events, was.events) };
      if (back) {
        this.d.log.warn({ was, now: m }, "intake's watermark or the EVENT_ID sequence went back; checking the inbox, Redis and Kafka now");
        this.wentBack = true;
        await this.watch.check();
      }
    } catch {
      // Postgres unreachable: the periodic check and the dependency check report it
    } finally {
      this.wentBack = false;
    }
  }

  /** Every source checked concurrently; each verdict is published as it comes (a slow Kafka read does not delay the inbox's). */
  private async checkSources(): Promise<void> {
    const run = async (source: Source, f: () => Promise<string | null>) => {
      try {
        const detail = await f();
        this.checked.add(source);
        if (detail) this.behind.set(source, detail);
        else this.behind.delete(source);
      } catch (e) {
        this.d.log.warn({ err: e, source }, 'restore check could not run; kept its last verdict');
      }
      this.publish();
    };
    await Promise.all(Object.entries(this.checks).map(([source, check]) => run(source as Source, check)));
  }

  private problem(): string | null {
    if (this.behind.size === 0) return null;
    const found = this.findings()
      .map((f) => `${f.source}: ${f.detail}`)
      .join('; ');
    return `Postgres is behind (restored from a backup?): ${found}. New business is held; see docs/operations.md "Postgres restored from a backup" (npm run recover-restore)`;
  }

  /** The verdicts so far into the gauge, the condition and the log (one ERROR line when holding starts, a reminder a minute, one line when it ends). */
  private publish(): void {
    if (this.stopped) return;
    for (const s of this.sources()) postgresBehind.set({ source: s }, this.behind.has(s) ? 1 : 0);
    this.watch.publish();
    const reason = this.problem();
    if (reason) {
      if (this.holding.begin()) this.d.log.error({ findings: this.findings() }, reason);
      else if (this.holding.remind()) this.d.log.error({ findings: this.findings() }, `still held: ${reason}`);
    } else if (this.holding.end() !== null) this.d.log.warn('Postgres is no longer behind the inbox, Redis or Kafka; holding ends');
  }
}
