// Request metrics on prom-client's default registry (get-or-create: safe to call twice).
//   msgx_requests{state}             gauge   REQ_TRACK rows by state (collected from Postgres)
//   msgx_requests_failed_total{kind} counter EROR replies that failed a request (alert on increase)
// msgx_requests_failed_total is declared once, in lib/runtime/metrics.ts (metrics.requestsFailed):
// the pump (which applies the AODB's replies) exports it, at 0 for each kind.
import { Gauge, register } from 'prom-client';
import type { Executor } from '../db/statement.ts';
import { countByState } from './track.ts';

/** The msgx_requests{state} gauge, read from REQ_TRACK at scrape time. Call once in the process that serves it. */
export function registerRequestsGauge(db: Executor): Gauge {
  const existing = register.getSingleMetric('msgx_requests') as Gauge | undefined;
  if (existing) register.removeSingleMetric('msgx_requests');
  return new Gauge({
    name: 'msgx_requests',
    help: 'REQ_TRACK rows by state',
    labelNames: ['state'],
    async collect() {
      const counts = await countByState(db);
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
}
