// REQ_TRACK and COUTMSGS against the real Postgres and MariaDB.
import Fastify from 'fastify';
import { Logger, quickAddJob, runOnce } from 'graphile-worker';
import { sql } from 'kysely';
import type { Pool, RowDataPacket } from 'mysql2/promise';
import { countAfterCommit, metrics } from '../../lib/runtime/metrics.ts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { createRequest, insertOutboxRow, requestSettings, sendPending } from '../../lib/requests/outbound.ts';
import { requestRoutes } from '../../lib/api/request-routes.ts';
import { scheduleResponseGuard } from '../../lib/requests/schedule-guard.ts';
import { requestTasks, runRequestTask } from '../../lib/requests/tasks.ts';
import { getRequest, markAttempted, nextSeqn } from '../../lib/requests/track.ts';
import { decodeEnvelope, payload } from '../../lib/sis/envelope.ts';
import { child } from '../../lib/sis/xml.ts';
import { TEST_PG_URL, testConfig } from '../support/env.ts';
import { waitFor } from '../support/processes.ts';
import { applyMessage, refXml, testDb, testOutbox } from '../support/refdata-ctx.ts';

const db = testDb();
const config = testConfig();
let outbox: Pool;
const clock = new ManualClock('2026-11-30T12:00:00Z'); // 20:00 local
const deps = () => ({ db, outbox, ...requestSettings(config), clock });
const rqrd = (rtype: string) => createRequest(db, { ...requestSettings(config), now: clock.now(), spec: { kind: 'RQRD', rtype } });
const rqfd = (operationDay: string) => createRequest(db, { ...requestSettings(config), now: clock.now(), spec: { kind: 'RQFD', operationDay } });
const state = async (id: number) => (await getRequest(db, id))!.state;
const outboxRows = async () => (await outbox.query<RowDataPacket[]>('SELECT * FROM coutmsgs ORDER BY COUTMSGS_ID'))[0];
let msgId = 90_000;

beforeAll(async () => {
  outbox = await testOutbox();
});
beforeEach(async () => {
  await sql`TRUNCATE req_track, ref_master`.execute(db);
  await sql`DELETE FROM graphile_worker._private_jobs`.execute(db).catch(() => undefined);
  await outbox.query('DELETE FROM coutmsgs');
  clock.set('2026-11-30T12:00:00Z');
});
afterAll(async () => {
  await outbox.end();
  await db.destroy();
});

describe('REQ_TRACK lifecycle', () => {
  it('one open slot per kind: a new request expires the open one of its kind only', async () => {
    const a = await rqrd('SLST');
    const f = await rqfd('2026-12-01');
    const b = await rqrd('GLST');
    expect(b.expiredId).toBe(a.request.id);
    expect([await state(a.request.id), await state(b.request.id), await state(f.request.id)]).toEqual(['EXPIRED', 'PENDING', 'PENDING']);
    await sendPending(deps());
    const c = await rqrd('AIRL');
    expect([await state(b.request.id), await state(c.request.id)]).toEqual(['EXPIRED', 'PENDING']);
  });

  it('the partial unique index refuses a second open request of a kind', async () => {
    const a = await rqrd('SLST');
    await expect(sql`INSERT INTO req_track (kind, rtype, seqn, body, routing_id, created_at) VALUES ('RQRD','GLST',1,'x','y',now())`.execute(db)).rejects.toThrow(/req_track_one_open_per_kind/);
    expect(await state(a.request.id)).toBe('PENDING');
  });

  it('SEQN: 6 digits, wraps after 999999', async () => {
    await sql`SELECT setval('req_outbound_seqn', 999998)`.execute(db);
    expect([await nextSeqn(db), await nextSeqn(db)]).toEqual([999999, 1]);
  });
});

