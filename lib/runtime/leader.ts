// Single-writer duties (intake, pump): hold a session-level advisory lock on a dedicated
// connection for as long as the duty runs; a second instance stands by, polling the lock.
// If the dedicated connection dies, the lock is gone with it: the duty is stopped and the
// instance goes back to standing by (another instance may have taken over meanwhile).
//
// Heartbeat: a leader whose network dies leaves its server session behind — the
// advisory lock stays held until the server's TCP keepalive ends the session (hours with the
// defaults). So:
//   - the leader runs `select 1` on its lock session every HEARTBEAT_MS; every statement moves
//     the session's pg_stat_activity.state_change, which is the heartbeat the others read;
//   - if a heartbeat does not answer within SUSPECT_MS (2 s) the leader asks the server on a
//     fresh connection whether its session still holds the lock and is busy with a statement (a
//     legitimately long one; then it asks again every beat); if not — or if that cannot be
//     asked either — it stops the duty at once and stands by again: its session is destroyed,
//     never reused, and ended on the server from a fresh connection (on a frozen path the
//     server keeps it, holding the lock, until its keepalives give up), so that the next
//     attempt takes the lock at once instead of waiting for the session to look stale;
//   - a stand-by that finds the lock held by a session that is idle (or idle in transaction)
//     with no activity for longer than the deadline, or running one statement far past
//     statement_timeout, ends that backend (pg_terminate_backend) and takes the lock.
// Take-over after a leader's network dies: ≤ deadline + poll + a round trip (≈ 8 s with the
// defaults), measured in test/integration/leader-takeover.test.ts.
import type { Clock } from '../core/clock.ts';
import type pg from 'pg';
import type { Logger } from 'pino';
import { connectClient, createSessionDb, destroySocket, SESSION_LIMITS, type Db, type PgWhere } from '../db/postgres.ts';
import { explained } from '../db/tls.ts';
import * as Locks from '../sql/locks.ts';
import * as Probe from '../sql/probe.ts';
import { noAnswer, withTimeout } from '../core/timeout.ts';
import { RUNTIME } from '../core/tuning.ts';

export interface LeaderHandle {
  client: pg.Client;
  /** Aborted the moment leadership ends (connection lost, or shutdown): loops must stop at once. */
  signal: AbortSignal;
}

export const LEADER_TIMING = RUNTIME.leader;
export const MAX_RETRY_MS = RUNTIME.leaderMaxRetryMs;
export const SUSPECT_MS = RUNTIME.leaderSuspectMs;

