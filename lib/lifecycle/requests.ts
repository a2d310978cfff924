// Lifecycle job: closed REQ_TRACK rows past msgx.req-track.retention. Index of the jobs: tasks.ts.
import { deleteClosedBefore } from '../requests/track.ts';
import { before, count, type RetentionDeps } from './common.ts';

/** Closed REQ_TRACK rows older than msgx.req-track.retention. */
export async function purgeRequests(d: RetentionDeps): Promise<number> {
  const cutoff = before(d, 'reqTrackRetentionMs');
  const n = await deleteClosedBefore(d.db, cutoff);
  count('req_track', n);
  if (n) d.log.info({ deleted: n, before: cutoff.toISOString() }, 'retention: closed requests deleted');
  return n;
}
