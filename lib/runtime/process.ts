// Process bootstrap shared by every worker: config (parsed once), logs, /metrics + /healthz,
// graphile-worker runner with only this process's tasks and crontab, clean shutdown.
import type { FastifyInstance } from 'fastify';
import { Logger as GraphileLogger, run, type Runner, type TaskList } from 'graphile-worker';
import type pg from 'pg';
import { ConfigError, loadConfig, redactUrl, slices, type Config } from '../core/config.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import { createDb, createPool, type Db } from '../db/postgres.ts';
import { pgRows, pgRun } from '../db/statement.ts';
import * as Jobs from '../sql/jobs.ts';
import * as Probe from '../sql/probe.ts';
import { createHttpServer } from './http.ts';
import { createLogger, type Logger } from './log.ts';
import { exportProcessMetrics, metrics, registry } from './metrics.ts';
import { runAsLeader, withDeadline, type LeaderHandle } from './leader.ts';
import { PostgresWatch } from './probe.ts';
import { conditions } from './conditions.ts';

/** After SIGTERM/SIGINT a process exits by force if its clean shutdown takes longer (compose's stop grace must exceed it). */
export const FORCED_EXIT_MS = 15_000;

export type ProcessName = 'intake' | 'pump' | 'backfill' | 'msg-dispatch' | 'schd-dispatch' | 'retention' | 'api';

export interface Runtime {
  name: ProcessName;
  config: Config;
  log: Logger;
  clock: Clock;
  pool: pg.Pool;
  db: Db;
  signal: AbortSignal;
}

export interface ProcessSpec {
  name: ProcessName;
  /** Single-writer duty: the runner only starts while this advisory lock is held. */
  leaderLock?: number;
  /** Build the task list (with the leader's dedicated connection when leaderLock is set). */
  tasks: (rt: Runtime, leader?: LeaderHandle) => Promise<{ tasks: TaskList; close?: () => Promise<void> }>;
  crontab?: (config: Config) => string;
  /** Jobs added when the runner starts (first wake-up). */
  kick?: string[];
  /**
   * Long-running duties (job key = task name) kept alive: every minute, a duty with no job that
   * is running or waiting gets one. Unlike a crontab line with that job key, this never touches a
   * running job (graphile-worker would retire it to attempts = max_attempts and queue a due
   * duplicate behind it), so the queue shows one healthy job per duty (docs/operations.md).
   */
  keepAlive?: string[];
  /** Extra HTTP routes (the api process). */
  http?: (app: FastifyInstance, rt: Runtime) => Promise<void>;
  /** Health beyond "Postgres answers". */
  health?: (rt: Runtime) => Promise<Record<string, unknown>>;
}