describe('COUTMSGS', () => {
  it('SENT only after the insert; the row parses back to the request', async () => {
    const { request } = await rqrd('SLST');
    clock.advance(1500);
    const [res] = await sendPending(deps());
    expect(res).toMatchObject({ id: request.id, outcome: 'sent' });
    const [row] = await outboxRows();
    expect(row).toMatchObject({
      ROUTINGID: 'MSGXRQRD',
      COUTMSGS_TRUEFALS_GROUP: 0,
      COUTMSGS_FINAL_GROUP_IND: 0,
      COUTMSGS_ACK_REQD: 0,
      COUTMSGS_ACK_RESEND_TIMES: 0,
      COUTMSGS_ENCRYPT: 0,
      COUTMSGS_ERROR: 0,
      COUTMSGS_DATE_SENT: null,
    });
    const [inserted] = (await outbox.query<RowDataPacket[]>("SELECT DATE_FORMAT(COUTMSGS_DATE_INSERTED, '%Y-%m-%d %H:%i:%s') AS t FROM coutmsgs"))[0];
    expect(inserted.t).toBe('2026-11-30 20:00:01'); // local (Asia/Shanghai) wall clock
    const env = decodeEnvelope(row.COUTMSGS_CLOB_MSG);
    expect([env.sndr, env.seqn, env.dttm, env.type, env.styp]).toEqual(['MSGX', String(request.seqn), '20261130200000', 'RQRD', 'SLST']);
    expect(child(payload(env)[0], 'RTYP')?.text).toBe('SLST');
    const after = (await getRequest(db, request.id))!;
    expect([after.state, after.coutmsgsId, after.sentAt?.toISOString()]).toEqual(['SENT', Number(row.COUTMSGS_ID), '2026-11-30T12:00:01.500Z']);
  });

  it('RQFD row: ROUTINGID of RQFD, STDB/STDE of the requested day', async () => {
    await rqfd('2026-12-01');
    await sendPending(deps());
    const [row] = await outboxRows();
    expect(row.ROUTINGID).toBe('MSGXRQFD');
    const env = decodeEnvelope(row.COUTMSGS_CLOB_MSG);
    const body = payload(env)[0];
    expect([env.type, env.styp, child(body, 'STDB')?.text, child(body, 'STDE')?.text]).toEqual(['RQFD', 'NONE', '01DEC260000', '01DEC262359']);
  });

  it('crash between the insert and SENT → reconciled on the next run, not sent twice', async () => {
    const { request } = await rqrd('SLST');
    // the crashed run: attempt recorded, row inserted, SENT never written
    await markAttempted(db, request.id, clock.now());
    const written = await insertOutboxRow(outbox, request, '2026-11-30 20:00:00', 5000);
    clock.advance(60_000);
    const [res] = await sendPending(deps());
    expect(res).toEqual({ id: request.id, outcome: 'reconciled', coutmsgsId: written });
    expect(await outboxRows()).toHaveLength(1);
    expect(await state(request.id)).toBe('SENT');
  });

  it('an attempt that never reached COUTMSGS is sent on the next run', async () => {
    const { request } = await rqrd('SLST');
    await markAttempted(db, request.id, clock.now());
    clock.advance(60_000);
    expect((await sendPending(deps()))[0]).toMatchObject({ outcome: 'sent' });
    expect(await outboxRows()).toHaveLength(1);
  });

  it('an unreachable outbox leaves the request PENDING with the outcome unknown', async () => {
    const { request } = await rqrd('SLST');
    const dead = await testOutbox();
    await dead.end();
    const [res] = await sendPending({ ...deps(), outbox: dead });
    expect(res).toMatchObject({ id: request.id, outcome: 'unknown' });
    expect(await state(request.id)).toBe('PENDING');
    expect((await sendPending(deps()))[0]).toMatchObject({ outcome: 'sent' }); // reconcile found nothing → inserted once
    expect(await outboxRows()).toHaveLength(1);
  });

  it('the request task creates and sends; a graphile-worker payload works the same', async () => {
    const r = await runRequestTask(deps(), { type: 'RQFD', operationDay: 'tomorrow' });
    expect(r.results).toEqual([{ id: r.createdId, outcome: 'sent', coutmsgsId: expect.any(Number) }]);
    expect((await getRequest(db, r.createdId!))!.operationDay).toBe('2026-12-01');
  });

  it('POST /requests → 202 {id, state} and the request job queued; 400 on bad shapes', async () => {
    const app = Fastify();
    await app.register(requestRoutes, { db, ...requestSettings(config), clock });
    const post = (body: unknown) => app.inject({ method: 'POST', url: '/requests', payload: body as object });
    const ok = await post({ type: 'RQRD', rtype: 'SLST' });
    expect(ok.statusCode).toBe(202);
    expect(ok.json()).toMatchObject({ id: expect.any(Number), state: 'PENDING' });
    const jobs = await sql<{ n: number }>`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE task_identifier = 'request'`.execute(db);
    expect(jobs.rows[0].n).toBe(1);
    expect((await post({ type: 'RQFD', operationDay: '2026-12-01' })).statusCode).toBe(202);
    for (const bad of [{ type: 'RQRD' }, { type: 'RQFD', operationDay: 'tomorrow' }, { type: 'X' }]) {
      const r = await post(bad);
      expect([r.statusCode, r.json().error]).toEqual([400, 'bad-request']);
    }
    await app.close();
  });
});

