// SQL of REQ_TRACK (outbound requests to the AODB, G-REQ-TRACK) and its SEQN sequence.
// Statement conventions: lib/db/statement.ts.
import { type Executor, pgOne, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

export type RequestKind = 'RQRD' | 'RQFD';
export type RequestState = 'PENDING' | 'SENT' | 'DONE' | 'EXPIRED' | 'FAILED';

/** A REQ_TRACK row as the statements below return it. */
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

const COLUMNS = `id, kind, rtype, operation_day::text as "operationDay", state, seqn, body,
  routing_id as "routingId", created_at as "createdAt", attempted_at as "attemptedAt", sent_at as "sentAt", closed_at as "closedAt",
  closed_by_msg_id as "closedByMsgId", error_text as "errorText", coutmsgs_id as "coutmsgsId", job_key as "jobKey"`;

const nextSeqnStatement = pgStatement<[], { n: number }>('requests.next_seqn', `select nextval('req_outbound_seqn')::int as n`);
/** Next outbound META/SEQN (1..999999, wraps). */
export function takeNextSeqn(db: Executor): Promise<RowOf<typeof nextSeqnStatement> | undefined> {
  return pgOne(db, nextSeqnStatement);
}

const findOpenStatement = pgStatement<[kind: string], ReqTrackRow>('requests.find_open', `select ${COLUMNS} from req_track where kind = $1::text and state in ('PENDING','SENT')`);
/** The open (PENDING/SENT) request of kind $1 (at most one: a unique index). */
export function findOpen(db: Executor, kind: string): Promise<ReqTrackRow | undefined> {
  return pgOne(db, findOpenStatement, kind);
}

const findOpenForUpdateStatement = pgStatement<[kind: string], ReqTrackRow>(
  'requests.find_open_for_update',
  `select ${COLUMNS} from req_track where kind = $1::text and state in ('PENDING','SENT') for update`,
);
/** The open (PENDING/SENT) request of kind $1, locked for the rest of the transaction. */
export function findOpenForUpdate(db: Executor, kind: string): Promise<ReqTrackRow | undefined> {
  return pgOne(db, findOpenForUpdateStatement, kind);
}

const getRequestStatement = pgStatement<[id: number], ReqTrackRow>('requests.get_request', `select ${COLUMNS} from req_track where id = $1::bigint`);
/** One request by id. */
export function getRequest(db: Executor, id: number): Promise<ReqTrackRow | undefined> {
  return pgOne(db, getRequestStatement, id);
}

const listRequestsStatement = pgStatement<[state: RequestState | null, limit: number], ReqTrackRow>(
  'requests.list_requests',
  `select ${COLUMNS} from req_track where ($1::text is null or state = $1::text) order by id desc limit $2::int`,
);
/** The newest requests (in state $1; null: any), at most $2, newest first (GET /requests, the request CLI's list). */
export function listRequests(db: Executor, state: RequestState | null, limit: number): Promise<ReqTrackRow[]> {
  return pgRows(db, listRequestsStatement, state, limit);
}

const findByJobKeyStatement = pgStatement<[jobKey: string], ReqTrackRow>('requests.find_by_job_key', `select ${COLUMNS} from req_track where job_key = $1::text`);
/** The request a graphile-worker job created, if it did (one job = one request). */
export function findByJobKey(db: Executor, jobKey: string): Promise<ReqTrackRow | undefined> {
  return pgOne(db, findByJobKeyStatement, jobKey);
}

const listPendingStatement = pgStatement<[], ReqTrackRow>('requests.list_pending', `select ${COLUMNS} from req_track where state = 'PENDING' order by id`);
/** PENDING requests in creation order (what sendPending works on). */
export function listPending(db: Executor): Promise<ReqTrackRow[]> {
  return pgRows(db, listPendingStatement);
}

const expireOpenStatement = pgStatement<[kind: string, now: Date, why: string], { id: number }>(
  'requests.expire_open',
  `update req_track set state = 'EXPIRED', closed_at = $2::timestamptz, error_text = $3::text
    where kind = $1::text and state in ('PENDING','SENT') returning id`,
);
/** The open request of kind $1 becomes EXPIRED (a newer one supersedes it). */
export function expireOpen(db: Executor, kind: string, now: Date, why: string): Promise<RowOf<typeof expireOpenStatement> | undefined> {
  return pgOne(db, expireOpenStatement, kind, now, why);
}

const insertPendingStatement = pgStatement<
  [kind: string, rtype: string | null, operationDay: string | null, seqn: number, body: string, routingId: string, now: Date, jobKey: string | null],
  ReqTrackRow
>(
  'requests.insert_pending',
  `insert into req_track (kind, rtype, operation_day, state, seqn, body, routing_id, created_at, job_key)
   values ($1::text, $2::text, $3::date, 'PENDING', $4::int, $5::text, $6::text, $7::timestamptz, $8::text)
   returning ${COLUMNS}`,
);
/** A new PENDING request. */
export function insertPending(
  db: Executor,
  kind: string,
  rtype: string | null,
  operationDay: string | null,
  seqn: number,
  body: string,
  routingId: string,
  now: Date,
  jobKey: string | null,
): Promise<ReqTrackRow | undefined> {
  return pgOne(db, insertPendingStatement, kind, rtype, operationDay, seqn, body, routingId, now, jobKey);
}

const markAttemptedStatement = pgStatement<[id: number, now: Date]>('requests.mark_attempted', `update req_track set attempted_at = $2::timestamptz where id = $1::bigint and state = 'PENDING'`);
/** Records a COUTMSGS insert attempt before it is made (a crash after it means "outcome unknown"). */
export function markAttempted(db: Executor, id: number, now: Date): Promise<number> {
  return pgRun(db, markAttemptedStatement, id, now);
}

const markSentStatement = pgStatement<[id: number, coutmsgsId: number, now: Date]>(
  'requests.mark_sent',
  `update req_track set state = 'SENT', sent_at = $3::timestamptz, coutmsgs_id = $2::bigint
    where id = $1::bigint and state = 'PENDING'`,
);
/** PENDING → SENT, once the COUTMSGS insert is confirmed (or reconciled). */
export function markSent(db: Executor, id: number, coutmsgsId: number, now: Date): Promise<number> {
  return pgRun(db, markSentStatement, id, coutmsgsId, now);
}

const markDoneStatement = pgStatement<[id: number, msgId: number, now: Date]>(
  'requests.mark_done',
  `update req_track set state = 'DONE', closed_at = $3::timestamptz, closed_by_msg_id = $2::bigint
    where id = $1::bigint and state in ('PENDING','SENT')`,
);
/** Open → DONE by the inbox message that answered it. */
export function markDone(db: Executor, id: number, msgId: number, now: Date): Promise<number> {
  return pgRun(db, markDoneStatement, id, msgId, now);
}

const markFailedStatement = pgStatement<[id: number, msgId: number, errorText: string, now: Date]>(
  'requests.mark_failed',
  `update req_track set state = 'FAILED', closed_at = $4::timestamptz, closed_by_msg_id = $2::bigint, error_text = $3::text
    where id = $1::bigint and state in ('PENDING','SENT')`,
);
/** Open → FAILED (EROR reply), with the error text. */
export function markFailed(db: Executor, id: number, msgId: number, errorText: string, now: Date): Promise<number> {
  return pgRun(db, markFailedStatement, id, msgId, errorText, now);
}

const closedRqfdExistsStatement = pgStatement<[operationDay: string], { one: number }>(
  'requests.closed_rqfd_exists',
  `select 1 as one from req_track where kind = 'RQFD' and operation_day = $1::date
    and state in ('DONE','EXPIRED','FAILED') limit 1`,
);
/** Whether an RQFD for operation day $1 was ever closed (DONE/EXPIRED/FAILED): a row, or none. */
export function closedRqfdExists(db: Executor, operationDay: string): Promise<RowOf<typeof closedRqfdExistsStatement>[]> {
  return pgRows(db, closedRqfdExistsStatement, operationDay);
}

const countByStateStatement = pgStatement<[], { state: ReqTrackRow['state']; n: number }>('requests.count_by_state', `select state, count(*)::int as n from req_track group by state`);
/** Rows per state (msgx_requests gauge). */
export function countByState(db: Executor): Promise<RowOf<typeof countByStateStatement>[]> {
  return pgRows(db, countByStateStatement);
}

const deleteClosedBeforeStatement = pgStatement<[cutoff: Date]>('requests.delete_closed_before', `delete from req_track where closed_at is not null and closed_at < $1::timestamptz`);
/** Retention (msgx.req-track.retention): removes closed rows closed before $1. */
export function deleteClosedBefore(db: Executor, cutoff: Date): Promise<number> {
  return pgRun(db, deleteClosedBeforeStatement, cutoff);
}
