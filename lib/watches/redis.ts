// Redis heals itself (docs/operations.md "Derived stores: Redis"; docs/decisions.md "Redis written
// by version"). Redis is a copy of committed Postgres state, not business history: when it lost
// data — flushed, restarted without persistence, evicted under maxmemory, a failover to a replica
// that missed the last writes — the pump process rebuilds it from Postgres on its own.
//
// A watch of lib/runtime/watch.ts, every WATCH.redis.glanceEveryMs:
//   check   the generation marker (written after each full re-sync) and the server's run_id.
//           Marker gone → a full re-sync; run_id changed (a restart or a failover to another
//           server), or msgx.mirror.check-every passed since the last compare → compare:
//           Postgres's STATE_VERSION of every flight against the version Redis holds (read on the
//           server: numbers, not states). A flight missing or older in Redis is looked at again
//           after WATCH.redis.settleMs (the pump writes Redis just after its commit).
//   repair  the flights found behind (every flight for a re-sync) written from Postgres.
//
// Every write goes through the versioned script (lib/flight/mirror.ts writeMirror): no key goes
// backwards while the pump runs (INV-10), so nothing here takes PIPELINE_LOCK. Redis AHEAD of
// Postgres is not healed: it is the sign of a restored Postgres (./restore.ts), and while that
// watch holds the pump this one does nothing. A Redis that refuses the rebuild (read-only
// replica, ACL, out of memory) → condition `mirror-redis` (/healthz 503 naming it), one ERROR
// line, retried with the watches' backoff; a rebuild is counted only once it completed. Redis or
// Postgres unreachable is no refusal: the dependency checks and the pump's mirror step report it,
// and the next period tries again (a re-sync cut short wrote no marker, so it runs again whole).
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { withTimeout } from '../core/timeout.ts';
import { WATCH } from '../core/tuning.ts';
import type { Db } from '../db/postgres.ts';
import type { Redis } from '../db/redis.ts';
import { mirrorVersions, writeMirror } from '../flight/mirror.ts';
import { readFlights } from '../flight/read.ts';
import { Refused, Watch, Watched } from '../runtime/watch.ts';
import * as Mirror from '../sql/mirror.ts';
import * as Restore from '../sql/restore.ts';

/** Written after every full re-sync; its absence means Redis lost what the gateway wrote. */
export const GENERATION_KEY = 'msgx:mirror:generation';
export const CONDITION = 'mirror-redis';

/** What Postgres says of one flight. */
export interface Expected {
  flid: string;
  state: 'ACTIVE' | 'DELETED';
  version: number;
}

/**
 * The flights Redis is behind on, given the version it holds for each (0: no key): an ACTIVE
 * flight missing or older, a DELETED flight whose key still holds an older ACTIVE state. Redis
 * newer than Postgres is not "behind" (a restore sign, ./restore.ts). Pure.
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

/** What the check found: every flight again (the marker is gone), or the flights behind. */
type Found = { why: string; full: true } | { why: string; full: false; flids: string[] };

export class RedisHeal extends Watched<Found> {
  private readonly d: RedisHealDeps;
  protected readonly watch: Watch<Found>;
  private runId: string | null = null;
  private comparedAt: number;
  /** Flights last found behind (the gauge), 0 once healed. */
  private behindBy = 0;

  constructor(d: RedisHealDeps) {
    super();
    this.d = d;
    this.comparedAt = this.now();
    this.watch = new Watch<Found>({
      ...d,
      everyMs: WATCH.redis.glanceEveryMs,
      condition: CONDITION,
      store: 'redis',
      check: () => this.refusal(() => this.look()),
      repair: (found) => this.refusal(() => this.rebuild(found)),
      // Redis behind is healed, not a reason to be unready: only a refusal is (the watch adds it)
      status: () => ({ problem: null, behind: this.behindBy }),
    });
  }

