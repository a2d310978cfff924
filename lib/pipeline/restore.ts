// Postgres restored from a backup: detected, held, recovered by the operator (docs/operations.md
// "Postgres restored from a backup"; docs/decisions.md "Restore from backup").
//
// After a restore, state and events roll back to the backup point. What Postgres no longer knows
// is still visible elsewhere, and each is a sign that Postgres is behind:
//   inbox  rows above intake's watermark already marked processed (only backfill marks rows, and
//          only rows Postgres enqueued: above the watermark there are none unless Postgres forgot);
//   redis  a flight whose STATE_VERSION in Redis is newer than Postgres's, or that Postgres lacks
//          (Redis is written after the business commit, so it is never ahead of a live Postgres);
//   kafka  the msg topic holds an EVENT_ID above the highest one Postgres handed out
//          (lib/dispatch/restore.ts; the sequence never goes back otherwise).
// While any is seen (or before the first check of the inbox and Redis completed) the pump and the
// intake hold: applying a new message now would publish (FLID, STATE_VERSION) pairs that are
// already on the topic with other content, and taking in rows above the lost range would move the
// watermark past it. /healthz answers 503 with the reason (lib/runtime/conditions.ts),
// msgx_postgres_behind{source} = 1, one ERROR line, then a reminder at most once a minute.
// Nothing is replayed on its own: `npm run recover-restore` (scripts/recover-restore.ts,
// lib/pipeline/restore-recover.ts) takes the lost range in again, re-syncs Redis from Postgres
// and moves the EVENT_ID sequence past the topic.
import client from 'prom-client';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { withTimeout } from '../core/timeout.ts';
import type { Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import type { Redis } from '../db/redis.ts';
import { myRows, pgOne, pgRows } from '../db/statement.ts';
import { flightKey } from '../flight/mirror.ts';
import { clearCondition, setCondition } from '../runtime/conditions.ts';
import * as Restore from '../sql/restore.ts';

export type Source = 'inbox' | 'redis' | 'kafka';
export const SOURCES: readonly Source[] = ['inbox', 'redis', 'kafka'];

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

/** One sign that Postgres is behind. */
export interface Finding {
  source: Source;
  detail: string;
}

/**
 * Has this Postgres ever taken in a message? A fresh install (watermark 0) over an inbox another
 * system processed, or over a Redis an older installation filled, has forgotten nothing: no check
 * runs until intake took in its first row.
 */
export async function inUse(db: Db): Promise<{ watermark: number } | null> {
  const cur = await pgOne(db, Restore.watermark);
  if (!cur) throw new Error('intake_cursor has no row');
  return cur.watermark > 0 ? cur : null;
}

/** Processed inbox IDs read per query; pages looked at by the periodic check at most. */
const INBOX_PAGE = 5000;
const CHECK_PAGES = 20;

/**
 * Inbox rows above the watermark marked processed that PROC_STATE does not know (null: none, or
 * a fresh install). Rows PROC_STATE knows are no sign: an operator may lower the watermark to
 * have a late row read again (docs/operations.md). `all`: every page (the command's lost range);
 * else the check stops at the first page with such rows.
 */
export async function inboxBehind(db: Db, inbox: Inbox, timeoutMs: number, all = false): Promise<{ watermark: number; n: number; lo: number; hi: number } | null> {
  const cur = await inUse(db);
  if (!cur) return null;
  let after = cur.watermark;
  let n = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (let page = 0; all || page < CHECK_PAGES; page++) {
    const ids = (await withTimeout(timeoutMs, 'inbox restore check', myRows(inbox, Restore.processedAbove, after, INBOX_PAGE))).map((r) => Number(r.id));
    if (ids.length === 0) break;
    const unknown = (await pgRows(db, Restore.unknownMessages, ids)).map((r) => Number(r.msg_id));
    n += unknown.length;
    for (const id of unknown) {
      lo = Math.min(lo, id);
      hi = Math.max(hi, id);
    }
    if ((n > 0 && !all) || ids.length < INBOX_PAGE) break;
    after = ids[ids.length - 1];
  }
  return n > 0 ? { watermark: cur.watermark, n, lo, hi } : null;
}

const KEY_PREFIX = flightKey('');
export const SCAN_COUNT = 1000;

/** Redis flight keys, one SCAN page at a time. */
export async function* redisFlights(redis: Redis, timeoutMs: number): AsyncGenerator<string[]> {
  let cursor = '0';
  do {
    const [next, keys] = await withTimeout(timeoutMs, 'redis scan', redis.scan(cursor, 'MATCH', `${KEY_PREFIX}*`, 'COUNT', SCAN_COUNT));
    cursor = next;
    if (keys.length) yield keys.map((k) => k.slice(KEY_PREFIX.length));
  } while (cursor !== '0');
}

/** Flights Redis holds newer than Postgres (or Postgres lacks): one MGET + one query per SCAN page. */
export async function redisAhead(db: Db, redis: Redis, timeoutMs: number): Promise<{ flights: number; sample: string[] } | null> {
  const ahead = async (flids: string[]) => {
    if (flids.length === 0) return [];
    // Redis first, then Postgres: the pump commits before it writes Redis, so a live pair never looks ahead
    const values = await withTimeout(timeoutMs, 'redis mget', redis.mget(...flids.map(flightKey)));
    const pg = new Map((await pgRows(db, Restore.flightVersions, flids)).map((r) => [r.flid, r.state_version]));
    return flids.filter((f, i) => {
      const v = values[i];
      if (v === null) return false;
      // toJson writes FLID, STATE, STATE_VERSION first: no need to parse the whole state
      const redisVersion = Number(/"STATE_VERSION":(\d+)/.exec(v)?.[1] ?? 0);
      const pgVersion = pg.get(f);
      return pgVersion === undefined || redisVersion > pgVersion;
    });
  };
  let suspects: string[] = [];
  for await (const page of redisFlights(redis, timeoutMs)) suspects.push(...(await ahead(page)));
  // a flight written right now (Postgres first, then Redis): look again
  if (suspects.length) suspects = await ahead(suspects);
  return suspects.length ? { flights: suspects.length, sample: suspects.slice(0, 5) } : null;
}

export interface WatchDeps {
  db: Db;
  inbox: Inbox;
  /** The pump's client; the intake has none (its check is the inbox alone). */
  redis?: Redis;
  /**
   * msgx.inbox.read-only: a shadow instance never marks the inbox, another instance does — rows
   * above its watermark marked processed are no sign; its inbox check is off.
   */
  inboxReadOnly?: boolean;
  /** The Kafka check (lib/dispatch/restore.ts), pump only. */
  kafka?: () => Promise<Finding | null>;
  clock: Clock;
  timeoutMs: number;
  log: Logger;
  /** Between checks while nothing is behind (≤ 1 min). */
  everyMs?: number;
  /** Between checks while held (the operator's command is seen this soon). */
  heldEveryMs?: number;
}

const REMIND_EVERY_MS = 60_000;
/** How often the watermark and the EVENT_ID sequence are glanced at (one small query). */
const GLANCE_EVERY_MS = 1_000;

/**
 * The check of one process. `held()` is true until the first check of the inbox (and of Redis,
 * where there is one) completed, while any source says Postgres is behind, and while a check
 * triggered by a glance is running. Every GLANCE_EVERY_MS one query reads intake's watermark and
 * the EVENT_ID sequence: neither goes back unless Postgres did (a restore under running
 * processes), and then the full check runs at once instead of at its next period. A check that
 * fails keeps the source's last verdict; a failing Kafka check never holds (the pump does not
 * need Kafka otherwise; the EVENT_ID check comes back with Kafka).
 */
export class RestoreWatch {
  private readonly behind = new Map<Source, string>();
  private readonly checked = new Set<Source>();
  private timer: NodeJS.Timeout | undefined;
  private glancer: NodeJS.Timeout | undefined;
  private remindedAt = 0;
  private stopped = false;
  private running: Promise<void> | null = null;
  private glancing = false;
  private wentBack = false;
  private marks = { watermark: 0, events: 0 };
  private publishedHeld = false; // the last publish held (the log says when holding starts and ends)

  private readonly d: WatchDeps;

  constructor(d: WatchDeps) {
    this.d = d;
    if (!client.register.getSingleMetric('msgx_postgres_behind')) client.register.registerMetric(postgresBehind);
    for (const s of this.sources()) postgresBehind.set({ source: s }, 0);
  }

  private sources(): Source[] {
    return SOURCES.filter((s) => s === 'inbox' || (s === 'redis' && this.d.redis) || (s === 'kafka' && this.d.kafka));
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
  async heldOnceChecked(waitMs = this.d.timeoutMs * 4): Promise<boolean> {
    if (!this.stopped && !this.firstChecked()) await this.checkWithin(waitMs);
    return this.held();
  }

  /** A check of every source, waited for at most ms (a frozen connection: it goes on, and its verdict comes when it comes). */
  private async checkWithin(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.check(), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
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

  /**
   * First check now, then every everyMs (heldEveryMs while held), and the glance every second.
   * Waits for the first check at most a few I/O timeouts: a process whose connections froze still
   * starts, held (held() is true until the inbox and Redis were checked once).
   */
  async start(): Promise<void> {
    setCondition(UNCHECKED, 'the check whether Postgres is behind the inbox and Redis (restored from a backup) has not completed yet; new business is held');
    await this.glance();
    await this.checkWithin(this.d.timeoutMs * 4);
    this.schedule();
    this.glancer = setInterval(() => void this.glance(), GLANCE_EVERY_MS);
    this.glancer.unref();
  }

  /** Stops checking; this process no longer acts on Postgres (shutdown, lost leadership), so it no longer reports it either. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.glancer);
    clearCondition(CONDITION);
    clearCondition(UNCHECKED);
    for (const s of this.sources()) postgresBehind.set({ source: s }, 0);
  }

  private schedule(): void {
    if (this.stopped) return;
    const every = this.held() ? (this.d.heldEveryMs ?? 3_000) : (this.d.everyMs ?? 30_000);
    this.timer = setTimeout(() => void this.check().finally(() => this.schedule()), every);
    this.timer.unref();
  }

  /** The watermark or the EVENT_ID sequence went back: hold, and check every source now. */
  private async glance(): Promise<void> {
    // one query at a time: a glance that timed out keeps its pool connection until Postgres answers
    if (this.glancing || this.stopped) return;
    this.glancing = true;
    const query = pgOne(this.d.db, Restore.marks);
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
        await this.check();
      }
    } catch {
      // Postgres unreachable: the periodic check and PostgresWatch report it
    } finally {
      this.wentBack = false;
    }
  }

  /** One check of every source (concurrent calls share one run). */
  check(): Promise<void> {
    this.running ??= this.checkOnce().finally(() => (this.running = null));
    return this.running;
  }

  /** Every source checked concurrently; each verdict is published as it comes (a slow Kafka read does not delay the inbox's). */
  private async checkOnce(): Promise<void> {
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
    const t = this.d.timeoutMs;
    const redis = this.d.redis;
    const kafka = this.d.kafka;
    await Promise.all([
      run('inbox', async () => {
        if (this.d.inboxReadOnly) return null;
        const r = await inboxBehind(this.d.db, this.d.inbox, t);
        return r ? `${r.n} inbox row(s) in ${r.lo}..${r.hi} are marked processed above intake's watermark ${r.watermark} but unknown to Postgres` : null;
      }),
      redis &&
        run('redis', async () => {
          if (!(await inUse(this.d.db))) return null;
          // a client made at the process's start may still be connecting: its commands are refused until
          // 'ready' (enableOfflineQueue is off), which failed this first check and held the process
          // the driver on first use (a process without Redis, intake, never loads it: docs/decisions.md "Footprint")
          await (await import('../db/redis.ts')).redisReady(redis, t);
          const r = await redisAhead(this.d.db, redis, t);
          return r ? `Redis holds ${r.flights} flight(s) newer than Postgres (e.g. ${r.sample.join(', ')})` : null;
        }),
      kafka && run('kafka', async () => ((await inUse(this.d.db)) ? ((await kafka())?.detail ?? null) : null)),
    ]);
  }

  /** The verdicts so far into the gauge, the condition and the log (one error line when holding starts, a reminder a minute). */
  private publish(): void {
    if (this.stopped) return;
    const wasHeld = this.publishedHeld;
    this.publishedHeld = this.behind.size > 0;
    if (this.firstChecked()) clearCondition(UNCHECKED);
    for (const s of this.sources()) postgresBehind.set({ source: s }, this.behind.has(s) ? 1 : 0);
    const now = this.d.clock.now();
    if (this.behind.size > 0) {
      const reason = `Postgres is behind (restored from a backup?): ${this.findings()
        .map((f) => `${f.source}: ${f.detail}`)
        .join('; ')}. New business is held; see docs/operations.md "Postgres restored from a backup" (npm run recover-restore)`;
      setCondition(CONDITION, reason, now);
      if (!wasHeld || now.getTime() - this.remindedAt >= REMIND_EVERY_MS) {
        this.d.log.error({ findings: this.findings() }, wasHeld ? `still held: ${reason}` : reason);
        this.remindedAt = now.getTime();
      }
    } else {
      clearCondition(CONDITION);
      if (wasHeld) this.d.log.warn('Postgres is no longer behind the inbox, Redis or Kafka; holding ends');
    }
  }
}