export async function runAsLeader(opts: {
  url: PgWhere;
  name: string;
  lockKey: number;
  log: Logger;
  clock: Clock;
  /** How a failed attempt is reported (default: one error line each); the process passes its rate-limited one (lib/runtime/health.ts quiet). */
  onError?: (err: Error, message: string) => void;
  /** Start the duty; returns a function that stops it. */
  start: (h: LeaderHandle) => Promise<() => Promise<void>>;
  signal: AbortSignal;
  /** Called the moment a tenure ends with the session lost (not on shutdown): e.g. start the pool over on new connections. */
  onLost?: () => Promise<void>;
  /** Called each time this instance finds another one active and stands by. */
  onStandby?: () => void;
  pollMs?: number;
  heartbeatMs?: number;
  deadlineMs?: number;
}): Promise<void> {
  const poll = opts.pollMs ?? LEADER_TIMING.pollMs;
  const beat = opts.heartbeatMs ?? LEADER_TIMING.heartbeatMs;
  const deadline = opts.deadlineMs ?? LEADER_TIMING.deadlineMs;
  let announced = false;
  /** Failed attempts in a row: the retry waits poll, 2 poll, 4 poll … up to MAX_RETRY_MS (a wrong certificate or password is not hammered). */
  let failures = 0;
  while (!opts.signal.aborted) {
    let client: pg.Client | undefined;
    try {
      client = await connectClient(opts.url, opts.name, { ms: deadline * 2, what: 'connect' }).catch((e) => {
        throw explained('postgres', e);
      });
      failures = 0;
      // the lock session's statements (lib/sql/locks.ts, lib/sql/probe.ts) run on this connection
      const session = createSessionDb(client);
      if (!(await tryTake(session, opts.lockKey, deadline, opts.log, opts.name))) {
        if (!announced) opts.log.info({ lock: opts.lockKey }, `${opts.name}: another instance is active; standing by`);
        announced = true;
        opts.onStandby?.();
        await endClient(client);
        client = undefined;
        await sleep(poll, opts.signal);
        continue;
      }
      announced = false;
      const pid = (await withDeadline(Locks.readBackendPid(session), deadline, 'pid'))!.pid;
      opts.log.info({ lock: opts.lockKey, backend: pid }, `${opts.name}: leader lock taken; active`);
      const tenure = new AbortController();
      const onShutdown = () => tenure.abort();
      opts.signal.addEventListener('abort', onShutdown, { once: true });
      const c = client;
      // Watch the connection that holds the lock.
      const lost = new Promise<string>((resolve) => {
        c.once('error', (e) => resolve(`connection error: ${e.message}`));
        c.once('end', () => resolve('connection ended'));
      });
      const stop = await opts.start({ client: c, signal: tenure.signal });
      const aborted = new Promise<string>((resolve) => {
        if (opts.signal.aborted) resolve('shutdown');
        opts.signal.addEventListener('abort', () => resolve('shutdown'), { once: true });
      });
      const heartbeat = heartbeatLoop({ session, url: opts.url, name: opts.name, lockKey: opts.lockKey, pid, beat, deadline, signal: tenure.signal, log: opts.log, clock: opts.clock });
      const why = await Promise.race([lost, aborted, heartbeat]);
      if (why !== 'shutdown') opts.log.error({ why, backend: pid }, `${opts.name}: lost the leader session; stopping and standing by again`);
      tenure.abort(); // the duty's loops stop now, not at the end of their budget
      opts.signal.removeEventListener('abort', onShutdown);
      if (why !== 'shutdown') destroySocket(c); // never reuse a session that stopped answering
      // A session that stopped answering while the server could be asked (a frozen path): the
      // server keeps it, holding the lock; end it from a fresh connection. (A connection that
      // failed outright is left to the stale check of the next attempt.)
      const ended = why.startsWith('no heartbeat answer') ? endOldSession(opts.url, opts.name, pid, Math.min(deadline, 2000), opts.log) : Promise.resolve();
      const reset = why === 'shutdown' ? Promise.resolve() : (opts.onLost?.().catch(() => {}) ?? Promise.resolve());
      await Promise.all([stop(), ended, reset]);
    } catch (e) {
      failures++;
      const wait = Math.min(poll * 2 ** Math.min(failures - 1, 3), MAX_RETRY_MS);
      const message = `${opts.name}: leadership loop error; retrying in ${(wait / 1000).toFixed(1)} s`;
      if (opts.onError) opts.onError(e as Error, message);
      else opts.log.error({ err: e }, message);
      if (client) destroySocket(client);
      await sleep(wait, opts.signal);
    } finally {
      if (client) await endClient(client);
    }
  }
}

/**
 * Take the lock; if another session holds it and that session is stale (no statement for
 * longer than `deadline`, or one statement running far past statement_timeout), end that
 * backend first. Returns whether the lock is ours.
 */
async function tryTake(session: Db, key: number, deadline: number, log: Logger, name: string): Promise<boolean> {
  const bounded = <T>(p: Promise<T>) => withDeadline(p, deadline, 'lock');
  if ((await bounded(Locks.tryLock(session, key)))!.ok) return true;
  const stale = await bounded(Locks.listStaleHolders(session, key, deadline, SESSION_LIMITS.statementTimeoutMs));
  if (stale.length === 0) return false;
  for (const s of stale) {
    log.warn({ lock: key, backend: s.pid, state: s.state, silentSeconds: Math.round(s.silent_s * 10) / 10 }, `${name}: the active instance's session is stale; ending it and taking over`);
    await bounded(Locks.terminateBackend(session, s.pid, deadline));
  }
  return (await bounded(Locks.tryLock(session, key)))!.ok;
}

