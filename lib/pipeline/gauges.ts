// Head-of-queue gauges, computed apart from the pump's loop (a timer of the pump process on a
// pool connection): they keep telling the truth while the pump is stuck, e.g. waiting on a lock
// or holding an INFRA-failed head. One statement. When Postgres does not answer, the gauges are
// not left at their last value: msgx_pipeline_gauges_stale is set to 1 (the alert rules read it).
import type { Clock } from '../core/clock.ts';
import type { Slices } from '../core/config.ts';
import type { Db } from '../db/postgres.ts';
import * as ProcState from '../sql/proc-state.ts';
import { metrics } from '../runtime/metrics.ts';

export async function refreshHeadGauges(db: Db, clock: Clock, failures: Pick<Slices['failures'], 'infraAlertAfterMs'>): Promise<void> {
  try {
    const row = await ProcState.readHeadGauges(db);
    const now = clock.now().getTime();
    metrics.backlogMessages.set(Number(row?.n ?? 0));
    metrics.backlogOldestSeconds.set(row?.enqueued_at ? Math.max(0, (now - row.enqueued_at.getTime()) / 1000) : 0);
    const blocked = row?.state === 'FAILED' && row.error_class === 'INFRA' && row.failing_since !== null && now - row.failing_since.getTime() >= failures.infraAlertAfterMs;
    metrics.headBlocked.set(blocked ? 1 : 0);
    metrics.gaugesStale.set(0);
  } catch {
    metrics.gaugesStale.set(1);
  }
}
