// Outbound requests to the AODB (G-REQ-TRACK, C-4: we only promise the COUTMSGS row).
//   createRequest: expire the open request of the same kind, take a SEQN, build the exact body,
//                  insert PENDING (and, optionally, queue the `request` job) — one transaction.
//   sendPending:   for each PENDING request: mark the attempt, reconcile an earlier attempt whose
//                  outcome is unknown (a row with the exact body and ROUTINGID inserted since the
//                  request was created, looked for at most reconcile-window back), otherwise insert
//                  the COUTMSGS row; SENT only after the insert (or the found row) is confirmed.
import { TASK } from '../core/tasks.ts';
import type { Pool } from 'mysql2/promise';
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { slices, type AirportConfig, type Config, type Slices } from '../core/config.ts';
import type { Db } from '../db/postgres.ts';
import * as Coutmsgs from '../sql/coutmsgs.ts';
import * as Jobs from '../sql/jobs.ts';
import * as Locks from '../sql/locks.ts';
import { formatLocalDatetime } from '../sis/values.ts';
import { buildRequestXml, type RequestSpec } from './message.ts';
import { expireOpen, findByJobKey, insertPending, listPending, markAttempted, markSent, nextSeqn, type ReqTrackRow } from './track.ts';

/** Advisory lock keys (class 7100): 1 = creating RQRD, 2 = creating RQFD, 3 = the sender. */
export const REQUEST_LOCKS = { class: 7_100, RQRD: 1, RQFD: 2, SENDER: 3 } as const;

/** The config slices requests read: sender, routing ids, daily schedule, reconcile window, I/O timeout; the airport's zone and cutover. */
export interface RequestSettings {
  requests: Slices['requests'];
  airport: AirportConfig;
}
export const requestSettings = (config: Config): RequestSettings => {
  const s = slices(config);
  return { requests: s.requests, airport: s.airport };
};

export const routingIdOf = (requests: Slices['requests'], kind: RequestSpec['kind']) => (kind === 'RQRD' ? requests.routingIdRqrd : requests.routingIdRqfd);

/**
 * Create a request (PENDING); the open request of the same kind is EXPIRED first. With a
 * `jobKey` (the graphile-worker job creating it) a job creates one request only: when that job
 * already created one (a retry), that request is returned as it is (`existing`), nothing new.
 */
export async function createRequest(
  db: Db,
  a: RequestSettings & { now: Date; spec: RequestSpec; enqueue?: boolean; jobKey?: string },
): Promise<{ request: ReqTrackRow; expiredId?: number; existing?: true }> {
  const { requests, airport, now, spec } = a;
  return db.transaction().execute(async (tx) => {
    await Locks.requestCreateXactLock(tx, REQUEST_LOCKS.class, REQUEST_LOCKS[spec.kind]);
    if (a.jobKey) {
      const mine = await findByJobKey(tx, a.jobKey);
      if (mine) return { request: mine, existing: true as const };
    }
    const expiredId = await expireOpen(tx, spec.kind, now, `superseded by a newer ${spec.kind}`);
    const seqn = await nextSeqn(tx);
    const body = buildRequestXml({
      spec,
      sender: requests.sender,
      seqn,
      now,
      timeZone: airport.timezone,
      cutover: airport.dayCutover,
    });
    const request = await insertPending(tx, {
      kind: spec.kind,
      rtype: spec.kind === 'RQRD' ? spec.rtype : null,
      operationDay: spec.kind === 'RQFD' ? spec.operationDay : null,
      seqn,
      body,
      routingId: routingIdOf(requests, spec.kind),
      now,
      ...(a.jobKey ? { jobKey: a.jobKey } : {}),
    });
    if (a.enqueue) await Jobs.addRequestJob(tx, TASK.request, request.id);
    return { request, expiredId };
  });
}

