// REQ_TRACK transitions, one function per transition (refdata-requests.md, G-REQ-TRACK):
//   PENDING ──insert confirmed──► SENT ──matching RESP/DNLD──► DONE
//   PENDING|SENT ──newer request of the same kind──► EXPIRED
//   PENDING|SENT ──EROR──► FAILED
// Every function takes a Kysely or a Transaction; callers own the transaction.
import { sql, type Kysely } from 'kysely';

export type RequestKind = 'RQRD' | 'RQFD';
export type RequestState = 'PENDING' | 'SENT' | 'DONE' | 'EXPIRED' | 'FAILED';

export interface ReqTrackRow {
  id: number;
  kind: RequestKind;
  rtype: string | null;
  /** 'YYYY-MM-DD' */
  operationDay: string | null;
  state: RequestState;
  seqn: number;
  body: string;
  routingId: string;
  createdAt: Date;
  /** Last COUTMSGS insert attempt; set = the outcome of an earlier attempt may be unknown. */
  attemptedAt: Date | null;
  sentAt: Date | null;
  closedAt: Date | null;
  closedByMsgId: number | null;
  errorText: string | null;
  coutmsgsId: number | null;
  /** The graphile-worker job that created it ('job:<id>'), null when made directly. */
  jobKey: string | null;
}

// Any Kysely (or Transaction): these functions only use the sql template.
type Q = Kysely<any>;

const COLUMNS = sql`id, kind, rtype, operation_day::text AS "operationDay", state, seqn, body,
  routing_id AS "routingId", created_at AS "createdAt", attempted_at AS "attemptedAt", sent_at AS "sentAt", closed_at AS "closedAt",
  closed_by_msg_id AS "closedByMsgId", error_text AS "errorText", coutmsgs_id AS "coutmsgsId", job_key AS "jobKey"`;

/** Next outbound META/SEQN (1..999999, wraps). */
export async function nextSeqn(db: Q): Promise<number> {
  const r = await sql<{ n: number }>`SELECT nextval('req_outbound_seqn')::int AS n`.execute(db);
  return r.rows[0].n;
}

/** The open (PENDING/SENT) request of a kind, locked for the rest of the transaction. */
export async function findOpen(db: Q, kind: RequestKind, opts: { lock?: boolean } = {}): Promise<ReqTrackRow | undefined> {
  const r = await sql<ReqTrackRow>`SELECT ${COLUMNS} FROM req_track
    WHERE kind = ${kind} AND state IN ('PENDING','SENT') ${opts.lock ? sql`FOR UPDATE` : sql``}`.execute(db);
  return r.rows[0];
}

export async function getRequest(db: Q, id: number): Promise<ReqTrackRow | undefined> {
  const r = await sql<ReqTrackRow>`SELECT ${COLUMNS} FROM req_track WHERE id = ${id}`.execute(db);
  return r.rows[0];
}

/** The request a graphile-worker job created, if it did (one job = one request). */
export async function findByJobKey(db: Q, jobKey: string): Promise<ReqTrackRow | undefined> {
  const r = await sql<ReqTrackRow>`SELECT ${COLUMNS} FROM req_track WHERE job_key = ${jobKey}`.execute(db);
  return r.rows[0];
}

/** PENDING requests in creation order (what sendPending works on). */
export async function listPending(db: Q): Promise<ReqTrackRow[]> {
  const r = await sql<ReqTrackRow>`SELECT ${COLUMNS} FROM req_track WHERE state = 'PENDING' ORDER BY id`.execute(db);
  return r.rows;
}

/** US-09 AC1: a new request of a kind expires the open one first. Returns the expired id, if any. */
export async function expireOpen(db: Q, kind: RequestKind, now: Date, why: string): Promise<number | undefined> {
  const r = await sql<{ id: number }>`UPDATE req_track SET state = 'EXPIRED', closed_at = ${now}, error_text = ${why}
    WHERE kind = ${kind} AND state IN ('PENDING','SENT') RETURNING id`.execute(db);
  return r.rows[0]?.id;
}

