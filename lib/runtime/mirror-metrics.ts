// The derived stores' health (docs/operations.md "Derived stores"): Redis and the compacted state
// topic are copies of committed Postgres state and are rebuilt from it by the gateway itself; the
// msg topic is an event history, where the gateway only detects a loss and an operator decides.
// One gauge and one counter for all three, labelled by store; each process registers what it
// checks (registerMirrorMetrics) and the condition /healthz names (lib/runtime/conditions.ts).
import client from 'prom-client';

export type Store = 'redis' | 'state-topic' | 'msg-topic';

export const mirrorBehind = new client.Gauge({
  registers: [],
  name: 'msgx_mirror_behind',
  help: 'Items the store was last found behind Postgres by (redis: flights missing or older; state-topic: 1 while missing, mis-configured or below the recorded offsets; msg-topic: partitions whose end offset is below the recorded one), 0 once healed',
  labelNames: ['store'] as const,
});

export const mirrorRebuilds = new client.Counter({
  registers: [],
  name: 'msgx_mirror_rebuilds_total',
  help: 'Rebuilds of a derived store from Postgres that completed (redis: a re-sync or a repair of stale keys; state-topic: a re-seed); msg-topic counts losses detected (never rebuilt by itself)',
  labelNames: ['store'] as const,
});

/** Registers both metrics on the default registry (once) with the stores this process checks at 0. */
export function registerMirrorMetrics(stores: readonly Store[]): void {
  if (!client.register.getSingleMetric('msgx_mirror_behind')) client.register.registerMetric(mirrorBehind);
  if (!client.register.getSingleMetric('msgx_mirror_rebuilds_total')) client.register.registerMetric(mirrorRebuilds);
  for (const store of stores) {
    mirrorBehind.set({ store }, 0);
    mirrorRebuilds.inc({ store }, 0);
  }
}
