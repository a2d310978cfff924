// The process's side of graphile-worker: the runner of a duty's tasks (replaced when it ends on
// its own), its log lines in the process's JSON log, the duty jobs kept alive, and the jobs of a
// dead single writer unlocked.
import { Logger as GraphileLogger, run, type Runner, type RunnerOptions, type TaskList } from 'graphile-worker';
import type pg from 'pg';
import type { Db } from '../db/postgres.ts';
import * as Jobs from '../sql/jobs.ts';
import type { Health } from './health.ts';
import type { Logger } from './log.ts';
import { withDeadline } from './leader.ts';
import { RUNTIME } from '../core/tuning.ts';

type Runtime = { db: Db; log: Logger };

export const KEEP_ALIVE_EVERY_MS = RUNTIME.keepAliveEveryMs;
const STALE_LOCK_MS = RUNTIME.staleLockMs;

/**
 * Add the job of each duty that has none running or waiting (attempts left). Running = locked
 * less than STALE_LOCK_MS ago: a duty job drains for at most its budget (≤ 55 s) and then ends,
 * so an older lock belongs to a worker that died holding it (another instance takes over at
 * once instead of after graphile-worker's 4 h lock timeout). A job that used up its attempts,
 * or holds a stale lock, is replaced by add_job (its key moves to the new job).
 */
export async function keepDutiesAlive(rt: Pick<Runtime, 'db' | 'log'>, tasks: string[]): Promise<void> {
  try {
    const added = await Jobs.keepDutiesAlive(rt.db, tasks, STALE_LOCK_MS);
    // the pump and backfill end their job when idle (a wake-up adds the next): no job is normal there
    if (added.length) rt.log.info({ tasks: added.map((x) => x.task) }, 'keep-alive: duty had no job (idle, or its loop died, or the job was removed); added one');
  } catch (e) {
    rt.log.error({ err: e }, 'keep-alive check of the duties failed; retried in a minute');
  }
}

/** Jobs of a single-writer duty locked by a dead worker would wait hours for graphile-worker's timeout. */
export async function unlockStaleJobs(rt: Pick<Runtime, 'db' | 'log'>, tasks: string[]): Promise<void> {
  const ids = (await Jobs.listLockingWorkers(rt.db, tasks)).map((x) => x.locked_by);
  if (ids.length) {
    await Jobs.forceUnlockWorkers(rt.db, ids);
    rt.log.warn({ workers: ids }, 'unlocked jobs of workers that are gone');
  }
}

export function graphileLogger(log: Logger, health: Health) {
  // graphile-worker's own messages go to the same JSON log; its debug chatter is dropped.
  return new GraphileLogger(() => (level, message, meta) => {
    // Per-job chatter ("Completed task …") is debug; warnings stay visible; errors (in an outage:
    // one per poll and per job) at most once a minute per kind, none while Postgres is known down.
    if (level === 'error') {
      health.quiet(`graphile:${message.replace(/[0-9]+/g, '#').slice(0, 60)}`, (meta as { error?: unknown } | undefined)?.error ?? message, `graphile-worker: ${message}`, 'postgres');
      return;
    }
    const l = level === 'warning' ? 'warn' : 'debug';
    log[l]({ worker: meta ?? undefined }, `graphile-worker: ${message}`);
  });
}

export const RUNNER_RESTART_MS = RUNTIME.runnerRestartMs;

/**
 * graphile-worker's runner of a duty's tasks (one job at a time), its `kick` jobs added at start.
 * graphile-worker shuts a runner down when its worker dies of a connection error (a connection
 * closed under it, e.g. by the pool watch): it is replaced, never leaving the process without
 * one, until `stop`. `stop` is bounded: a runner waiting on a frozen connection is abandoned.
 */
export function keptRunner(o: {
  pool: pg.Pool;
  tasks: TaskList;
  crontab: string;
  kick: readonly string[];
  log: Logger;
  health: Health;
  ended: () => boolean;
  /** graphile-worker's `run` (a test passes its own). */
  run?: (options: RunnerOptions) => Promise<Runner>;
}) {
  const start = o.run ?? run;
  let runner: Runner | undefined;
  let stopped = false;
  let stopMs = 0;
  let timer: NodeJS.Timeout | undefined;
  const launch = async () => {
    const r = await start({ pgPool: o.pool, taskList: o.tasks, crontab: o.crontab, concurrency: 1, noHandleSignals: true, pollInterval: 1000, logger: graphileLogger(o.log, o.health) });
    // a replacement that came up after `stop` (its launch began before) must not run the duty
    if (stopped) {
      await withDeadline(r.stop(), stopMs, 'graphile-worker runner stop').catch((e) => o.log.warn({ err: (e as Error).message }, 'a runner started after the stop did not stop in time; abandoned'));
      return;
    }
    runner = r;
    r.promise.then(
      () => relaunch(null),
      (e) => relaunch(e),
    );
    for (const task of o.kick) await r.addJob(task, {}, { jobKey: task });
  };
  const relaunch = (err: unknown) => {
    runner = undefined; // ended: nothing to stop until a replacement runs
    if (stopped || o.ended()) return;
    o.health.quiet('runner-ended', err ?? new Error('ended'), 'graphile-worker runner ended; starting a new one', 'postgres');
    timer = setTimeout(
      () =>
        void launch().catch((e) => {
          o.health.quiet('runner-start', e, 'graphile-worker runner did not start; retrying', 'postgres');
          relaunch(null);
        }),
      RUNNER_RESTART_MS,
    );
  };
  return {
    start: launch,
    async stop(ms: number): Promise<void> {
      stopped = true;
      stopMs = ms;
      clearTimeout(timer);
      if (runner)
        await withDeadline(runner.stop(), ms, 'graphile-worker runner stop').catch((e) =>
          o.log.warn({ err: (e as Error).message }, 'runner did not stop in time; abandoned, standing by on new connections'),
        );
    },
  };
}