/** Resolves with the reason the session is considered lost ('shutdown' when the tenure ends). */
async function heartbeatLoop(o: {
  session: Db;
  url: PgWhere;
  name: string;
  lockKey: number;
  pid: number;
  beat: number;
  deadline: number;
  signal: AbortSignal;
  log: Logger;
  clock: Clock;
}): Promise<string> {
  const now = () => o.clock.now().getTime();
  let pending: Promise<unknown> | null = null;
  let answered = false;
  let since = 0;
  let warned = false;
  const suspect = Math.min(SUSPECT_MS, o.deadline);
  while (!o.signal.aborted) {
    await sleep(o.beat, o.signal);
    if (o.signal.aborted) break;
    if (!pending) {
      since = now();
      answered = false;
      warned = false;
      // A server error (e.g. inside a transaction the duty aborted) is still an answer.
      pending = Probe.select1(o.session).then(
        () => {
          answered = true;
        },
        (e: Error & { code?: string }) => {
          if (!e.code) throw e;
          answered = true;
        },
      );
    }
    const left = Math.max(0, since + suspect - now());
    const outcome = await Promise.race([
      pending.then(
        () => 'ok' as const,
        (e: Error) => `heartbeat failed: ${e.message}`,
      ),
      sleep(left).then(() => 'late' as const),
    ]);
    if (outcome === 'ok') {
      pending = null;
      continue;
    }
    if (outcome !== 'late') return outcome;
    // Late: a long statement of the duty, or a dead path? Ask the server on a fresh connection.
    const busy = await stillBusy(o).catch((e: Error) => `cannot reach the server: ${e.message}`);
    if (answered) continue; // the answer came while we asked (a busy event loop, not a dead path)
    if (busy !== true) return `no heartbeat answer within ${now() - since} ms (${busy})`;
    if (!warned) o.log.warn({ backend: o.pid, waitingMs: now() - since }, `${o.name}: heartbeat waits behind a long statement`);
    warned = true;
  }
  return 'shutdown';
}

/** Whether our backend still holds the lock and runs a statement not yet far past statement_timeout. */
async function stillBusy(o: { url: PgWhere; name: string; lockKey: number; pid: number; deadline: number }): Promise<true | string> {
  const c = await connectClient(o.url, `${o.name}-check`, { ms: o.deadline, what: 'check connect' });
  try {
    const row = await withDeadline(Locks.readHolderState(createSessionDb(c), o.pid, o.lockKey), o.deadline, 'check');
    if (!row) return 'the session is gone';
    if (!row.held) return 'the session no longer holds the lock';
    return row.state === 'active' ? true : `the session is ${row.state} yet did not answer`;
  } finally {
    await endClient(c);
  }
}

/** End our own former session on the server (it may hold the lock on a frozen path); bounded, best effort. */
async function endOldSession(url: PgWhere, name: string, pid: number, deadline: number, log: Logger): Promise<void> {
  let c: pg.Client | undefined;
  try {
    c = await connectClient(url, `${name}-end-old`, { ms: deadline, what: 'connect' });
    const r = await withDeadline(Locks.terminateBackend(createSessionDb(c), pid, deadline), deadline, 'terminate');
    if (r?.terminated) log.warn({ backend: pid }, `${name}: ended the former leader session on the server`);
  } catch {
    // unreachable: a later lock attempt ends it as stale (tryTake)
  } finally {
    if (c) await endClient(c);
  }
}

/** end() waits for the server's goodbye; on a dead path it would wait forever. */
async function endClient(c: pg.Client): Promise<void> {
  await withDeadline(c.end(), 2000, 'end').catch(() => destroySocket(c));
}

/** `p` within `ms`, else "<what> did not answer within <ms> ms" (lib/core/timeout.ts withTimeout). */
export const withDeadline = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => withTimeout(ms, noAnswer(what), p);

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
