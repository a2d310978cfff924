// A dispatcher's view of a Kafka outage. A send that fails because
// the broker cannot be reached puts the dispatcher in the "down" state: it logs that ONCE,
// stops sending and probes Kafka every PROBE_INTERVAL_MS (lib/runtime/probe.ts) instead of
// waiting out the events' backoff; a summary line every SUMMARY_EVERY_MS says it is still down.
// The first probe that answers logs "back" with the outage's duration, makes the events that
// backed off during the outage due at once, and sending resumes (≤ 2 s after Kafka is back).
import client from 'prom-client';
import type { Clock } from '../core/clock.ts';
import { Episode } from '../runtime/episode.ts';
import type { Logger } from '../runtime/log.ts';
import type { Target } from './plan.ts';
import { DISPATCH, RUNTIME } from '../core/tuning.ts';

export const PROBE_INTERVAL_MS = DISPATCH.probeIntervalMs;
export const SUMMARY_EVERY_MS = RUNTIME.summaryEveryMs;

/** Not registered here: the dispatchers export it (lib/dispatch/metrics.ts registerDispatchGauges). */
export const kafkaReachable = new client.Gauge({
  registers: [],
  name: 'msgx_dispatch_kafka_reachable',
  help: '0 while the dispatcher of this target cannot reach Kafka (sending paused, probing), 1 otherwise',
  labelNames: ['target'] as const,
});
const reachable = kafkaReachable;

export class KafkaOutage {
  private readonly outage: Episode;
  private failedSends = 0;
  private failedProbes = 0;
  private lastError = '';
  /** Events that backed off during this outage: released when Kafka answers again. */
  private readonly held = new Set<number>();
  private readonly log: Logger;
  private readonly target: Target;

  constructor(log: Logger, target: Target, clock: Clock, summaryEveryMs = SUMMARY_EVERY_MS) {
    this.log = log;
    this.target = target;
    this.outage = new Episode(clock, summaryEveryMs);
    reachable.set({ target }, 1);
  }

  get down(): boolean {
    return this.outage.on;
  }

  /** A send failed because the broker cannot be reached. */
  sendFailed(error: string, eventIds: readonly number[]): void {
    for (const id of eventIds) this.held.add(id);
    this.failedSends++;
    this.lastError = error;
    if (!this.outage.begin()) return;
    reachable.set({ target: this.target }, 0);
    this.log.error(
      { target: this.target, events: eventIds.length, err: error, probeEveryMs: PROBE_INTERVAL_MS },
      `${this.target} dispatch: kafka unreachable; sending paused, probing until it answers`,
    );
  }

  probeFailed(error: string): void {
    this.failedProbes++;
    this.lastError = error;
    if (!this.outage.remind()) return;
    this.log.warn(
      { target: this.target, downForS: Math.round(this.outage.lasted() / 1000), failedSends: this.failedSends, failedProbes: this.failedProbes, heldEvents: this.held.size, err: this.lastError },
      `${this.target} dispatch: kafka still unreachable`,
    );
  }

  /** Kafka answered: log the outage's end; returns the events to make due at once. */
  recovered(): number[] {
    const ids = [...this.held];
    const downForMs = this.outage.end() ?? 0;
    this.log.warn(
      { target: this.target, downForMs, failedSends: this.failedSends, failedProbes: this.failedProbes, heldEvents: ids.length },
      `${this.target} dispatch: kafka reachable again after ${(downForMs / 1000).toFixed(1)} s; sending`,
    );
    this.failedSends = 0;
    this.failedProbes = 0;
    this.held.clear();
    reachable.set({ target: this.target }, 1);
    return ids;
  }
}
