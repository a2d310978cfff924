// Redis heals itself (docs/operations.md "Derived stores: Redis"; docs/decisions.md "Redis written
// by version"). Redis is a copy of committed Postgres state, not business history: when it lost
// data — flushed, restarted without persistence, evicted under maxmemory, a failover to a replica
// that missed the last writes — the pump process rebuilds it from Postgres on its own.
//
//   glance   every GLANCE_EVERY_MS: the generation marker (written after each full re-sync) and
//            the server's run_id. Marker gone → full re-sync now; run_id changed (a restart or a
//            failover to another server) → compare now.
//   compare  every msgx.mirror.check-every: Postgres's STATE_VERSION of every flight against the
//            version Redis holds (read on the server: numbers, not states). A flight missing or
//            older in Redis is looked at again after SETTLE_MS (the pump writes Redis just after
//            its commit), then written from Postgres.
//
// Every write goes through the versioned script (lib/flight/mirror.ts writeMirror): no key goes
// backwards while the pump runs (INV-10), so nothing here takes PIPELINE_LOCK. Redis AHEAD of
// Postgres is not healed: it is the sign of a restored Postgres (lib/pipeline/restore.ts), and
// while that watch holds the pump this one does nothing. A Redis that refuses the rebuild
// (read-only replica, ACL, out of memory) → condition `mirror-redis` (/healthz 503 naming it),
// one ERROR line, retried with backoff; a rebuild is counted only once it completed.
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { withTimeout } from '../core/timeout.ts';
import type { Db } from '../db/postgres.ts';
import type { Redis } from '../db/redis.ts';
import { pgRows } from '../db/statement.ts';
import { mirrorVersions, writeMirror } from '../flight/mirror.ts';
import { readFlights } from '../flight/read.ts';
import { clearCondition, setCondition } from '../runtime/conditions.ts';
import { mirrorBehind, mirrorRebuilds, registerMirrorMetrics } from '../runtime/mirror-metrics.ts';
import * as Mirror from '../sql/mirror.ts';
import * as Restore from '../sql/restore.ts';

/** Written after every full re-sync; its absence means Redis lost what the gateway wrote. */
export const GENERATION_KEY = 'msgx:mirror:generation';
export const CONDITION = 'mirror-redis';

const GLANCE_EVERY_MS = 2_000;
const SETTLE_MS = 1_000;
/** Flights read from Postgres and written per step of a full re-sync. */
const RESYNC_PAGE = 1_000;
const BACKOFF_MS = [2_000, 5_000, 15_000, 30_000, 60_000];

/** What Postgres says of one flight. */
export interface Expected {
  flid: string;
  state: 'ACTIVE' | 'DELETED';
  version: number;
}

/**
 * The flights Redis is behind on, given the version it holds for each (0: no key): an ACTIVE
 * flight missing or older, a DELETED flight whose key still holds an older ACTIVE state. Redis
 * newer than Postgres is not "behind" (a restore sign, lib/pipeline/restore.ts). Pure.
 */
export function behind(expected: readonly Expected[], held: readonly number[]): string[] {
  const out: string[] = [];
  expected.forEach((e, i) => {
    const h = held[i] ?? 0;
    if (e.state === 'ACTIVE' ? h < e.version : h > 0 && h < e.version) out.push(e.flid);
  });
  return out;
}

/** run_id from INFO server (null: not found). */
export function runIdOf(info: string): string | null {
  return /^run_id:(\w+)/m.exec(info)?.[1] ?? null;
}

export interface RedisHealDeps {
  db: Db;
  redis: Redis;
  timeZone: string;
  clock: Clock;
  log: Logger;
  timeoutMs: number;
  /** Between two full compares (msgx.mirror.check-every). */
  everyMs: number;
  /** True while the restore watch holds the pump: nothing is healed then. */
  held: () => boolean;
}

export interface HealOutcome {
  /** Why Redis was found behind (null: it was not). */
  why: string | null;
  /** Flights written from Postgres. */
  written: number;
}

export class RedisHeal {
  private readonly d: RedisHealDeps;
  private glancer: NodeJS.Timeout | undefined;
  private comparer: NodeJS.Timeout | undefined;
  private running: Promise<HealOutcome> | null = null;
  private runId: string | null = null;
  private failures = 0;
  private retryAt = 0;
  private stopped = false;

  constructor(d: RedisHealDeps) {
    this.d = d;
    registerMirrorMetrics(['redis']);
  }

