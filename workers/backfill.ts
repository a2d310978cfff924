// backfill: writes the processing time back into CMINMSGS (idempotent; any number of instances).
import { TASK } from '../lib/core/tasks.ts';
import { backfillDrain } from '../lib/pipeline/backfill.ts';
import { runProcess } from '../lib/runtime/process.ts';
import { dutyTask } from '../lib/runtime/duty.ts';
import { slices } from '../lib/core/config.ts';
import { BACKFILL } from '../lib/core/tuning.ts';

await runProcess({
  name: 'backfill',
  needs: ['mariadb'],
  kick: [TASK.backfill],
  keepAlive: [TASK.backfill],
  tasks: async (rt, _leader, opened) => {
    const inbox = opened.add(rt.edges.aodbPool(), (p) => p.end());
    const deps = { db: rt.db, inbox, clock: rt.clock, backfill: slices(rt.config).backfill, log: rt.log, tracing: rt.tracing };
    return {
      tasks: {
        [TASK.backfill]: dutyTask({
          task: TASK.backfill,
          stopping: () => rt.signal.aborted,
          clock: rt.clock,
          health: rt.health,
          run: async () => (await backfillDrain(deps, BACKFILL.budgetMs)) ?? 'idle',
        }),
      },
    };
  },
});
