// Dispatch metrics (names in docs/operations.md "Alerts"), prom-client default registry:
//   msgx_dispatch_pending{target}   gauge    PENDING outbox rows (read from Postgres at scrape time)
//   msgx_dispatch_dead{target}      gauge    DEAD outbox rows (dead letters, alert on > 0)
//   msgx_dispatch_sent_total{target} counter events confirmed by Kafka and marked SENT
//   msgx_dispatch_oldest_pending_seconds{target} gauge age of the oldest PENDING event (Kafka unreachable alert)
import client from 'prom-client';
import type { Executor } from '../db/statement.ts';
import * as Outbox from '../sql/outbox/operator.ts';
import { kafkaReachable } from './outage.ts';
import type { Target } from './plan.ts';

const { Counter, Gauge, register } = client;

/** Not registered here: the dispatcher of each target exports it (registerDispatchGauges). */
export const dispatchSent = new Counter({ registers: [], name: 'msgx_dispatch_sent_total', help: 'Outbox events confirmed by Kafka', labelNames: ['target'] as const });

/** Row counts by state for these targets (PENDING uses the partial indexes). */
export async function countByState(db: Executor, targets: readonly Target[]): Promise<Record<Target, { pending: number; dead: number }>> {
  const rows = await Outbox.countByState(db, [...targets]);
  const out = { msg: { pending: 0, dead: 0 }, schd: { pending: 0, dead: 0 }, state: { pending: 0, dead: 0 } };
  for (const x of rows) out[x.target][x.state === 'PENDING' ? 'pending' : 'dead'] = x.n;
  return out;
}

/**
 * The two gauges, collected from Postgres at scrape time (exact also while the worker idles).
 * Call once per process with the targets it dispatches, so that two processes do not both
 * report the same series.
 */
export function registerDispatchGauges(db: Executor, targets: readonly Target[]): void {
  for (const name of ['msgx_dispatch_pending', 'msgx_dispatch_dead', 'msgx_dispatch_oldest_pending_seconds', 'msgx_dispatch_sent_total', 'msgx_dispatch_kafka_reachable'])
    if (register.getSingleMetric(name)) register.removeSingleMetric(name);
  register.registerMetric(dispatchSent);
  register.registerMetric(kafkaReachable);
  for (const t of targets) kafkaReachable.set({ target: t }, 1);
  for (const t of targets) dispatchSent.inc({ target: t }, 0);
  new Gauge({
    name: 'msgx_dispatch_oldest_pending_seconds',
    help: 'Age of the oldest PENDING outbox event (0 when none): grows while Kafka is unreachable',
    labelNames: ['target'] as const,
    async collect() {
      for (const t of targets) {
        const r = await Outbox.readOldestPendingAge(db, t);
        this.set({ target: t }, Math.max(0, Number(r?.age ?? 0)));
      }
    },
  });
  const byState = [
    ['pending', 'PENDING outbox rows (not yet confirmed by Kafka)'],
    ['dead', 'DEAD outbox rows (dead letters waiting for dispatch-replay / dispatch-skip)'],
  ] as const;
  for (const [state, help] of byState)
    new Gauge({
      name: `msgx_dispatch_${state}`,
      help,
      labelNames: ['target'] as const,
      async collect() {
        const c = await countByState(db, targets);
        for (const t of targets) this.set({ target: t }, c[t][state]);
      },
    });
}
