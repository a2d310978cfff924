// state-dispatch: outbox (target 'state', one row per FLID) → the compacted state topic, key =
// FLID, value = the flight's complete state as GET /flights/:flid answers it, a tombstone when it
// is deleted or purged (lib/dispatch/state.ts). Its own process, as each dispatcher (one duty
// per process: docs/decisions.md "Dispatch"). Any number of instances: a round runs under an
// advisory lock. The topic watch (lib/watches/state-topic.ts) finds the topic missing, not
// compacted or below the recorded offsets, and re-seeds it from Postgres; /healthz is not ready
// before its first check.
import { slices } from '../lib/core/config.ts';
import { stateDrain } from '../lib/dispatch/state.ts';
import { StateTopicWatch } from '../lib/watches/state-topic.ts';
import { connectKafka, dispatcherTask } from '../lib/dispatch/worker.ts';
import { DISPATCH_TASK } from '../lib/core/tasks.ts';
import { runProcess } from '../lib/runtime/process.ts';

const TASK = DISPATCH_TASK.state;

await runProcess({
  name: 'state-dispatch',
  needs: ['kafka'],
  kick: [TASK],
  keepAlive: [TASK],
  tasks: async (rt, _leader, opened) => {
    // Keyed by FLID like the msg topic (msgx.kafka.partitions), compacted: the last record per
    // FLID is its current state (docs/consumers.md "Topic settings").
    const spec = { topic: slices(rt.config).kafka.stateTopic, compacted: true };
    const kafka = opened.add(await connectKafka(rt, spec, { refusalFatal: false }), (k) => k.close());
    const watch = opened.add(
      new StateTopicWatch({ kafka, db: rt.db, log: rt.log, clock: rt.clock, spec, timeoutMs: slices(rt.config).io.timeoutMs, reseedGapMs: slices(rt.config).dispatch.reseedGapMs }),
      (w) => w.stop(),
    );
    await watch.start();
    return {
      tasks: { [TASK]: dispatcherTask(rt, 'state', TASK, stateDrain, kafka, () => watch.checkSoon()) },
    };
  },
});
