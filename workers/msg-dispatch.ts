// msg-dispatch: outbox (target 'msg') → msg topic, key = FLID, EVENT_ID order per FLID, at least
// once, dead letters (lib/dispatch/msg.ts). Also runs the hourly retention of SENT outbox rows.
// Any number of instances: a round runs under an advisory lock, so only one sends at a time.
// The topic watch (lib/watches/msg-topic.ts) finds records the topic lost, creates a missing
// topic again and reports the loss until the operator resends or acknowledges it
// (scripts/dispatch-resend.ts); /healthz is not ready before its first check.
import { slices } from '../lib/core/config.ts';
import { msgDrain } from '../lib/dispatch/msg.ts';
import { DISPATCH_RETENTION_TASK } from '../lib/core/tasks.ts';
import { purgeSentEvents, RETENTION_CRONTAB } from '../lib/dispatch/retention.ts';
import { MsgTopicWatch } from '../lib/watches/msg-topic.ts';
import { connectKafka, dispatcherTask } from '../lib/dispatch/worker.ts';
import { DISPATCH_TASK } from '../lib/core/tasks.ts';
import { runProcess } from '../lib/runtime/process.ts';

const TASK = DISPATCH_TASK.msg;

await runProcess({
  name: 'msg-dispatch',
  needs: ['kafka'],
  kick: [TASK],
  keepAlive: [TASK],
  crontab: () => RETENTION_CRONTAB,
  tasks: async (rt, _leader, opened) => {
    const spec = { topic: slices(rt.config).kafka.msgTopic };
    const kafka = opened.add(await connectKafka(rt, spec, { refusalFatal: false }), (k) => k.close());
    const watch = opened.add(new MsgTopicWatch({ kafka, db: rt.db, log: rt.log, clock: rt.clock, spec, timeoutMs: slices(rt.config).io.timeoutMs }), (w) => w.stop());
    await watch.start();
    return {
      tasks: {
        [TASK]: dispatcherTask(rt, 'msg', TASK, msgDrain, kafka, () => watch.checkSoon()),
        [DISPATCH_RETENTION_TASK]: async () => {
          const n = await purgeSentEvents(rt.db, rt.clock, { retentionMs: slices(rt.config).kafka.eventRetentionMs });
          if (n) rt.log.info({ deleted: n }, 'outbox retention: SENT rows deleted');
        },
      },
    };
  },
});
