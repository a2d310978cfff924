// What both dispatcher processes share: the Kafka edge with its topics ensured before the first
// round (retrying while the broker is unreachable; a refusal to create a topic is fatal), the
// self-rescheduling drain task and the health view. A lost wake-up is caught by the process's
// keep-alive (ProcessSpec.keepAlive, lib/runtime/process.ts).
import type { Task } from 'graphile-worker';
import type { Runtime } from '../runtime/process.ts';
import { createKafkaEdge, kafkaOptions, TopicCreationError, type KafkaEdge, type TopicSpec } from './kafka.ts';
import type { Target } from './metrics.ts';
import { registerDispatchGauges } from './metrics.ts';
import type { DispatchDeps, DrainNext } from './msg.ts';

/** Time one task run may keep draining before it re-queues itself (other jobs get a turn). */
export const DRAIN_BUDGET_MS = 30_000;


/**
 * Kafka edge with the topic ensured (created with the gateway's settings, or its settings
 * checked); waits (and retries) while the broker cannot be reached.
 */
export async function connectKafka(rt: Runtime, spec: TopicSpec): Promise<KafkaEdge> {
  const topic = spec.topic;
  const kafka = createKafkaEdge(kafkaOptions(rt.config, rt.log));
  for (let wait = 1000; !rt.signal.aborted; wait = Math.min(wait * 2, 30_000)) {
    try {
      await kafka.ensureTopics([spec]);
      rt.log.info({ topic, brokers: rt.config.KAFKA_BROKERS }, 'kafka topic ready');
      return kafka;
    } catch (e) {
      if (e instanceof TopicCreationError) {
        await kafka.close();
        throw e;
      }
      rt.log.warn({ err: (e as Error).message, retryInMs: wait }, 'kafka not reachable at start-up, retrying');
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
): Task {
  registerDispatchGauges(rt.db, [target]);
  const deps: DispatchDeps = { db: rt.db, kafka, config: rt.config, clock: rt.clock, log: rt.log };
  return async (_payload, helpers) => {
    const next = await drainFn(deps, DRAIN_BUDGET_MS, rt.signal);
    if (next === null || rt.signal.aborted) return;
    await helpers.addJob(task, {}, { jobKey: task, runAt: next === 'now' ? undefined : next });
  };
}