export interface OutboundDeps extends RequestSettings {
  db: Db;
  /** mysql2/promise pool on the AODB interface database (COUTMSGS). */
  outbox: Pool;
  clock: Clock;
  log?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

export type SendResult =
  | { id: number; outcome: 'sent'; coutmsgsId: number }
  | { id: number; outcome: 'reconciled'; coutmsgsId: number }
  /** Written to COUTMSGS, but the request was expired (superseded) meanwhile. */
  | { id: number; outcome: 'superseded'; coutmsgsId: number }
  /** The insert failed or its outcome is unknown: stays PENDING, reconciled on the next run. */
  | { id: number; outcome: 'unknown'; error: string };

/** Send every PENDING request (one sender at a time: session advisory lock on one connection). */
export async function sendPending(deps: OutboundDeps): Promise<SendResult[]> {
  // a read-only (shadow) installation never writes COUTMSGS: the AODB answers the live one only
  if (deps.requests.readOnly) {
    deps.log?.warn('read-only installation (msgx.inbox.read-only): requests are kept PENDING, never written to COUTMSGS');
    return [];
  }
  return deps.db.connection().execute(async (conn) => {
    await Locks.requestSenderLock(conn, REQUEST_LOCKS.class, REQUEST_LOCKS.SENDER);
    try {
      const out: SendResult[] = [];
      for (const req of await listPending(conn)) out.push(await sendOne({ ...deps, db: conn }, req));
      return out;
    } finally {
      await Locks.requestSenderUnlock(conn, REQUEST_LOCKS.class, REQUEST_LOCKS.SENDER);
    }
  });
}

async function sendOne(deps: OutboundDeps, req: ReqTrackRow): Promise<SendResult> {
  const { db, clock, log } = deps;
  const tz = deps.airport.timezone;
  const timeout = deps.requests.timeoutMs;
  const attemptAt = clock.now();
  if (!(await markAttempted(db, req.id, attemptAt))) return { id: req.id, outcome: 'unknown', error: 'no longer PENDING' };
  try {
    let found: number | undefined;
    if (req.attemptedAt) {
      const window = deps.requests.reconcileWindowMs;
      const since = new Date(Math.max(req.createdAt.getTime(), attemptAt.getTime() - window) - 1000);
      found = await findOutboxRow(deps.outbox, req, formatLocalDatetime(since, tz), timeout);
    }
    const coutmsgsId = found ?? (await insertOutboxRow(deps.outbox, req, formatLocalDatetime(clock.now(), tz), timeout));
    const sent = await markSent(db, req.id, coutmsgsId, clock.now());
    if (!sent) {
      log?.warn({ requestId: req.id, coutmsgsId }, 'request written to COUTMSGS but superseded meanwhile');
      return { id: req.id, outcome: 'superseded', coutmsgsId };
    }
    log?.info({ requestId: req.id, kind: req.kind, coutmsgsId, reconciled: found !== undefined }, 'request SENT');
    return found !== undefined ? { id: req.id, outcome: 'reconciled', coutmsgsId } : { id: req.id, outcome: 'sent', coutmsgsId };
  } catch (e) {
    const error = e instanceof Error ? e.message : String(e);
    log?.warn({ requestId: req.id, err: error }, 'COUTMSGS insert failed or outcome unknown; stays PENDING');
    return { id: req.id, outcome: 'unknown', error };
  }
}

/** The pool with a per-query timeout (mysql2's `timeout`: the query fails and its connection is dropped). */
function timed(outbox: Pool, timeout: number): Pick<Pool, 'query'> {
  return { query: ((text: string, values: unknown[]) => outbox.query({ sql: text, values, timeout })) as Pool['query'] };
}

/** The row an earlier attempt may have written: exact body and ROUTINGID, inserted since `since` (local). */
export async function findOutboxRow(outbox: Pool, req: Pick<ReqTrackRow, 'body' | 'routingId'>, since: string, timeout: number) {
  const rows = await Coutmsgs.findRequestRow(timed(outbox, timeout), req.routingId, since, req.body);
  return rows.length ? Number(rows[0].id) : undefined;
}

/** Insert the COUTMSGS row; returns COUTMSGS_ID. Flag columns 0; DATE_INSERTED = local now. */
export async function insertOutboxRow(outbox: Pool, req: Pick<ReqTrackRow, 'body' | 'routingId'>, insertedAt: string, timeout: number) {
  return (await Coutmsgs.insertRequestRow(timed(outbox, timeout), req.body, insertedAt, req.routingId)).insertId;
}
