// A watchdog over a process's Postgres pool: a frozen connection (its path lost its NAT /
// firewall state, or a failover moved the address) neither answers nor fails — a call on it
// would wait until TCP gives up, hours later, and graphile-worker's runner, the duties and the
// routes with it. A client-side query timeout cannot tell that apart from a long statement, so
// the watchdog asks the server: every second, if a call has waited longer than SUSPECT_MS, it
// looks up the backends of the busy connections on a FRESH connection (pg_stat_activity). A
// backend that is idle (it answered, or never got the call), gone, or blocked writing to the
// client while the call waits is stuck: its socket is destroyed (the call fails, the pool drops
// the client) and, since its siblings opened before the same fault are likely frozen too, every
// idle connection of the pool is closed as well: the next calls run on new connections. A
// statement the server is still running is left alone (statement_timeout bounds it). When the
// server cannot be reached on a fresh connection either, nothing is destroyed: that is an
// outage, not a frozen path, and the calls fail on their own. The server keeps the session of a
// frozen connection (its transaction, its locks) until its keepalives give up: the watchdog
// ends the sessions it abandons (pg_terminate_backend) from its fresh connection. A connection
// that fails under the process (reset by the path while the server kept its end: a half-open
// path, a client-side reset) leaves the same kind of session behind, in the middle of its
// transaction with its row and advisory locks, which the process's next round then waits on or
// skips until idle_in_transaction_session_timeout ends it (60 s): the watchdog ends those too,
// from a fresh connection within a second or two (`endLost`). Dedicated connections (a purge
// session holding locks) are watched the same way (`adopt`).
import type pg from 'pg';
import type { Clock } from '../core/clock.ts';
import { WATCH } from '../core/tuning.ts';
import { connectClient, createSessionDb, destroySocket, type Db, type PgWhere } from '../db/postgres.ts';
import * as Locks from '../sql/locks.ts';
import * as Probe from '../sql/probe.ts';
import { withDeadline } from './leader.ts';
import type { Logger } from './log.ts';
import { Refused, Watch } from './watch.ts';

const T = WATCH.pool;
/** A call waiting longer than this makes the watchdog ask the server. */
export const SUSPECT_MS = T.suspectMs;

interface Inflight {
  n: number;
  since: number;
}

/** A connection that failed under the process: its backend, its application name, when it failed. */
interface Lost {
  pid: number;
  app: string;
  at: number;
}

type Client = pg.PoolClient & { processID?: number | null };

export interface PoolWatch {
  stop(): Promise<void>;
  /**
   * Start over on new connections (after a lost leader session: the path the pool's connections
   * share is suspect): close every idle connection now and sweep the busy ones at once.
   */
  reset(): Promise<void>;
  /** Watch a dedicated connection (a session holding locks) the same way while it is open. */
  adopt(c: pg.Client): void;
}

/** The server could not be reached on a fresh connection: an outage, not a frozen path (the calls fail on their own); tried again after the pool's backoff. */
const UNREACHABLE = 'postgres could not be reached on a fresh connection';

export interface PoolWatchOptions {
  url: PgWhere;
  clock: Clock;
  log: Logger;
  onStuck?: (err: Error) => void;
  onLostEnded?: (pids: number[]) => void;
  timeoutMs?: number;
}

/**
 * A watch of ./watch.ts, every WATCH.pool.everyMs: check = a busy call older than SUSPECT_MS
 * (then `sweep`), else a lost session to end (`endLost`); the repair is that one; a server that
 * cannot be reached on a fresh connection is tried again after WATCH.pool.unreachableBackoff.
 */
export function watchPool(pool: pg.Pool, o: PoolWatchOptions): PoolWatch {
  const inflight = new Map<Client, Inflight>();
  const lost = new Map<number, Lost>();
  const timeoutMs = o.timeoutMs ?? 2000;
  const now = () => o.clock.now().getTime();
  const watch = (c: Client) => {
    track(c, inflight, now);
    // the pg client emits 'error' once its connection fails under it (never on a graceful end)
    c.on('error', () => {
      const app = (c as unknown as { connectionParameters?: { application_name?: string } }).connectionParameters?.application_name;
      if (c.processID && app) lost.set(c.processID, { pid: c.processID, app, at: now() });
    });
  };
  pool.on('connect', (c: pg.PoolClient) => watch(c as Client));
  pool.on('remove', (c: pg.PoolClient) => inflight.delete(c as Client));
  const reached = (ok: boolean) => {
    if (!ok) throw new Refused(UNREACHABLE);
  };
  const loop = new Watch<'sweep' | 'lost'>({
    clock: o.clock,
    log: o.log,
    timeoutMs,
    everyMs: T.everyMs,
    backoff: T.unreachableBackoff,
    quiet: true,
    check: async () => {
      const t = now();
      if ([...inflight.values()].some((f) => f.n > 0 && t - f.since >= T.suspectMs)) return 'sweep';
      return lost.size > 0 ? 'lost' : null;
    },
    repair: async (what) => reached(what === 'sweep' ? await sweep(inflight, o.url, timeoutMs, o.onStuck, T.stuckMinMs, now) : await endLost(lost, o.url, timeoutMs, now, o.onLostEnded)),
    status: () => ({ problem: null, behind: 0 }),
  });
  void loop.start();
  return {
    stop: () => loop.stop(),
    adopt: (c) => {
      watch(c as Client);
      c.once('end', () => inflight.delete(c as Client));
    },
    reset: async () => {
      for (const [c, f] of inflight) if (f.n === 0) destroySocket(c);
      await sweep(inflight, o.url, timeoutMs, o.onStuck, T.resetMinMs, now);
    },
  };
}

