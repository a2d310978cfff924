// Lifecycle job: FLIGHT_HISTORY rows past msgx.history.retention. Index of the jobs: tasks.ts.
import { sql } from 'kysely';
import { batches, before, count, type JobOptions, type RetentionDeps } from './common.ts';

/** FLIGHT_HISTORY rows archived longer ago than msgx.history.retention (G-FLIGHT-HIST-RETENTION). */
export async function purgeHistory(d: RetentionDeps, o: JobOptions = {}): Promise<number> {
  const cutoff = before(d, 'msgx.history.retention');
  const n = await batches(o, 5000, async (batch) => {
    const r = await sql`
      delete from flight_history h using (
        select flid, state_version from flight_history where archived_at < ${cutoff} order by archived_at limit ${batch}) x
      where h.flid = x.flid and h.state_version = x.state_version`.execute(d.db);
    const k = Number(r.numAffectedRows ?? 0);
    count('flight_history', k);
    return [k, k];
  });
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString() }, 'retention: history records deleted');
  return n;
}