export function loadConfigOrExit(name: string): Config {
  try {
    return loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${name}: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
}

export async function runProcess(spec: ProcessSpec): Promise<void> {
  const config = loadConfigOrExit(spec.name);
  const log = createLogger(spec.name, config['msgx.log.level']);
  log.info({ node: process.version, pid: process.pid, database: redactUrl(config.DATABASE_URL) }, `${spec.name} starting`);
  const abort = new AbortController();
  // graphile-worker can reject an internal promise nobody awaits while Postgres restarts (e.g.
  // failing a job as the pool dies). That must not take the process down: the leader loop and
  // graphile-worker's own retries recover once Postgres is back. Logged loudly, counted.
  process.on('unhandledRejection', (reason) => {
    log.error({ err: reason }, 'unhandled promise rejection (continuing; the duty recovers on its own)');
  });
  const pool = createPool(config.DATABASE_URL, { max: 8, name: spec.name });
  const rt: Runtime = { name: spec.name, config, log, clock: systemClock, pool, db: createDb(pool), signal: abort.signal };

  exportProcessMetrics(spec.name, [], { readOnly: config['msgx.inbox.read-only'] });
  // Postgres as this process sees it, on its own connection (issue 14): /healthz and
  // msgx_postgres_up say so at once when it cannot be reached, instead of hanging on the pool
  // or showing the last values of gauges computed from it.
  const watch = new PostgresWatch({
    url: config.DATABASE_URL,
    onChange: (up, forMs, err) => (up ? log.warn({ downForMs: forMs }, 'postgres reachable again') : log.error({ err }, 'postgres unreachable')),
  });
  const watchGauges = () => {
    metrics.postgresUp.set(watch.up ? 1 : 0);
    metrics.postgresDownSeconds.set(watch.downSeconds());
  };
  watch.start();

  const app = createHttpServer(slices(config).http, log);
  app.get('/metrics', async (_req, reply) => {
    watchGauges();
    return reply.type(registry.contentType).send(await registry.metrics());
  });
  app.get('/healthz', async (_req, reply) => {
    if (!watch.up) {
      return reply.code(503).send({ ok: false, process: spec.name, postgres: 'unreachable', since: watch.since.toISOString(), error: watch.lastError });
    }
    // a condition a module of this process set (lib/runtime/conditions.ts): not ready, and why
    const held = conditions();
    if (held.length) return reply.code(503).send({ ok: false, process: spec.name, conditions: held });
    try {
      await withDeadline(pgRun(rt.db, Probe.select1), 2000, 'postgres select 1');
      return { ok: true, process: spec.name, postgres: 'up', ...(spec.health ? await withDeadline(spec.health(rt), 2000, 'health') : {}) };
    } catch (e) {
      return reply.code(503).send({ ok: false, process: spec.name, error: (e as Error).message });
    }
  });
  if (spec.http) await spec.http(app, rt);
  const port = config[`msgx.http.port.${spec.name}`];
  await app.listen({ port, host: config['msgx.http.host'] });
  log.info({ port, host: config['msgx.http.host'] }, 'http listening (/metrics, /healthz)');

  const startRunner = async (leader?: LeaderHandle) => {
    const built = await spec.tasks(rt, leader);
    if (spec.leaderLock) await unlockStaleJobs(rt, Object.keys(built.tasks));
    const runner: Runner = await run({
      pgPool: pool,
      taskList: built.tasks,
      crontab: spec.crontab?.(config) ?? '# this process has no crontab lines',
      concurrency: 1,
      noHandleSignals: true,
      pollInterval: 1000,
      logger: graphileLogger(log),
    });
    runner.promise.catch((e) => log.error({ err: e }, 'graphile-worker runner ended with an error'));
    for (const task of spec.kick ?? []) await runner.addJob(task, {}, { jobKey: task });
    const keepAlive = spec.keepAlive?.length ? setInterval(() => void keepDutiesAlive(rt, spec.keepAlive!), KEEP_ALIVE_EVERY_MS) : undefined;
    return async () => {
      clearInterval(keepAlive);
      await runner.stop().catch((e) => log.error({ err: e }, 'runner stop failed'));
      await built.close?.();
    };
  };

  let stopRunner: (() => Promise<void>) | undefined;
  const duty = spec.leaderLock
    ? runAsLeader({ url: config.DATABASE_URL, name: spec.name, lockKey: spec.leaderLock, log, signal: abort.signal, start: startRunner })
    : (async () => {
        stopRunner = await startRunner();
        await new Promise((r) => (abort.signal.aborted ? r(undefined) : abort.signal.addEventListener('abort', r, { once: true })));
        await stopRunner();
      })();

  let stopping = false;
  const shutdown = async (sig: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, `${spec.name} shutting down`);
    abort.abort();
    const force = setTimeout(() => process.exit(1), FORCED_EXIT_MS).unref();
    await duty.catch((e) => log.error({ err: e }, 'duty ended with error'));
    await app.close();
    watch.stop();
    await pool.end().catch(() => {});
    clearTimeout(force);
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  duty.catch((e) => {
    log.fatal({ err: e }, 'duty crashed');
    process.exit(1);
  });
}

const KEEP_ALIVE_EVERY_MS = 60_000;
const STALE_LOCK_MS = 5 * 60_000;

/**
 * Add the job of each duty that has none running or waiting (attempts left). Running = locked
 * less than STALE_LOCK_MS ago: a duty job drains for at most its budget (≤ 55 s) and then ends,
 * so an older lock belongs to a worker that died holding it (another instance takes over at
 * once instead of after graphile-worker's 4 h lock timeout). A job that used up its attempts,
 * or holds a stale lock, is replaced by add_job (its key moves to the new job).
 */
export async function keepDutiesAlive(rt: Pick<Runtime, 'db' | 'log'>, tasks: string[]): Promise<void> {
  try {
    const added = await pgRows(rt.db, Jobs.keepDutiesAlive, tasks, STALE_LOCK_MS);
    // the pump and backfill end their job when idle (a wake-up adds the next): no job is normal there
    if (added.length) rt.log.info({ tasks: added.map((x) => x.task) }, 'keep-alive: duty had no job (idle, or its loop died, or the job was removed); added one');
  } catch (e) {
    rt.log.error({ err: e }, 'keep-alive check of the duties failed; retried in a minute');
  }
}

/** Jobs of a single-writer duty locked by a dead worker would wait hours for graphile-worker's timeout. */
async function unlockStaleJobs(rt: Runtime, tasks: string[]): Promise<void> {
  const ids = (await pgRows(rt.db, Jobs.lockingWorkers, tasks)).map((x) => x.locked_by);
  if (ids.length) {
    await pgRun(rt.db, Jobs.forceUnlockWorkers, ids);
    rt.log.warn({ workers: ids }, 'unlocked jobs of workers that are gone');
  }
}

function graphileLogger(log: Logger) {
  // graphile-worker's own messages go to the same JSON log; its debug chatter is dropped.
  return new GraphileLogger(() => (level, message, meta) => {
    // Per-job chatter ("Completed task …") is debug; warnings and errors stay visible.
    const l = level === 'warning' ? 'warn' : level === 'error' ? 'error' : 'debug';
    log[l]({ worker: meta ?? undefined }, `graphile-worker: ${message}`);
  });
}
