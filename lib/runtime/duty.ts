// The self-rescheduling duty loop, defined once. A duty (intake, pump,
// backfill, each dispatcher) is one graphile-worker task whose job_key is its own name: a run
// drains for at most its budget, then says what follows, and this wrapper adds the next run:
//   'idle' → nothing (a wake-up `add_job` or the keep-alive check starts the next run)
//   'now'  → the next run at once (the budget ran out with work left)
//   Date   → the next run at that time (the earliest backoff)
// A run that throws is run again after RETRY_MS (doubling to its cap while runs keep failing),
// by this wrapper: left to graphile-worker, a failed job waits e^attempts seconds — 55 s after four
// failures in a row, hours after ten — and the keep-alive check leaves a waiting job alone. The
// failure is logged through Health.quiet (one line a minute, none while Postgres is known away).
// A run never re-schedules itself when `stopping()` says the process is shutting down or lost
// its leadership: the next leader's kick starts the loop again.
import type { JobHelpers, Task } from 'graphile-worker';
import type { Clock } from '../core/clock.ts';
import type { Health } from './health.ts';
import { RUNTIME } from '../core/tuning.ts';
import { backoffMs } from './watch.ts';

export type DutyNext = 'idle' | 'now' | Date;

export interface Duty {
  /** The task name, also the job_key of its runs (lib/core/tasks.ts). */
  task: string;
  /** True once this process must not start another run (shutdown, lost leadership). */
  stopping: () => boolean;
  /** One run. */
  run: (helpers: JobHelpers) => Promise<DutyNext>;
  clock: Clock;
  health: Pick<Health, 'quiet'>;
}

/** The wait before a failed run is run again (RUNTIME.dutyRetryBackoff): the first, then doubled per failure in a row up to the cap. */
export const RETRY_MS = { first: RUNTIME.dutyRetryBackoff.firstMs, max: RUNTIME.dutyRetryBackoff.capMs } as const;

/** The wait before the next run after this many failures in a row before the one that just failed. */
export const retryWait = (failuresBefore: number): number => backoffMs(RUNTIME.dutyRetryBackoff, failuresBefore + 1);

export function dutyTask(d: Duty): Task {
  let failures = 0; // runs in a row that threw
  return async (_payload, helpers) => {
    let next: DutyNext;
    try {
      next = await d.run(helpers);
      failures = 0;
    } catch (err) {
      d.health.quiet(`duty:${d.task}`, err, `duty ${d.task}: run failed; it runs again after ${RETRY_MS.first} ms, doubling to ${RETRY_MS.max} ms`, 'postgres');
      next = new Date(d.clock.now().getTime() + retryWait(failures++));
    }
    if (d.stopping() || next === 'idle') return;
    await helpers.addJob(d.task, {}, { jobKey: d.task, runAt: next === 'now' ? undefined : next });
  };
}
