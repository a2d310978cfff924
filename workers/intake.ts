// intake: inbox → PENDING PROC_STATE rows; wakes the pump. Single active instance.
import { TASK } from '../lib/core/tasks.ts';
import { intakeLoop } from '../lib/pipeline/intake.ts';
import { LOCKS } from '../lib/db/postgres.ts';
import { runProcess } from '../lib/runtime/process.ts';
import { sleep } from '../lib/runtime/leader.ts';
import { dutyTask } from '../lib/runtime/duty.ts';
import { slices } from '../lib/core/config.ts';
import { RestoreWatch } from '../lib/watches/restore.ts';
import { INTAKE } from '../lib/core/tuning.ts';

await runProcess({
  name: 'intake',
  leaderLock: LOCKS.INTAKE_LEADER,
  needs: ['mariadb'],
  kick: [TASK.intake],
  keepAlive: [TASK.intake],
  tasks: async (rt, leader, opened) => {
    const inbox = opened.add(rt.edges.aodbPool(), (p) => p.end());
    // a failed round: one line, then at most one a minute; none while MariaDB or Postgres is known away
    const roundFailed = (e: unknown) => void rt.health.quiet('intake-round', e, 'intake round failed; retrying next round', ['mariadb', 'postgres']);
    const deps = { db: rt.db, inbox, clock: rt.clock, intake: slices(rt.config).intake, log: rt.log, roundFailed, tracing: rt.tracing };
    const stopping = () => leader!.signal.aborted; // shutdown or lost leadership
    // Postgres restored from a backup (lib/watches/restore.ts): nothing is taken in while held (the watermark stays below the lost range)
    const restore = opened.add(new RestoreWatch({ db: rt.db, inbox, inboxReadOnly: slices(rt.config).inbox.readOnly, clock: rt.clock, timeoutMs: slices(rt.config).io.timeoutMs, log: rt.log }), (w) =>
      w.stop(),
    );
    await restore.start();
    return {
      tasks: {
        [TASK.intake]: dutyTask({
          task: TASK.intake,
          stopping,
          clock: rt.clock,
          health: rt.health,
          run: async () => {
            if (restore.held()) {
              await sleep(INTAKE.heldRetryMs, leader!.signal);
              return 'now';
            }
            await intakeLoop(
              deps,
              INTAKE.budgetMs,
              () => stopping() || restore.held(),
              (ms) => sleep(ms, leader!.signal),
            );
            return 'now'; // intake polls: the next run follows at once
          },
        }),
      },
    };
  },
});
