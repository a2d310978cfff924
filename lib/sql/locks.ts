// SQL of advisory locks. Statement conventions: lib/db/statement.ts.
import { type Executor, pgOne, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

// ---- lib/pipeline/pump/ports.ts, lib/lifecycle/common.ts, lib/lifecycle/inbox.ts, lib/lifecycle/flights.ts, lib/pipeline/backfill.ts, lib/pipeline/operator.ts

const lockStatement = pgStatement<[key: number]>('locks.lock', 'select pg_advisory_lock($1::bigint)');
/** Takes the session-level advisory lock $1, waiting for it (up to lock_timeout). */
export function lock(db: Executor, key: number): Promise<number> {
  return pgRun(db, lockStatement, key);
}

const unlockStatement = pgStatement<[key: number], { released: boolean }>('locks.unlock', 'select pg_advisory_unlock($1::bigint) as released');
/** Releases the session-level advisory lock $1. */
export function unlock(db: Executor, key: number): Promise<RowOf<typeof unlockStatement> | undefined> {
  return pgOne(db, unlockStatement, key);
}

const xactLockStatement = pgStatement<[key: number]>('locks.xact_lock', 'select pg_advisory_xact_lock($1::bigint)');
/** Takes the transaction-scoped advisory lock $1, waiting for it (up to lock_timeout). */
export function xactLock(db: Executor, key: number): Promise<number> {
  return pgRun(db, xactLockStatement, key);
}

const lockWantedStatement = pgStatement<[key: number], { w: boolean }>(
  'locks.lock_wanted',
  `select exists (select 1 from pg_locks where locktype = 'advisory' and objid = $1::oid and objsubid = 1 and not granted
                    and database = (select oid from pg_database where datname = current_database())) as w`,
);
/** Is another session of this database waiting for the advisory lock $1? */
export function isLockWanted(db: Executor, key: number): Promise<RowOf<typeof lockWantedStatement> | undefined> {
  return pgOne(db, lockWantedStatement, key);
}

const setLockTimeoutStatement = pgStatement<[timeout: string]>('locks.set_lock_timeout', `select set_config('lock_timeout', $1::text, false)`);
/** Sets this session's lock_timeout ($1, e.g. '60000ms'). */
export function setLockTimeout(db: Executor, timeout: string): Promise<number> {
  return pgRun(db, setLockTimeoutStatement, timeout);
}

const resetLockTimeoutStatement = pgStatement('locks.reset_lock_timeout', `select set_config('lock_timeout', null, false)`);
/** Back to the session's own lock_timeout (its connection setting): set_config with NULL is RESET. */
export function resetLockTimeout(db: Executor): Promise<number> {
  return pgRun(db, resetLockTimeoutStatement);
}

// ---- workers/pump.ts

const setSessionTimeoutsStatement = pgStatement<[statementTimeout: string, lockTimeout: string]>(
  'locks.set_session_timeouts',
  `select set_config('statement_timeout', $1::text, false), set_config('lock_timeout', $2::text, false)`,
);
/** Sets this session's statement_timeout ($1) and lock_timeout ($2), e.g. '60s'. */
export function setSessionTimeouts(db: Executor, statementTimeout: string, lockTimeout: string): Promise<number> {
  return pgRun(db, setSessionTimeoutsStatement, statementTimeout, lockTimeout);
}

const traceOutboxStatement = pgStatement<[on: 'on' | 'off']>('locks.trace_outbox', `select set_config('msgx.trace_outbox', $1::text, false)`);
/**
 * Does this session copy the trace context of a message into the outbox rows it writes
 * (flight.write_batch, lib/sql/flight.ts)? $1 'on' on the pump's session while tracing is on.
 */
export function traceOutbox(db: Executor, on: 'on' | 'off'): Promise<number> {
  return pgRun(db, traceOutboxStatement, on);
}

// ---- lib/runtime/leader.ts, lib/lifecycle/flights.ts (the history purge leader)

const tryLockStatement = pgStatement<[key: number], { ok: boolean }>('locks.try_lock', 'select pg_try_advisory_lock($1::bigint) as ok');
/** Takes the session-level advisory lock $1 if it is free: ok = taken. */
export function tryLock(db: Executor, key: number): Promise<RowOf<typeof tryLockStatement> | undefined> {
  return pgOne(db, tryLockStatement, key);
}

const backendPidStatement = pgStatement<[], { pid: number }>('locks.backend_pid', 'select pg_backend_pid() as pid');
/** This session's backend process ID. */
export function readBackendPid(db: Executor): Promise<RowOf<typeof backendPidStatement> | undefined> {
  return pgOne(db, backendPidStatement);
}

const staleHoldersStatement = pgStatement<[key: number, deadlineMs: number, statementTimeoutMs: number], { pid: number; state: string | null; silent_s: number }>(
  'locks.stale_holders',
  `select a.pid, a.state, extract(epoch from clock_timestamp() - a.state_change)::float8 as silent_s
     from pg_locks l join pg_stat_activity a on a.pid = l.pid
    where l.locktype = 'advisory' and l.granted and l.database = (select oid from pg_database where datname = current_database())
      and l.classid = 0 and l.objid = $1::oid and l.objsubid = 1
      and a.pid <> pg_backend_pid()
      and ((a.state is distinct from 'active' and a.state_change < clock_timestamp() - make_interval(secs => $2::float8 / 1000))
        or (a.state = 'active' and a.state_change < clock_timestamp() - make_interval(secs => ($2::float8 + $3::float8) / 1000)))`,
);
/**
 * The other sessions holding the advisory lock $1 that are stale: not running a statement and
 * silent for longer than $2 ms, or running one statement longer than $2 + $3 (statement_timeout) ms.
 */
export function listStaleHolders(db: Executor, key: number, deadlineMs: number, statementTimeoutMs: number): Promise<RowOf<typeof staleHoldersStatement>[]> {
  return pgRows(db, staleHoldersStatement, key, deadlineMs, statementTimeoutMs);
}

const terminateLostStatement = pgStatement<[pids: number[], apps: string[], agesMs: number[]], { pid: number }>(
  'locks.terminate_lost',
  // materialized: the sessions are chosen first, so that the planner cannot apply
  // pg_terminate_backend to a row of pg_stat_activity before the join has filtered it
  `with lost as materialized (
     select a.pid from pg_stat_activity a
       join unnest($1::int[], $2::text[], $3::float8[]) as l(pid, app, age_ms) on a.pid = l.pid and a.application_name = l.app
      where a.backend_start < now() - make_interval(secs => l.age_ms / 1000))
   select pid from lost where pg_terminate_backend(pid)`,
);
/**
 * Ends the sessions of connections a process lost ($1 pids, $2 their application names, $3 ms
 * since each failed): a backend of that pid and name that started before its failure (a pid
 * the server gave to a newer session since is left alone). Returns the pids ended.
 */
export function terminateLost(db: Executor, pids: number[], apps: string[], agesMs: number[]): Promise<RowOf<typeof terminateLostStatement>[]> {
  return pgRows(db, terminateLostStatement, pids, apps, agesMs);
}

const terminateBackendStatement = pgStatement<[pid: number, timeoutMs: number], { terminated: boolean }>('locks.terminate_backend', 'select pg_terminate_backend($1::int, $2::bigint) as terminated');
/** Ends backend $1, waiting up to $2 ms for it to go. */
export function terminateBackend(db: Executor, pid: number, timeoutMs: number): Promise<RowOf<typeof terminateBackendStatement> | undefined> {
  return pgOne(db, terminateBackendStatement, pid, timeoutMs);
}

const holderStateStatement = pgStatement<[pid: number, key: number], { state: string | null; held: boolean }>(
  'locks.holder_state',
  `select a.state, exists (select 1 from pg_locks l where l.pid = a.pid and l.locktype = 'advisory' and l.granted and l.database = a.datid
                             and l.classid = 0 and l.objid = $2::oid and l.objsubid = 1) as held
     from pg_stat_activity a where a.pid = $1::int`,
);
/** Backend $1's state and whether it holds the advisory lock $2 (no row: the backend is gone). */
export function readHolderState(db: Executor, pid: number, key: number): Promise<RowOf<typeof holderStateStatement> | undefined> {
  return pgOne(db, holderStateStatement, pid, key);
}

// ---- lib/dispatch/outbox.ts

const tryRoundXactLockStatement = pgStatement<[key: number], { ok: boolean }>('locks.try_round_xact_lock', 'select pg_try_advisory_xact_lock($1::bigint) as ok');
/** Takes the transaction-scoped advisory lock $1 if free (a dispatcher's round lock): ok = taken. */
export function tryRoundXactLock(db: Executor, key: number): Promise<RowOf<typeof tryRoundXactLockStatement> | undefined> {
  return pgOne(db, tryRoundXactLockStatement, key);
}

// ---- lib/requests/outbound.ts

const requestCreateXactLockStatement = pgStatement<[lockClass: number, key: number]>('locks.request_create_xact_lock', 'select pg_advisory_xact_lock($1::int, $2::int)');
/** Waits for the transaction-scoped two-key advisory lock ($1 class, $2 key): creating a request of a kind. */
export function requestCreateXactLock(db: Executor, lockClass: number, key: number): Promise<number> {
  return pgRun(db, requestCreateXactLockStatement, lockClass, key);
}

const requestSenderLockStatement = pgStatement<[lockClass: number, key: number]>('locks.request_sender_lock', 'select pg_advisory_lock($1::int, $2::int)');
/** Waits for the session-level two-key advisory lock ($1 class, $2 key): the one request sender. */
export function requestSenderLock(db: Executor, lockClass: number, key: number): Promise<number> {
  return pgRun(db, requestSenderLockStatement, lockClass, key);
}

const requestSenderUnlockStatement = pgStatement<[lockClass: number, key: number]>('locks.request_sender_unlock', 'select pg_advisory_unlock($1::int, $2::int)');
/** Releases the request sender's session-level two-key advisory lock. */
export function requestSenderUnlock(db: Executor, lockClass: number, key: number): Promise<number> {
  return pgRun(db, requestSenderUnlockStatement, lockClass, key);
}