/** Count the calls outstanding on a client (promise and callback forms). */
function track(c: Client, inflight: Map<Client, Inflight>, now: () => number): void {
  const state: Inflight = { n: 0, since: 0 };
  inflight.set(c, state);
  const query = c.query.bind(c) as (...args: unknown[]) => unknown;
  const done = () => {
    state.n = Math.max(0, state.n - 1);
    state.since = now();
  };
  (c as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    if (state.n++ === 0) state.since = now();
    const last = args.length - 1;
    if (typeof args[last] === 'function') {
      const cb = args[last] as (...r: unknown[]) => unknown;
      args[last] = (...r: unknown[]) => {
        done();
        return cb(...r);
      };
      return query(...args);
    }
    const r = query(...args) as { then?: (a: () => void, b: () => void) => void } | undefined;
    if (r && typeof r.then === 'function') r.then(done, done);
    else done(); // a Submittable (cursor) is not watched: it may rest between reads
    return r;
  };
}

/**
 * Looks up the busy connections' backends on a fresh connection and closes the stuck ones. False
 * when the server could not be reached: the watch tries again after its backoff, not every
 * second — each attempt that a black-holed path holds reaches the server when the path comes
 * back, as a session of its own (8 processes × one a second filled max_connections in a test).
 */
async function sweep(inflight: Map<Client, Inflight>, url: PgWhere, timeoutMs: number, onStuck: ((err: Error) => void) | undefined, minAgeMs: number, now: () => number): Promise<boolean> {
  const t = now();
  const busy = [...inflight.entries()].filter(([c, f]) => f.n > 0 && t - f.since >= minAgeMs && c.processID);
  if (busy.length === 0) return true;
  const stuck = await onFreshSession(url, timeoutMs, async (db) => {
    const rows = await withDeadline(
      Probe.readBackendStates(
        db,
        busy.map(([c]) => c.processID!),
      ),
      timeoutMs,
      'pool watch',
    );
    const states = new Map(rows.map((r) => [r.pid, r]));
    let n = 0;
    const orphans: number[] = [];
    for (const [c, f] of busy) {
      const s = states.get(c.processID!);
      const dead = !s || (s.state !== 'active' && s.state !== 'fastpath function call') || s.wait_event === 'ClientWrite';
      if (!dead) continue;
      n++;
      onStuck?.(
        new Error(
          `a Postgres connection (backend ${c.processID}) waited ${Math.round((now() - f.since) / 100) / 10} s while the server says ${s ? `${s.state}${s.wait_event ? `/${s.wait_event}` : ''}` : 'the backend is gone'}: its path is frozen; connection closed`,
        ),
      );
      if (s) orphans.push(c.processID!);
      destroySocket(c);
    }
    // The server keeps a frozen connection's session (its transaction, its locks) until its own
    // keepalives give up: end the sessions we just abandoned, from the fresh connection.
    for (const pid of orphans) await withDeadline(Locks.terminateBackend(db, pid, 0), timeoutMs, 'terminate').catch(() => {});
    return n;
  }).catch(() => -1); // the server cannot be reached at all: an outage, the calls fail on their own
  if (stuck <= 0) return stuck === 0;
  // Its siblings opened before the same fault are likely frozen too: start over on new connections.
  for (const [c, f] of inflight) if (f.n === 0) destroySocket(c);
  return true;
}

/** fn on a fresh connection of its own (connected within timeoutMs), ended afterwards without waiting. */
async function onFreshSession<T>(url: PgWhere, timeoutMs: number, fn: (db: Db) => Promise<T>): Promise<T> {
  const check = await connectClient(url, 'pool-watch', { ms: timeoutMs, what: 'pool watch connect' });
  try {
    return await fn(createSessionDb(check));
  } finally {
    void withDeadline(check.end(), 500, 'end').catch(() => destroySocket(check));
  }
}

/**
 * Ends, from a fresh connection, the server sessions of connections that failed under the process
 * (`lost`): only a backend of the same pid and application name that started before the failure
 * (a pid the server gave to a newer session is left alone). False when the server could not be
 * reached: the sessions are kept for a later try, up to WATCH.pool.lostGiveUpMs after their failure.
 */
async function endLost(lost: Map<number, Lost>, url: PgWhere, timeoutMs: number, now: () => number, onEnded?: (pids: number[]) => void): Promise<boolean> {
  const t = now();
  for (const [pid, l] of lost) if (t - l.at > T.lostGiveUpMs) lost.delete(pid);
  const batch = [...lost.values()];
  if (batch.length === 0) return true;
  try {
    const ended = await onFreshSession(url, timeoutMs, (db) =>
      withDeadline(
        Locks.terminateLost(
          db,
          batch.map((l) => l.pid),
          batch.map((l) => l.app),
          batch.map((l) => t - l.at),
        ),
        timeoutMs,
        'pool watch',
      ),
    );
    for (const l of batch) lost.delete(l.pid);
    if (ended.length) onEnded?.(ended.map((r) => r.pid));
    return true;
  } catch {
    return false; // the server cannot be reached: an outage; try again later
  }
}
