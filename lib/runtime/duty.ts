// The self-rescheduling duty loop, defined once. A duty (intake, pump,
// backfill, each dispatcher) is one graphile-worker task whose job_key is its own name: a run
// drains for at most its budget, then says what follows, and this wrapper adds the next run:
//   'idle' → nothing (a wake-up `add_job` or the keep-alive check starts the next run)
//   'now'  → the next run at once (the budget ran out with work left)
//   Date   → the next run at that time (the earliest backoff)
// A run never re-schedules itself when `stopping()` says the process is shutting down or lost
// its leadership: the next leader's kick starts the loop again.
import type { JobHelpers, Task } from 'graphile-worker';

export type DutyNext = 'idle' | 'now' | Date;

export interface Duty {
  /** The task name, also the job_key of its runs (lib/core/tasks.ts). */
  task: string;
  /** True once this process must not start another run (shutdown, lost leadership). */
  stopping: () => boolean;
  /** One run. */
  run: (helpers: JobHelpers) => Promise<DutyNext>;
}

export function dutyTask(d: Duty): Task {
  return async (_payload, helpers) => {
    const next = await d.run(helpers);
    if (d.stopping() || next === 'idle') return;
    await helpers.addJob(d.task, {}, { jobKey: d.task, runAt: next === 'now' ? undefined : next });
  };
}
