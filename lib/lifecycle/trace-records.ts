// Retention of the trace records, two jobs of the retention process:
//   flight_change  CREATED_AT older than msgx.pipeline.event-retention (as long as the outbox
//                  events of those versions are kept)
//   proc_attempt   its PROC_STATE row is gone (purged by purgeProcState): the attempts
//                  go with the message they belong to, never before it
// Each deletes in bounded batches, returns the count and counts it in
// msgx_retention_deleted_total{object}.
import * as Flight from '../sql/flight/purge.ts';
import * as ProcState from '../sql/proc-state.ts';
import { before, type JobOptions, type RetentionDeps } from './common.ts';
import { metrics } from '../runtime/metrics.ts';

async function loop(o: JobOptions, object: string, step: (batch: number) => Promise<number>): Promise<number> {
  const batch = o.batch ?? 5000;
  let total = 0;
  for (;;) {
    const n = await step(batch);
    total += n;
    if (n > 0) metrics.retentionDeleted.inc({ object }, n);
    if (n < batch || o.budget?.spent()) return total;
  }
}

/** FLIGHT_CHANGE rows older than msgx.pipeline.event-retention (by CREATED_AT). */
export async function purgeFlightChanges(d: Pick<RetentionDeps, 'db' | 'clock' | 'retention' | 'log'>, o: JobOptions = {}): Promise<number> {
  const cutoff = before(d, 'eventRetentionMs');
  const n = await loop(o, 'flight_change', async (batch) => {
    return Flight.purgeChangesBefore(d.db, cutoff, batch);
  });
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString() }, 'retention: flight change records deleted');
  return n;
}

/** PROC_ATTEMPT rows whose message's PROC_STATE row is gone. */
export async function purgeAttempts(d: Pick<RetentionDeps, 'db' | 'log'>, o: JobOptions = {}): Promise<number> {
  const n = await loop(o, 'proc_attempt', async (batch) => {
    return ProcState.purgeOrphanAttempts(d.db, batch);
  });
  if (n) d.log.info({ deleted: n }, 'retention: attempts of purged messages deleted');
  return n;
}