describe('one request job = one request', () => {
  const silent = new Logger(() => () => {});
  /** The outbox as seen by a worker whose first INSERT commits but whose answer is lost. */
  const answerLostOnce = (): Pool => {
    let lose = true;
    return new Proxy(outbox, {
      get(target, key) {
        if (key !== 'query') return Reflect.get(target, key);
        return async (...args: Parameters<Pool['query']>) => {
          const r = await (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
          const text = typeof args[0] === 'string' ? args[0] : (args[0] as { sql: string }).sql;
          if (lose && /^\s*INSERT/i.test(text)) {
            lose = false;
            throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
          }
          return r;
        };
      },
    });
  };
  /** runOnce resolves before graphile-worker records the job's failure or completion (neither is
   * awaited by its worker), so wait until no job is still locked before reading the queue. */
  const runWorkerOnce = async (taskList: ReturnType<typeof requestTasks>) => {
    await runOnce({ connectionString: TEST_PG_URL, taskList, logger: silent, noHandleSignals: true, concurrency: 1 });
    await waitFor(
      'the job run recorded',
      async () => (await sql<{ n: number }>`SELECT count(*)::int AS n FROM graphile_worker.jobs WHERE locked_by IS NOT NULL`.execute(db)).rows[0].n === 0,
      10_000,
      20,
    );
  };

  it("the crontab's RQFD: first insert committed but its answer lost; the job runs twice (the retry after midnight) → one request, one COUTMSGS row, the scheduled day", async () => {
    const taskList = requestTasks({ db, outbox: answerLostOnce(), ...requestSettings(config), clock });
    // what graphile-worker's crontab enqueues at 23:59:58 local: the payload plus _cron.ts
    clock.set('2026-11-30T15:59:58Z');
    await quickAddJob({ connectionString: TEST_PG_URL }, 'request', { type: 'RQFD', operationDay: 'tomorrow', _cron: { ts: '2026-11-30T15:59:58.000Z', backfilled: false } });
    await runWorkerOnce(taskList); // attempt 1: the insert commits, its answer is lost → the job fails
    const failed = await sql<{ attempts: number; last_error: string }>`SELECT attempts, last_error FROM graphile_worker.jobs WHERE task_identifier = 'request'`.execute(db);
    expect(failed.rows).toEqual([{ attempts: 1, last_error: expect.stringContaining('COUTMSGS insert not confirmed') }]);
    expect(await outboxRows()).toHaveLength(1);
    // the retry comes due after midnight local
    clock.set('2026-11-30T16:00:01Z'); // graphile-worker's first retry is due ~3 s later
    await sql`UPDATE graphile_worker._private_jobs SET run_at = now()`.execute(db);
    await runWorkerOnce(taskList); // attempt 2: finds its own request and reconciles it
    expect((await sql<{ n: number }>`SELECT count(*)::int AS n FROM graphile_worker.jobs`.execute(db)).rows[0].n).toBe(0);
    const rows = await outboxRows();
    expect(rows).toHaveLength(1);
    const requests = await sql<{ id: number; state: string; day: string; coutmsgs_id: number }>`SELECT id, state, operation_day::text AS day, coutmsgs_id::int FROM req_track`.execute(db);
    expect(requests.rows).toEqual([{ id: expect.any(Number), state: 'SENT', day: '2026-12-01', coutmsgs_id: Number(rows[0].COUTMSGS_ID) }]);
  });

  it('a retried RQRD job reconciles its own request (first insert committed, answer lost) → one request, one COUTMSGS row', async () => {
    const taskList = requestTasks({ db, outbox: answerLostOnce(), ...requestSettings(config), clock });
    await quickAddJob({ connectionString: TEST_PG_URL }, 'request', { type: 'RQRD', rtype: 'SLST' });
    await runWorkerOnce(taskList);
    await sql`UPDATE graphile_worker._private_jobs SET run_at = now()`.execute(db);
    clock.advance(60_000);
    await runWorkerOnce(taskList);
    expect(await outboxRows()).toHaveLength(1);
    const requests = await sql<{ state: string }>`SELECT state FROM req_track`.execute(db);
    expect(requests.rows).toEqual([{ state: 'SENT' }]);
  });
});

describe('answers', () => {
  const apply = (xml: string) => applyMessage(db, { xml, msgId: ++msgId, now: clock.now(), config });
  const eror = (styp: string, text: string) =>
    `<MSG><META><SNDR>AODB</SNDR><SEQN>7</SEQN><DTTM>20261130200500</DTTM><TYPE>EROR</TYPE>${styp ? `<STYP>${styp}</STYP>` : ''}</META><EROR>${text}</EROR></MSG>`;

  it('a reference RESP completes the open RQRD of its TYPE only; it is always applied', async () => {
    const { request } = await rqrd('SLST');
    await sendPending(deps());
    expect(await apply(refXml('GLST', 'RESP', ['<GLST><GCOD>1</GCOD></GLST>']))).toEqual({ outcome: 'applied' });
    expect(await state(request.id)).toBe('SENT');
    expect(await apply(refXml('SLST', 'DNLD', ['<SLST><SCOD>1</SCOD></SLST>']))).toEqual({ outcome: 'applied' });
    expect(await state(request.id)).toBe('SENT'); // a DNLD is no answer to an RQRD
    expect(await apply(refXml('SLST', 'RESP', []))).toEqual({ outcome: 'applied' });
    const done = (await getRequest(db, request.id))!;
    expect([done.state, done.closedByMsgId]).toEqual(['DONE', msgId]);
  });

  it('SCHD RESP guard: requested day applies and closes; other day no-open-request; after close late-response', async () => {
    const { request } = await rqfd('2026-12-01');
    await sendPending(deps());
    const guard = (styp: 'DNLD' | 'RESP', operationDay: string | null) => db.transaction().execute((tx) => scheduleResponseGuard(tx, { styp, operationDay, msgId: ++msgId, now: clock.now() }));
    expect(await guard('RESP', '2026-12-02')).toEqual({ apply: false, reason: 'no-open-request' });
    expect(await state(request.id)).toBe('SENT');
    expect(await guard('RESP', '2026-12-01')).toEqual({ apply: true, operationDay: '2026-12-01' });
    expect(await state(request.id)).toBe('DONE');
    expect(await guard('RESP', '2026-12-01')).toEqual({ apply: false, reason: 'late-response' });
    expect(await guard('RESP', null)).toEqual({ apply: false, reason: 'no-open-request' });
    expect(await guard('DNLD', '2026-12-01')).toEqual({ apply: true, operationDay: '2026-12-01' });
  });

  it('an empty SCHD RESP (no day) answers the open RQFD and takes its day; a DNLD completes only its own day', async () => {
    const { request } = await rqfd('2026-12-05');
    await sendPending(deps());
    const guard = (styp: 'DNLD' | 'RESP', operationDay: string | null) => db.transaction().execute((tx) => scheduleResponseGuard(tx, { styp, operationDay, msgId: ++msgId, now: clock.now() }));
    expect(await guard('DNLD', '2026-12-04')).toEqual({ apply: true, operationDay: '2026-12-04' });
    expect(await state(request.id)).toBe('SENT');
    expect(await guard('RESP', null)).toEqual({ apply: true, operationDay: '2026-12-05' });
    expect(await state(request.id)).toBe('DONE');
    const next = await rqfd('2026-12-06');
    await sendPending(deps());
    expect(await guard('DNLD', '2026-12-06')).toEqual({ apply: true, operationDay: '2026-12-06' });
    expect(await state(next.request.id)).toBe('DONE');
  });

  it('EROR fails the named open request (alert counter); without an open request it is skipped', async () => {
    const failedBefore = async () => (await metrics.requestsFailed.get()).values.reduce((s, v) => s + v.value, 0);
    const before = await failedBefore();
    const r1 = await rqrd('SLST');
    const f1 = await rqfd('2026-12-01');
    await sendPending(deps());
    // the handler names the count; the pump counts it once the business transaction committed
    const rqfdFailed = await apply(eror('RQFD', 'no schedule for that day'));
    expect(rqfdFailed).toEqual({ outcome: 'applied', counts: { requestsFailed: [{ kind: 'RQFD' }] } });
    expect(await failedBefore()).toBe(before);
    countAfterCommit(rqfdFailed.outcome === 'applied' ? rqfdFailed.counts : undefined);
    const failed = (await getRequest(db, f1.request.id))!;
    expect([failed.state, failed.errorText, failed.closedByMsgId]).toEqual(['FAILED', 'no schedule for that day', msgId]);
    expect(await state(r1.request.id)).toBe('SENT');
    const rqrdFailed = await apply(eror('', 'unknown request')); // the most recent open one
    expect(rqrdFailed).toEqual({ outcome: 'applied', counts: { requestsFailed: [{ kind: 'RQRD' }] } });
    countAfterCommit(rqrdFailed.outcome === 'applied' ? rqrdFailed.counts : undefined);
    expect(await state(r1.request.id)).toBe('FAILED');
    expect(await failedBefore()).toBe(before + 2);
    expect(await apply(eror('RQRD', 'again'))).toEqual({ outcome: 'skipped', reason: 'no-open-request' });
  });

  it('EROR naming the requested TYPE fails the RQRD', async () => {
    const r = await rqrd('GLST');
    await rqfd('2026-12-01');
    await sendPending(deps());
    await apply(eror('GLST', '<CODE>42</CODE>'));
    expect([await state(r.request.id)]).toEqual(['FAILED']);
    expect((await getRequest(db, r.request.id))!.errorText).toBe('<EROR><CODE>42</CODE></EROR>');
  });
});
