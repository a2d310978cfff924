// How inbound answers close requests (docs/reference-data.md "Requests"). Schedule answers
// go through schedule-guard.ts; reference-data answers and EROR through here.
import type { Executor } from '../db/statement.ts';
import { findOpen, markDone, markFailed, type ReqTrackRow } from './track.ts';

/** A reference-data RESP (always applied) completes the open RQRD when it asked for this TYPE. */
export async function completeRqrd(db: Executor, rtype: string, msgId: number, now: Date): Promise<number | undefined> {
  const open = await findOpen(db, 'RQRD', { lock: true });
  if (!open || open.rtype !== rtype) return undefined;
  await markDone(db, open.id, msgId, now);
  return open.id;
}

/**
 * Which open request an EROR names, by kind and TYPE: STYP RQRD → the open RQRD; STYP RQFD,
 * SCHD or NONE → the open RQFD; STYP = the TYPE the open RQRD asked for → that RQRD. No STYP
 * at all → the most recently sent open request (the spec's fallback). A STYP that names a kind
 * or TYPE with no open request, or names nothing we ask for, closes nothing (docs/decisions.md).
 */
export async function requestNamedByEror(db: Executor, styp: string): Promise<ReqTrackRow | undefined> {
  const rqrd = await findOpen(db, 'RQRD', { lock: true });
  const rqfd = await findOpen(db, 'RQFD', { lock: true });
  if (styp === '') {
    const open = [rqrd, rqfd].filter((r): r is ReqTrackRow => r !== undefined);
    open.sort((a, b) => (b.sentAt?.getTime() ?? 0) - (a.sentAt?.getTime() ?? 0) || b.id - a.id);
    return open.find((r) => r.state === 'SENT') ?? open[0];
  }
  if (styp === 'RQRD') return rqrd;
  if (styp === 'RQFD' || styp === 'SCHD' || styp === 'NONE') return rqfd;
  return rqrd && rqrd.rtype === styp ? rqrd : undefined;
}

/** EROR: the named open request becomes FAILED with the error text. Undefined when none is open. */
export async function failByEror(db: Executor, a: { styp: string; errorText: string; msgId: number; now: Date }): Promise<ReqTrackRow | undefined> {
  const req = await requestNamedByEror(db, a.styp);
  if (!req) return undefined;
  await markFailed(db, req.id, a.msgId, a.errorText, a.now);
  return req;
}