export async function insertPending(
  db: Q,
  r: { kind: RequestKind; rtype: string | null; operationDay: string | null; seqn: number; body: string; routingId: string; now: Date; jobKey?: string },
): Promise<ReqTrackRow> {
  const res = await sql<ReqTrackRow>`INSERT INTO req_track (kind, rtype, operation_day, state, seqn, body, routing_id, created_at, job_key)
    VALUES (${r.kind}, ${r.rtype}, ${r.operationDay}::date, 'PENDING', ${r.seqn}, ${r.body}, ${r.routingId}, ${r.now}, ${r.jobKey ?? null})
    RETURNING ${COLUMNS}`.execute(db);
  return res.rows[0];
}

/** Record an insert attempt before it is made (a crash after this line means "outcome unknown"). */
export async function markAttempted(db: Q, id: number, now: Date): Promise<boolean> {
  const r = await sql`UPDATE req_track SET attempted_at = ${now} WHERE id = ${id} AND state = 'PENDING'`.execute(db);
  return Number(r.numAffectedRows ?? 0) === 1;
}

/** PENDING → SENT, only after the COUTMSGS insert is confirmed (or reconciled). False when no longer PENDING. */
export async function markSent(db: Q, id: number, coutmsgsId: number, now: Date): Promise<boolean> {
  const r = await sql`UPDATE req_track SET state = 'SENT', sent_at = ${now}, coutmsgs_id = ${coutmsgsId}
    WHERE id = ${id} AND state = 'PENDING'`.execute(db);
  return Number(r.numAffectedRows ?? 0) === 1;
}

/** Open → DONE by the inbox message that answered it. */
export async function markDone(db: Q, id: number, msgId: number, now: Date): Promise<boolean> {
  const r = await sql`UPDATE req_track SET state = 'DONE', closed_at = ${now}, closed_by_msg_id = ${msgId}
    WHERE id = ${id} AND state IN ('PENDING','SENT')`.execute(db);
  return Number(r.numAffectedRows ?? 0) === 1;
}

/** Open → FAILED (EROR reply), with the error text. */
export async function markFailed(db: Q, id: number, msgId: number, errorText: string, now: Date): Promise<boolean> {
  const r = await sql`UPDATE req_track SET state = 'FAILED', closed_at = ${now}, closed_by_msg_id = ${msgId}, error_text = ${errorText}
    WHERE id = ${id} AND state IN ('PENDING','SENT')`.execute(db);
  return Number(r.numAffectedRows ?? 0) === 1;
}

/** Was an RQFD for this operation day ever closed (DONE/EXPIRED/FAILED)? */
export async function closedRqfdExists(db: Q, operationDay: string): Promise<boolean> {
  const r = await sql`SELECT 1 FROM req_track WHERE kind = 'RQFD' AND operation_day = ${operationDay}::date
    AND state IN ('DONE','EXPIRED','FAILED') LIMIT 1`.execute(db);
  return r.rows.length > 0;
}

/** Rows per state (msgx_requests gauge). */
export async function countByState(db: Q): Promise<Record<RequestState, number>> {
  const r = await sql<{ state: RequestState; n: number }>`SELECT state, count(*)::int AS n FROM req_track GROUP BY state`.execute(db);
  const out: Record<RequestState, number> = { PENDING: 0, SENT: 0, DONE: 0, EXPIRED: 0, FAILED: 0 };
  for (const row of r.rows) out[row.state] = row.n;
  return out;
}

/** Retention (msgx.req-track.retention): remove closed rows older than the cutoff. */
export async function deleteClosedBefore(db: Q, cutoff: Date): Promise<number> {
  const r = await sql`DELETE FROM req_track WHERE closed_at IS NOT NULL AND closed_at < ${cutoff}`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}
