// Lifecycle job: SCHD_SNAP_LOG rows past msgx.snap-log.retention. Index of the jobs: tasks.ts.
import { sql } from 'kysely';
import { operationDayOf } from '../sis/values.ts';
import { batches, before, count, type JobOptions, type RetentionDeps } from './common.ts';

/** SCHD_SNAP_LOG rows whose receive time and scope end (operation day) are both older than msgx.snap-log.retention. */
export async function purgeSnapLog(d: RetentionDeps, o: JobOptions = {}): Promise<number> {
  const cutoff = before(d, 'msgx.snap-log.retention');
  const dayBefore = operationDayOf(cutoff, d.config['msgx.airport.timezone'], d.config['msgx.airport.day-cutover']);
  const n = await batches(o, 5000, async (batch) => {
    const r = await sql`
      delete from schd_snap_log where id = any(array(
        select id from schd_snap_log
        where created_at < ${cutoff} and (operation_day is null or operation_day < ${dayBefore}::date)
        order by id limit ${batch}))`.execute(d.db);
    const k = Number(r.numAffectedRows ?? 0);
    count('schd_snap_log', k);
    return [k, k];
  });
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString() }, 'retention: snapshot log rows deleted');
  return n;
}
