// G-RESP-GUARD: decides whether a SCHD DNLD/RESP for an operation day is applied, and closes
// the RQFD it answers. Called by the flight domain inside the business transaction.
//   RESP: applied only when an open RQFD exists for its operation day (it becomes DONE);
//         a RESP without a day (RECS=0) takes the open RQFD's day;
//         otherwise SKIPPED(late-response) when a closed RQFD for that day exists, else
//         SKIPPED(no-open-request).
//   DNLD: always applied; completes the open RQFD when it is for the same day.
// "Open" = PENDING or SENT: a PENDING request whose COUTMSGS insert outcome is still unknown
// has evidently been delivered when its answer arrives.
import type { Executor } from '../db/statement.ts';
import { closedRqfdExists, findOpen, markDone } from './track.ts';

/** Apply it, to this operation day; or skip it, with this reason. */
export type ScheduleGuardResult = { apply: true; operationDay: string } | { apply: false; reason: 'late-response' | 'no-open-request' };

export async function scheduleResponseGuard(tx: Executor, a: { styp: 'DNLD' | 'RESP'; operationDay: string | null; msgId: number; now: Date }): Promise<ScheduleGuardResult> {
  const open = await findOpen(tx, 'RQFD', { lock: true });
  if (a.styp === 'DNLD') {
    // a DNLD without a day (RECS=0) has nothing to apply to
    if (a.operationDay === null) return { apply: false, reason: 'no-open-request' };
    if (open && open.operationDay === a.operationDay) await markDone(tx, open.id, a.msgId, a.now);
    return { apply: true, operationDay: a.operationDay };
  }
  const day = a.operationDay ?? open?.operationDay ?? null;
  if (open && day !== null && open.operationDay === day) {
    await markDone(tx, open.id, a.msgId, a.now);
    return { apply: true, operationDay: day };
  }
  if (a.operationDay !== null && (await closedRqfdExists(tx, a.operationDay))) return { apply: false, reason: 'late-response' };
  return { apply: false, reason: 'no-open-request' };
}
