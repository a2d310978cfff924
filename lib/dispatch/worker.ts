// What the dispatcher processes share: the Kafka edge with its topics ensured before the first
// round (retrying while the broker is unreachable; a refusal to create a topic is fatal, except
// where the topic check owns the topic: msg and state, lib/watches/), the
// self-rescheduling drain task and the health view. A lost wake-up is caught by the process's
// keep-alive (ProcessSpec.keepAlive, lib/runtime/process.ts).
import { RUNTIME } from '../core/tuning.ts';
import { Episode } from '../runtime/episode.ts';
import type { Task } from 'graphile-worker';
import type { Runtime } from '../runtime/process.ts';
import { createKafkaEdge, kafkaOptions, TopicCreationError, type KafkaEdge, type TopicSpec } from './kafka.ts';
import type { Target } from './plan.ts';
import { registerDispatchGauges } from './metrics.ts';
import type { DispatchDeps, DrainNext } from './msg.ts';
import { KafkaOutage, PROBE_INTERVAL_MS } from './outage.ts';
import { releaseBackoff } from './outbox.ts';
import { probes, probeUntilUp } from '../runtime/probe.ts';
import { backoffMs } from '../runtime/watch.ts';
import { dutyTask } from '../runtime/duty.ts';
import { slices, targets } from '../core/config.ts';
import { explained } from '../db/tls.ts';
import { DISPATCH } from '../core/tuning.ts';
import { crashAt } from '../runtime/crash.ts';

export const DRAIN_BUDGET_MS = DISPATCH.drainBudgetMs;

/**
 * Kafka edge with the topic ensured (created with the gateway's settings, or its settings
 * checked); waits (and retries) while the broker cannot be reached.
 */
export async function connectKafka(rt: Runtime, spec: TopicSpec, o: { refusalFatal?: boolean } = {}): Promise<KafkaEdge> {
  const topic = spec.topic;
  const kafka = createKafkaEdge(kafkaOptions(slices(rt.config).kafka, rt.log, rt.health.reporter('kafka')));
  const started = rt.clock.now().getTime();
  const away = new Episode(rt.clock, RUNTIME.summaryEveryMs);
  // Short, capped waits: the dispatcher starts sending ≤ 2 s after Kafka answers;
  // one log line at the first failure, then one a minute.
  for (let tries = 1; !rt.signal.aborted; tries++) {
    const wait = backoffMs(DISPATCH.connectBackoff, tries);
    try {
      await kafka.ensureTopics([spec]);
      rt.log.info({ topic, brokers: rt.config.KAFKA_BROKERS, waitedMs: rt.clock.now().getTime() - started }, 'kafka topic ready');
      return kafka;
    } catch (e) {
      if (e instanceof TopicCreationError) {
        // a dispatcher whose topic check owns the topic (lib/watches/) starts
        // anyway: the check reports the refusal in /healthz and retries with backoff
        if (o.refusalFatal === false) return kafka;
        await kafka.close();
        throw e;
      }
      if (away.begin() || away.remind()) {
        rt.log.warn({ err: explained('kafka', e).message, tries, retryEveryMs: DISPATCH.connectBackoff.capMs }, 'kafka not reachable at start-up, retrying');
      }
      await new Promise<void>((r) => {
        const t = setTimeout(r, wait);
        rt.signal.addEventListener('abort', () => (clearTimeout(t), r()), { once: true });
      });
    }
  }
  return kafka;
}

export function dispatcherTask(
  rt: Runtime,
  target: Target,
  task: string,
  drainFn: (d: DispatchDeps, budgetMs: number, signal?: AbortSignal) => Promise<DrainNext>,
  kafka: KafkaEdge,
  topicMissing?: () => void,
): Task {
  registerDispatchGauges(rt.db, [target]);
  const outage = new KafkaOutage(rt.log, target, rt.clock);
  const probe = probes.kafka(targets(rt.config).kafka, Math.min(1000, slices(rt.config).io.timeoutMs));
  const deps: DispatchDeps = {
    db: rt.db,
    kafka,
    dispatch: slices(rt.config).dispatch,
    clock: rt.clock,
    log: rt.log,
    outage,
    topicMissing,
    tracing: rt.tracing,
    crash: crashAt(rt.config['msgx.test.crash-at']),
  };
  return dutyTask({
    task,
    stopping: () => rt.signal.aborted,
    clock: rt.clock,
    health: rt.health,
    run: async () => {
      if (outage.down) {
        // Kafka was unreachable: probe it on a short interval (within this run's budget) and
        // resume the moment it answers, not when the events' backoff runs out.
        const up = await probeUntilUp(probe, { intervalMs: PROBE_INTERVAL_MS, signal: rt.signal, deadlineMs: DRAIN_BUDGET_MS, onFailure: (_n, e) => outage.probeFailed(e.message), clock: rt.clock });
        if (!up) return 'now'; // still down (or stopping): probe again in the next run
        await releaseBackoff(rt.db, outage.recovered());
      }
      const next = await drainFn(deps, DRAIN_BUDGET_MS, rt.signal);
      if (outage.down) return 'now'; // probe in the next run
      return next ?? 'idle';
    },
  });
}