  private async look(): Promise<Found | null> {
    if (this.d.held()) return null;
    const t = this.d.timeoutMs;
    let marker: string | null;
    let info: string;
    try {
      [marker, info] = await Promise.all([withTimeout(t, 'redis get', this.d.redis.get(GENERATION_KEY)), withTimeout(t, 'redis info', this.d.redis.info('server'))]);
    } catch (e) {
      if ((e as Error)?.name === 'ReplyError') throw e;
      return null; // Redis unreachable: the pump's mirror step and the dependency check report it
    }
    const runId = runIdOf(info);
    const moved = this.runId !== null && runId !== null && runId !== this.runId;
    this.runId = runId;
    if (marker === null) return { why: 'the generation marker is gone (Redis flushed, restarted without persistence, evicted, or another server)', full: true };
    if (!moved && this.now() - this.comparedAt < this.d.everyMs) return null;
    this.comparedAt = this.now();
    return this.compare();
  }

  private async compare(): Promise<Found | null> {
    const t = this.d.timeoutMs * WATCH.redis.bulkTimeouts;
    const rows = await Mirror.readFlightVersions(this.d.db);
    const expected = rows.map((r) => ({ flid: r.flid, state: r.state, version: r.state_version }));
    const held = await withTimeout(
      t,
      'redis versions',
      mirrorVersions(
        this.d.redis,
        expected.map((e) => e.flid),
      ),
    );
    let suspects = behind(expected, held);
    if (suspects.length === 0) return this.healthy();
    // the pump writes Redis just after its commit: look again once that has had time to land
    await new Promise((r) => setTimeout(r, WATCH.redis.settleMs));
    const again = new Map((await Restore.readFlightVersions(this.d.db, suspects)).map((r) => [r.flid, r.state_version]));
    const bySuspect = new Map(expected.map((e) => [e.flid, e]));
    const still = suspects.map((f) => ({ ...bySuspect.get(f)!, version: again.get(f) ?? 0 }));
    suspects = behind(still, await withTimeout(t, 'redis versions', mirrorVersions(this.d.redis, suspects)));
    if (suspects.length === 0) return this.healthy();
    return { why: `${suspects.length} flight(s) missing or older in Redis than in Postgres (e.g. ${suspects.slice(0, 5).join(', ')})`, full: false, flids: suspects };
  }

  /** Writes the flights from Postgres (versioned); a full re-sync ends by writing the marker. */
  private async rebuild(found: Found): Promise<void> {
    const started = this.now();
    const flids = found.full ? (await Restore.listAllFlids(this.d.db)).map((r) => r.flid) : found.flids;
    this.behindBy = flids.length;
    this.watch.publish();
    this.d.log.warn({ store: 'redis', flights: flids.length, full: found.full }, `Redis is behind Postgres: ${found.why}; rebuilding it from Postgres`);
    let written = 0;
    let refused = 0;
    const page = WATCH.redis.rebuildPage;
    for (let i = 0; i < flids.length && !this.watch.stopped; i += page) {
      const some = flids.slice(i, i + page);
      const states = await readFlights(this.d.db, some, this.d.timeZone);
      refused += await withTimeout(
        this.d.timeoutMs * WATCH.redis.bulkTimeouts,
        'redis rebuild',
        writeMirror(
          this.d.redis,
          some.map((flid) => ({ flid, state: states.get(flid) ?? null })),
        ),
      );
      written += some.length;
    }
    if (this.watch.stopped) return;
    if (found.full) await withTimeout(this.d.timeoutMs, 'redis set', this.d.redis.set(GENERATION_KEY, JSON.stringify({ at: this.d.clock.now().toISOString(), flights: flids.length })));
    this.watch.rebuilt();
    this.d.log.warn({ store: 'redis', flights: written, newerAlready: refused, ms: this.now() - started, full: found.full }, `Redis rebuilt from Postgres: ${written} flight(s) written`);
    this.healthy();
  }

  private healthy(): null {
    this.behindBy = 0;
    return null;
  }

  /** A reply error (READONLY replica, NOPERM, OOM) is Redis refusing; anything else is not. */
  private async refusal<T>(f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      // the reply's code (READONLY, NOPERM, OOM) is the kind: a script's refusal words the same code otherwise
      const message = (e as Error)?.name === 'ReplyError' ? (e as Error).message : null;
      if (message) throw new Refused(`Redis refused the check or the rebuild from Postgres: ${message} (docs/operations.md "Derived stores: Redis")`, message.split(' ')[0]);
      throw e;
    }
  }

  private now(): number {
    return this.d.clock.now().getTime();
  }
}