  /** One glance now (bounded), then the glance and the compare on their timers. */
  async start(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.glance(), new Promise<void>((resolve) => (timer = setTimeout(resolve, this.d.timeoutMs * 4)))]);
    clearTimeout(timer);
    this.glancer = setInterval(() => void this.glance(), GLANCE_EVERY_MS);
    this.glancer.unref();
    this.comparer = setInterval(() => void this.run('compare'), this.d.everyMs);
    this.comparer.unref();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.glancer);
    clearInterval(this.comparer);
    clearCondition(CONDITION);
    mirrorBehind.set({ store: 'redis' }, 0);
  }

  /** The generation marker and the server's identity; a full re-sync or a compare when either says so. */
  async glance(): Promise<HealOutcome | null> {
    if (this.stopped || this.running || this.d.held()) return null;
    try {
      const t = this.d.timeoutMs;
      const [marker, info] = await Promise.all([withTimeout(t, 'redis get', this.d.redis.get(GENERATION_KEY)), withTimeout(t, 'redis info', this.d.redis.info('server'))]);
      const runId = runIdOf(info);
      const moved = this.runId !== null && runId !== null && runId !== this.runId;
      this.runId = runId;
      if (marker === null) return await this.run('resync');
      if (moved) return await this.run('compare');
    } catch {
      // Redis unreachable: the pump's mirror step and the dependency check report it
    }
    return null;
  }

  /** One heal at a time; a failed one backs off. */
  run(kind: 'resync' | 'compare'): Promise<HealOutcome> {
    if (this.stopped || this.d.held() || Date.now() < this.retryAt) return Promise.resolve({ why: null, written: 0 });
    this.running ??= (kind === 'resync' ? this.resync() : this.compare()).finally(() => (this.running = null));
    return this.running;
  }

  private async compare(): Promise<HealOutcome> {
    const t = this.d.timeoutMs;
    try {
      const rows = await pgRows(this.d.db, Mirror.flightVersions);
      const expected = rows.map((r) => ({ flid: r.flid, state: r.state, version: r.state_version }));
      const held = await withTimeout(
        t * 4,
        'redis versions',
        mirrorVersions(
          this.d.redis,
          expected.map((e) => e.flid),
        ),
      );
      let suspects = behind(expected, held);
      if (suspects.length === 0) return this.healthy();
      // the pump writes Redis just after its commit: look again once that has had time to land
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      const again = new Map((await pgRows(this.d.db, Restore.flightVersions, suspects)).map((r) => [r.flid, r.state_version]));
      const bySuspect = new Map(expected.map((e) => [e.flid, e]));
      const still = suspects.map((f) => ({ ...bySuspect.get(f)!, version: again.get(f) ?? 0 }));
      suspects = behind(still, await withTimeout(t * 4, 'redis versions', mirrorVersions(this.d.redis, suspects)));
      if (suspects.length === 0) return this.healthy();
      const why = `${suspects.length} flight(s) missing or older in Redis than in Postgres (e.g. ${suspects.slice(0, 5).join(', ')})`;
      return await this.rebuild(why, suspects);
    } catch (e) {
      return this.failed(e, 'compare');
    }
  }

  private async resync(): Promise<HealOutcome> {
    try {
      const flids = (await pgRows(this.d.db, Restore.allFlids)).map((r) => r.flid);
      return await this.rebuild('the generation marker is gone (Redis flushed, restarted without persistence, evicted, or another server)', flids, true);
    } catch (e) {
      return this.failed(e, 'resync');
    }
  }

  /** Writes the flights from Postgres (versioned); a full re-sync ends by writing the marker. */
  private async rebuild(why: string, flids: string[], full = false): Promise<HealOutcome> {
    const started = Date.now();
    mirrorBehind.set({ store: 'redis' }, flids.length);
    this.d.log.warn({ store: 'redis', flights: flids.length, full }, `Redis is behind Postgres: ${why}; rebuilding it from Postgres`);
    let written = 0;
    let refused = 0;
    for (let i = 0; i < flids.length && !this.stopped; i += RESYNC_PAGE) {
      const page = flids.slice(i, i + RESYNC_PAGE);
      const states = await readFlights(this.d.db, page, this.d.timeZone);
      refused += await withTimeout(
        this.d.timeoutMs * 4,
        'redis rebuild',
        writeMirror(
          this.d.redis,
          page.map((flid) => ({ flid, state: states.get(flid) ?? null })),
        ),
      );
      written += page.length;
    }
    if (this.stopped) return { why, written };
    if (full) await withTimeout(this.d.timeoutMs, 'redis set', this.d.redis.set(GENERATION_KEY, JSON.stringify({ at: this.d.clock.now().toISOString(), flights: flids.length })));
    mirrorRebuilds.inc({ store: 'redis' });
    this.d.log.warn({ store: 'redis', flights: written, newerAlready: refused, ms: Date.now() - started, full }, `Redis rebuilt from Postgres: ${written} flight(s) written`);
    this.healthy();
    return { why, written };
  }

  private healthy(): HealOutcome {
    mirrorBehind.set({ store: 'redis' }, 0);
    if (this.failures > 0) this.d.log.info({ store: 'redis', failures: this.failures }, 'Redis rebuild works again');
    this.failures = 0;
    this.retryAt = 0;
    clearCondition(CONDITION);
    return { why: null, written: 0 };
  }

  /**
   * Redis refused (a reply error: READONLY replica, NOPERM, OOM): condition, one ERROR line,
   * backoff. Redis or Postgres unreachable is no refusal: the dependency checks and the pump's
   * mirror step report it, and the next period tries again (a re-sync cut short wrote no marker,
   * so it runs again whole).
   */
  private failed(e: unknown, kind: string): HealOutcome {
    if ((e as Error)?.name !== 'ReplyError') return { why: null, written: 0 };
    const reason = `${(e as Error).message}`;
    const wait = BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)];
    this.failures++;
    this.retryAt = Date.now() + wait;
    setCondition(CONDITION, `Redis could not be checked or rebuilt from Postgres (${kind}): ${reason}; retried in ${wait / 1000} s`, this.d.clock.now());
    if (this.failures === 1) this.d.log.error({ store: 'redis', err: reason, kind }, 'Redis check or rebuild failed; retrying with backoff (docs/operations.md "Derived stores: Redis")');
    return { why: `failed: ${reason}`, written: 0 };
  }
}
