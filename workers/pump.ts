// pump: applies the head of queue and the messages after it, in batches (lib/pipeline/pump/).
// Single active instance: the leader lock and PIPELINE_LOCK live on one dedicated connection.
// The head gauges are refreshed by a timer on the pool, apart from the pump's loop.
import { TASK } from '../lib/core/tasks.ts';
import { buildDecoder, buildMirror, buildRegistry } from '../lib/app/composition.ts';
import { createSessionDb, LOCKS } from '../lib/db/postgres.ts';
import { refreshHeadGauges } from '../lib/pipeline/gauges.ts';
import { drain, pumpSettings, withSqlPorts } from '../lib/pipeline/pump/loop.ts';
import { crashAt } from '../lib/runtime/crash.ts';
import { runProcess } from '../lib/runtime/process.ts';
import * as Locks from '../lib/sql/locks.ts';
import { dutyTask } from '../lib/runtime/duty.ts';
import { slices } from '../lib/core/config.ts';
import { kafkaOptions } from '../lib/dispatch/kafka.ts';
import { createKafkaRestoreCheck } from '../lib/watches/restore-kafka.ts';
import { RestoreWatch } from '../lib/watches/restore.ts';
import { RedisHeal } from '../lib/watches/redis.ts';
import { PUMP } from '../lib/core/tuning.ts';
import { PumpTrace } from '../lib/pipeline/pump/trace.ts';

await runProcess({
  name: 'pump',
  poolMax: 6, // a batch's terminal step overlapping the next batch, the head gauges, the Redis heal
  leaderLock: LOCKS.PUMP_LEADER,
  needs: ['mariadb', 'redis'],
  kick: [TASK.pump],
  keepAlive: [TASK.pump],
  tasks: async (rt, leader, opened) => {
    // each edge destroys a connection whose call timed out (a frozen path) and says so to readiness
    const inbox = opened.add(rt.edges.aodbPool(), (p) => p.end());
    const redis = opened.add(rt.edges.redis(), (r) => r.disconnect());
    const session = createSessionDb(leader!.client);
    await Locks.setSessionTimeouts(session, PUMP.statementTimeout, PUMP.lockTimeout);
    // tracing: the outbox rows this session writes take their message's trace context (lib/sql/flight.ts)
    if (rt.tracing) await Locks.traceOutbox(session, 'on');
    const crash = crashAt(rt.config['msgx.test.crash-at']);
    // XML parse + decode in a worker thread: off the event loop, overlapped with the business transaction, under the per-message budget
    const decoder = opened.add(buildDecoder(slices(rt.config).pump, slices(rt.config).airport), (d) => d.close());
    const deps = withSqlPorts({
      session,
      inbox,
      registry: buildRegistry({ ruleOverride: slices(rt.config).pump.ruleOverride }),
      mirror: buildMirror({ db: rt.db, redis, airport: slices(rt.config).airport, crash }),
      clock: rt.clock,
      ...pumpSettings(rt.config),
      log: rt.log,
      crash,
      decoder,
      // the terminal statement on the pool: a batch's mirror and terminal steps overlap the next batch's business step
      terminalDb: rt.db,
      tracer: rt.tracing && new PumpTrace(rt.tracing),
    });
    const stopping = () => leader!.signal.aborted; // shutdown or lost leadership
    // Postgres restored from a backup (lib/watches/restore.ts): checked before the first drain; no new business while held
    const kafkaCheck = createKafkaRestoreCheck(kafkaOptions(slices(rt.config).kafka, rt.log), slices(rt.config).kafka.msgTopic, rt.db);
    const restore = opened.add(
      new RestoreWatch({
        db: rt.db,
        inbox,
        inboxReadOnly: slices(rt.config).inbox.readOnly,
        redis,
        kafka: () => kafkaCheck.check(),
        clock: rt.clock,
        timeoutMs: slices(rt.config).io.timeoutMs,
        log: rt.log,
      }),
      (w) => w.stop(),
    );
    await restore.start();
    // Redis lost what it held (flushed, restarted, a failover): rebuilt from Postgres by version (lib/watches/redis.ts)
    const mirror = slices(rt.config).mirror;
    const heal = opened.add(
      new RedisHeal({ db: rt.db, redis, timeZone: mirror.timezone, clock: rt.clock, log: rt.log, timeoutMs: mirror.timeoutMs, everyMs: mirror.checkEveryMs, held: () => restore.held() }),
      (h) => h.stop(),
    );
    await heal.start();
    opened
      .add(
        setInterval(() => void refreshHeadGauges(rt.db, rt.clock, deps.failures), PUMP.gaugesEveryMs),
        clearInterval,
      )
      .unref();
    return {
      tasks: {
        [TASK.pump]: dutyTask({
          task: TASK.pump,
          stopping,
          clock: rt.clock,
          health: rt.health,
          run: async () => (restore.held() ? new Date(rt.clock.now().getTime() + PUMP.heldRetryMs) : (await drain(deps, PUMP.budgetMs, () => stopping() || restore.held())).next),
        }),
      },
    };
  },
});
