// state-dispatch: outbox (target 'state', one row per FLID) → the compacted state topic, key =
// FLID, value = the flight's complete state as GET /flights/:flid answers it, a tombstone when it
// is deleted or purged (lib/dispatch/state.ts). Its own process, as each dispatcher (one duty
// per process: docs/decisions.md "Dispatch"). Any number of instances: a round runs under an
// advisory lock.
import { slices } from '../lib/core/config.ts';
import { stateDrain } from '../lib/dispatch/state.ts';
import { connectKafka, dispatcherTask } from '../lib/dispatch/worker.ts';
import { DISPATCH_TASK } from '../lib/core/tasks.ts';
import { runProcess } from '../lib/runtime/process.ts';

const TASK = DISPATCH_TASK.state;

await runProcess({
  name: 'state-dispatch',
  needs: ['kafka'],
  kick: [TASK],
  keepAlive: [TASK],
  tasks: async (rt) => {
    // Keyed by FLID like the msg topic (msgx.kafka.partitions), compacted: the last record per
    // FLID is its current state (docs/consumers.md "Topic settings").
    const kafka = await connectKafka(rt, { topic: slices(rt.config).kafka.stateTopic, compacted: true });
    return { tasks: { [TASK]: dispatcherTask(rt, 'state', TASK, stateDrain, kafka) }, close: () => kafka.close() };
  },
});
