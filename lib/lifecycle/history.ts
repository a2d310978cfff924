// Lifecycle job: FLIGHT_HISTORY rows past msgx.history.retention. Index of the jobs: tasks.ts.
import * as History from '../sql/history.ts';
import { batches, before, count, type JobOptions, type RetentionDeps } from './common.ts';

/** FLIGHT_HISTORY rows archived longer ago than msgx.history.retention. */
export async function purgeHistory(d: RetentionDeps, o: JobOptions = {}): Promise<number> {
  const cutoff = before(d, 'historyRetentionMs');
  const n = await batches(o, 5000, async (batch) => {
    const k = await History.deleteArchivedBefore(d.db, cutoff, batch);
    count('flight_history', k);
    return [k, k];
  });
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString() }, 'retention: history records deleted');
  return n;
}
