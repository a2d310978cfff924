// schd-dispatch: outbox (target 'schd', one row per FLID) → complete states → schd topic as
// {"SCHD":{"RECS":n,"FLTR":[…]}} records under msgx.schd.max-record-bytes (lib/dispatch/schd.ts).
import { slices } from '../lib/core/config.ts';
import { schdDrain } from '../lib/dispatch/schd.ts';
import { connectKafka, dispatcherTask } from '../lib/dispatch/worker.ts';
import { DISPATCH_TASK } from '../lib/core/tasks.ts';
import { runProcess } from '../lib/runtime/process.ts';

const TASK = DISPATCH_TASK.schd;

await runProcess({
  name: 'schd-dispatch',
  needs: ['kafka'],
  kick: [TASK],
  keepAlive: [TASK],
  tasks: async (rt, _leader, opened) => {
    // One partition: every schd record carries a batch of complete states under the fixed key
    // 'schd'; one partition keeps the whole topic in write order (docs/consumers.md).
    const kafka = opened.add(await connectKafka(rt, { topic: slices(rt.config).kafka.schdTopic, partitions: 1 }), (k) => k.close());
    return { tasks: { [TASK]: dispatcherTask(rt, 'schd', TASK, schdDrain, kafka) } };
  },
});
