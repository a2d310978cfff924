// graphile-worker's queue as an operator sees it (`select … from graphile_worker.jobs`): a
// long-running duty (the intake loop, a real process) is one running job with attempts left,
// never a job retired to attempts = max_attempts with a due, unlocked duplicate waiting behind
// it after a minute boundary (what a crontab line re-adding the running job produced).
import { sql } from 'kysely';
import { Logger, run } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServices, resetPipeline, type TestServices } from '../support/services.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { keepDutiesAlive } from '../../lib/runtime/job-queue.ts';
import { dutyTask, RETRY_MS, retryWait } from '../../lib/runtime/duty.ts';
import { systemClock } from '../../lib/core/clock.ts';
import { TEST_PG_URL } from '../support/env.ts';
import { silentLog } from '../support/services.ts';

let s: TestServices;
const procs: Proc[] = [];
beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
});
afterAll(async () => {
  await stopAll(procs);
  await s.close();
});

interface JobRow {
  id: string;
  key: string | null;
  attempts: number;
  max_attempts: number;
  locked_by: string | null;
  run_at: Date;
}
const jobs = async (task: string) =>
  (await sql<JobRow>`select id, key, attempts, max_attempts, locked_by, run_at from graphile_worker.jobs where task_identifier = ${task} order by id`.execute(s.db)).rows;

describe('graphile_worker.jobs while the intake loop runs', () => {
  it('one running intake job with attempts left, also after a minute boundary; nothing due waits behind it', async () => {
    const p = startWorker('intake');
    procs.push(p);
    await waitFor('the intake loop runs', async () => (await jobs('intake')).some((j) => j.locked_by !== null), 30_000, 200);
    // past the next minute boundary (graphile-worker's crontab fires on it), plus a margin
    const now = Date.now();
    await new Promise((r) => setTimeout(r, 60_000 - (now % 60_000) + 4000));
    const rows = await jobs('intake');
    expect(rows.map((j) => ({ key: j.key, locked: j.locked_by !== null, attemptsLeft: j.attempts < j.max_attempts }))).toEqual([{ key: 'intake', locked: true, attemptsLeft: true }]);
  }, 90_000);

  it('keep-alive: a duty without a job gets one; a running or waiting one is left alone; a used-up one is replaced', async () => {
    const task = 'keepalive-probe';
    const rt = { db: s.db, log: silentLog };
    await sql`delete from graphile_worker._private_jobs where key = ${task}`.execute(s.db);
    await keepDutiesAlive(rt, [task]);
    const [first] = await jobs(task);
    expect(first).toMatchObject({ key: task, attempts: 0, locked_by: null });
    await keepDutiesAlive(rt, [task]); // waiting: untouched
    expect(await jobs(task)).toEqual([first]);
    await sql`update graphile_worker._private_jobs set locked_at = now(), locked_by = 'w1', attempts = 25 where key = ${task}`.execute(s.db);
    await keepDutiesAlive(rt, [task]); // running (even at its last attempt): untouched
    expect((await jobs(task)).map((j) => j.id)).toEqual([first.id]);
    await sql`update graphile_worker._private_jobs set locked_at = null, locked_by = null where key = ${task}`.execute(s.db);
    await keepDutiesAlive(rt, [task]); // used up and idle: a fresh job takes the key
    const after = await jobs(task);
    expect(after.find((j) => j.key === task)).toMatchObject({ attempts: 0 });
    // locked for 10 minutes: its worker died holding it (a duty job runs ≤ 55 s); replaced at once
    await sql`update graphile_worker._private_jobs set locked_at = now() - interval '10 minutes', locked_by = 'gone', attempts = 1 where key = ${task}`.execute(s.db);
    const stale = (await jobs(task)).find((j) => j.key === task)!;
    await keepDutiesAlive(rt, [task]);
    const fresh = (await jobs(task)).find((j) => j.key === task)!;
    expect(fresh.id).not.toBe(stale.id);
    expect(fresh).toMatchObject({ locked_by: null, attempts: 0 });
    await sql`delete from graphile_worker._private_jobs where task_id in (select id from graphile_worker._private_tasks where identifier = ${task})`.execute(s.db);
  });

  it('a duty run that throws runs again within seconds (its own doubling wait), never after graphile-worker backoff of e^attempts s', async () => {
    const task = 'throwing-duty-probe';
    const failing = 3; // left to graphile-worker: 2.7 + 7.4 + 20 s before the fourth run
    const runs: number[] = [];
    const quiet: { key: string; err: string; dependency: unknown }[] = [];
    const health = { quiet: (key: string, err: unknown, _message: string, dependency?: unknown) => (quiet.push({ key, err: (err as Error).message, dependency }), true) };
    const duty = dutyTask({
      task,
      stopping: () => false,
      clock: systemClock,
      health,
      run: async () => {
        runs.push(Date.now());
        if (runs.length <= failing) throw new Error(`run ${runs.length} failed`);
        return 'idle';
      },
    });
    const runner = await run({ connectionString: TEST_PG_URL, taskList: { [task]: duty }, logger: new Logger(() => () => {}), noHandleSignals: true, concurrency: 1, pollInterval: 100 });
    try {
      await runner.addJob(task, {}, { jobKey: task });
      await waitFor('the run after the failures', async () => runs.length > failing, 15_000, 50);
      // each failure went to the process's quiet log (one line a minute, none while Postgres is known away)
      expect(quiet).toEqual([1, 2, 3].map((n) => ({ key: `duty:${task}`, err: `run ${n} failed`, dependency: 'postgres' })));
      // each retry came after the duty's own doubling wait (plus a poll), not graphile-worker's
      expect([retryWait(0), retryWait(1), retryWait(2), retryWait(10)]).toEqual([RETRY_MS.first, RETRY_MS.first * 2, RETRY_MS.first * 4, RETRY_MS.max]);
      for (let i = 1; i < runs.length; i++) {
        expect(runs[i] - runs[i - 1]).toBeGreaterThanOrEqual(retryWait(i - 1) - 50);
        expect(runs[i] - runs[i - 1]).toBeLessThan(retryWait(i - 1) + 1500);
      }
      // the last run said idle: no job left behind, none waiting with a failed attempt
      await waitFor('the job is gone', async () => (await jobs(task)).length === 0, 5000, 50);
    } finally {
      await runner.stop();
      await sql`delete from graphile_worker._private_jobs where task_id in (select id from graphile_worker._private_tasks where identifier = ${task})`.execute(s.db);
    }
  }, 30_000);
});
