// REQ_TRACK transitions, one function per transition (docs/reference-data.md "Requests"):
//   PENDING ──insert confirmed──► SENT ──matching RESP/DNLD──► DONE
//   PENDING|SENT ──newer request of the same kind──► EXPIRED
//   PENDING|SENT ──EROR──► FAILED
// Every function takes an executor (a Kysely or a Transaction); callers own the transaction.
// The statements: lib/sql/requests.ts.
import type { Executor } from '../db/statement.ts';
import * as Sql from '../sql/requests.ts';

import type { ReqTrackRow, RequestKind, RequestState } from '../sql/requests.ts';

export type { ReqTrackRow, RequestKind, RequestState };

/** Next outbound META/SEQN (1..999999, wraps). */
export async function nextSeqn(db: Executor): Promise<number> {
  const r = await Sql.takeNextSeqn(db);
  return (r as { n: number }).n;
}

/** The open (PENDING/SENT) request of a kind, locked for the rest of the transaction. */
export async function findOpen(db: Executor, kind: RequestKind, opts: { lock?: boolean } = {}): Promise<ReqTrackRow | undefined> {
  return opts.lock ? Sql.findOpenForUpdate(db, kind) : Sql.findOpen(db, kind);
}

export async function getRequest(db: Executor, id: number): Promise<ReqTrackRow | undefined> {
  return Sql.getRequest(db, id);
}

/** The newest requests, optionally of one state, newest first. */
export async function listRequests(db: Executor, q: { state?: RequestState; limit: number }): Promise<ReqTrackRow[]> {
  return Sql.listRequests(db, q.state ?? null, q.limit);
}

/**
 * What an operator reads about a request: its state and times, and for a FAILED one the AODB's
 * error text (for an EXPIRED one, what superseded it). The body is left out.
 */
export function requestView(r: ReqTrackRow) {
  return {
    id: r.id,
    kind: r.kind,
    rtype: r.rtype,
    operationDay: r.operationDay,
    state: r.state,
    seqn: r.seqn,
    createdAt: r.createdAt,
    attemptedAt: r.attemptedAt,
    sentAt: r.sentAt,
    closedAt: r.closedAt,
    closedByMsgId: r.closedByMsgId,
    errorText: r.errorText,
    coutmsgsId: r.coutmsgsId,
  };
}

/** The request a graphile-worker job created, if it did (one job = one request). */
export async function findByJobKey(db: Executor, jobKey: string): Promise<ReqTrackRow | undefined> {
  return Sql.findByJobKey(db, jobKey);
}

/** PENDING requests in creation order (what sendPending works on). */
export async function listPending(db: Executor): Promise<ReqTrackRow[]> {
  return Sql.listPending(db);
}

/** A new request of a kind expires the open one first. Returns the expired id, if any. */
export async function expireOpen(db: Executor, kind: RequestKind, now: Date, why: string): Promise<number | undefined> {
  return (await Sql.expireOpen(db, kind, now, why))?.id;
}

export async function insertPending(
  db: Executor,
  r: { kind: RequestKind; rtype: string | null; operationDay: string | null; seqn: number; body: string; routingId: string; now: Date; jobKey?: string },
): Promise<ReqTrackRow> {
  const row = await Sql.insertPending(db, r.kind, r.rtype, r.operationDay, r.seqn, r.body, r.routingId, r.now, r.jobKey ?? null);
  return row as ReqTrackRow;
}

/** Record an insert attempt before it is made (a crash after this line means "outcome unknown"). */
export async function markAttempted(db: Executor, id: number, now: Date): Promise<boolean> {
  return (await Sql.markAttempted(db, id, now)) === 1;
}

/** PENDING → SENT, only after the COUTMSGS insert is confirmed (or reconciled). False when no longer PENDING. */
export async function markSent(db: Executor, id: number, coutmsgsId: number, now: Date): Promise<boolean> {
  return (await Sql.markSent(db, id, coutmsgsId, now)) === 1;
}

/** Open → DONE by the inbox message that answered it. */
export async function markDone(db: Executor, id: number, msgId: number, now: Date): Promise<boolean> {
  return (await Sql.markDone(db, id, msgId, now)) === 1;
}

/** Open → FAILED (EROR reply), with the error text. */
export async function markFailed(db: Executor, id: number, msgId: number, errorText: string, now: Date): Promise<boolean> {
  return (await Sql.markFailed(db, id, msgId, errorText, now)) === 1;
}

/** Was an RQFD for this operation day ever closed (DONE/EXPIRED/FAILED)? */
export async function closedRqfdExists(db: Executor, operationDay: string): Promise<boolean> {
  return (await Sql.closedRqfdExists(db, operationDay)).length > 0;
}

/** Rows per state (msgx_requests gauge). */
export async function countByState(db: Executor): Promise<Record<RequestState, number>> {
  const out: Record<RequestState, number> = { PENDING: 0, SENT: 0, DONE: 0, EXPIRED: 0, FAILED: 0 };
  for (const row of await Sql.countByState(db)) out[row.state] = row.n;
  return out;
}

/** Retention (msgx.req-track.retention): remove closed rows older than the cutoff. */
export async function deleteClosedBefore(db: Executor, cutoff: Date): Promise<number> {
  return Sql.deleteClosedBefore(db, cutoff);
}
