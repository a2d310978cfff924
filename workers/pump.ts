// pump: applies the head-of-queue message (lib/pipeline/pump.ts). Single active instance:
// the leader lock and PIPELINE_LOCK live on one dedicated connection.
import { buildMirror, buildRegistry } from '../lib/app/composition.ts';
import { createInbox } from '../lib/db/mysql.ts';
import { createSessionDb, LOCKS } from '../lib/db/postgres.ts';
import { createRedis } from '../lib/db/redis.ts';
import { drain, refreshBacklogGauge } from '../lib/pipeline/pump.ts';
import { runProcess } from '../lib/runtime/process.ts';

const BUDGET_MS = 30_000;

await runProcess({
  name: 'pump',
  leaderLock: LOCKS.PUMP_LEADER,
  kick: ['pump'],
  keepAlive: ['pump'],
  tasks: async (rt, leader) => {
    const inbox = createInbox(rt.config.INBOX_URL, { timeoutMs: rt.config['msgx.io.timeout'] });
    const redis = createRedis(rt.config.REDIS_URL, rt.config['msgx.io.timeout']);
    const session = createSessionDb(leader!.client);
    const deps = { session, inbox, registry: buildRegistry(), mirror: buildMirror({ db: rt.db, redis, config: rt.config }), clock: rt.clock, config: rt.config, log: rt.log };
    return {
      tasks: {
        pump: async (_payload, helpers) => {
          const stopping = () => leader!.signal.aborted; // shutdown or lost leadership
          const r = await drain(deps, BUDGET_MS, stopping);
          await refreshBacklogGauge(rt.db).catch(() => {});
          if (stopping() || r.next === 'idle') return;
          await helpers.addJob('pump', {}, { jobKey: 'pump', runAt: r.next === 'now' ? undefined : r.next });
        },
      },
      close: async () => {
        await inbox.end();
        redis.disconnect();
      },
    };
  },
});
