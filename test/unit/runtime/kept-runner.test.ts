// keptRunner (lib/runtime/job-queue.ts): graphile-worker's runner of a duty, replaced when it ends
// on its own, until `stop`. Here its `run` is the test's, so that a replacement can be held at its
// start while the duty stops: it must never be left running the duty.
import type { Runner, RunnerOptions } from 'graphile-worker';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { keptRunner, RUNNER_RESTART_MS } from '../../../lib/runtime/job-queue.ts';
import type { Health } from '../../../lib/runtime/health.ts';
import type { Logger } from '../../../lib/runtime/log.ts';

interface FakeRunner {
  runner: Runner;
  end: () => void;
  stops: number;
  jobs: string[];
}

function fakeRunner(): FakeRunner {
  let end = () => {};
  const promise = new Promise<void>((r) => (end = r));
  let stopped = false;
  const f: FakeRunner = { runner: undefined as never, end: () => end(), stops: 0, jobs: [] };
  f.runner = {
    promise,
    stop: async () => {
      f.stops++;
      if (stopped) throw new Error('Runner is already stopped'); // as graphile-worker's
      stopped = true;
      end();
    },
    addJob: async (task: string) => f.jobs.push(task),
  } as unknown as Runner;
  return f;
}

function setup() {
  const warnings: string[] = [];
  const log = { warn: (_: unknown, m: string) => warnings.push(m), debug: () => {}, info: () => {}, error: () => {} } as unknown as Logger;
  const health = { quiet: () => {} } as unknown as Health;
  const starts: { resolve: (r: Runner) => void }[] = [];
  const run = (_: RunnerOptions) => new Promise<Runner>((resolve) => starts.push({ resolve }));
  const kept = keptRunner({ pool: {} as pg.Pool, tasks: {}, crontab: '', kick: ['duty'], log, health, ended: () => false, run });
  return { kept, starts, warnings };
}

const until = async (cond: () => boolean) => {
  for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(cond()).toBe(true);
};

/** A kept runner whose first runner (`first`) is running. */
async function running() {
  const r = setup();
  const first = fakeRunner();
  const started = r.kept.start();
  await until(() => r.starts.length === 1);
  r.starts[0]!.resolve(first.runner);
  await started;
  return { ...r, first };
}

describe('keptRunner', () => {
  it('a replacement that comes up after the stop is stopped at once and given no job', async () => {
    const { kept, starts, warnings, first } = await running();
    expect(first.jobs).toEqual(['duty']);

    first.end(); // ended on its own (a connection error): replaced after RUNNER_RESTART_MS
    await until(() => starts.length === 2);
    await kept.stop(1000); // while the replacement is still starting
    expect(first.stops).toBe(0); // it had ended: nothing to stop, no warning about it
    const second = fakeRunner();
    starts[1]!.resolve(second.runner);
    await until(() => second.stops === 1);
    expect(second.jobs).toEqual([]);
    expect(warnings).toEqual([]);
  }, 10_000);

  it('stopped between an ended runner and its replacement: none is started', async () => {
    const { kept, starts, warnings, first } = await running();
    first.end();
    await new Promise((r) => setTimeout(r, 50));
    await kept.stop(1000);
    await new Promise((r) => setTimeout(r, RUNNER_RESTART_MS + 200));
    expect(starts.length).toBe(1);
    expect(first.stops).toBe(0);
    expect(warnings).toEqual([]);
  }, 10_000);
});
