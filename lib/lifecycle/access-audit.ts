// Lifecycle job: ACCESS_AUDIT rows (who did what over HTTP) past msgx.audit.retention. Index of the jobs: tasks.ts.
import * as AuditSql from '../sql/access-audit.ts';
import { batches, before, count, type JobOptions, type RetentionDeps } from './common.ts';

/** ACCESS_AUDIT rows older than msgx.audit.retention, oldest first, in batches. */
export async function purgeAccessAudit(d: RetentionDeps, o: JobOptions = {}): Promise<number> {
  const cutoff = before(d, 'auditRetentionMs');
  const n = await batches(o, 5000, async (batch) => {
    const k = await AuditSql.deleteBefore(d.db, cutoff, batch);
    count('access_audit', k);
    return [k, k];
  });
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString() }, 'retention: audit rows deleted');
  return n;
}
