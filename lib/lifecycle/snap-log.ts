// Lifecycle job: SCHD_SNAP_LOG rows past msgx.snap-log.retention. Index of the jobs: tasks.ts.
import * as SnapLog from '../sql/snap-log.ts';
import { operationDayOf } from '../sis/values.ts';
import { batches, before, count, type JobOptions, type RetentionDeps } from './common.ts';

/** SCHD_SNAP_LOG rows whose receive time and scope end (operation day) are both older than msgx.snap-log.retention. */
export async function purgeSnapLog(d: RetentionDeps, o: JobOptions = {}): Promise<number> {
  const cutoff = before(d, 'snapLogRetentionMs');
  const dayBefore = operationDayOf(cutoff, d.airport.timezone, d.airport.dayCutover);
  const n = await batches(o, 5000, async (batch) => {
    const k = await SnapLog.deleteBefore(d.db, cutoff, dayBefore, batch);
    count('schd_snap_log', k);
    return [k, k];
  });
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString() }, 'retention: snapshot log rows deleted');
  return n;
}
