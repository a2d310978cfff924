// The real processes (workers/*.ts) against the real services: single-active duties, crash
// recovery with kill -9, /metrics and /healthz on every process, POST /cminmsgs/send.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openServices, procRows, inboxProcessed, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../../support/services.ts';
import { hasLog, metricValue, startWorker, stopAll, waitFor, type Proc } from '../../support/processes.ts';

let s: TestServices;
let procs: Proc[] = [];
const start = (name: string, env: Record<string, string> = {}) => {
  const p = startWorker(name, env);
  procs.push(p);
  return p;
};

beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => s.close());
beforeEach(async () => {
  await resetPipeline(s);
  // flights and Redis keys left by earlier files would look like a Postgres restore to the
  // processes' restore watch (Redis newer than Postgres) and hold the pump
  await resetDomain(s);
});
afterEach(async () => {
  await stopAll(procs);
  procs = [];
});

async function allTerminalAndBackfilled(n: number) {
  const rows = await procRows(s.db);
  const inbox = await inboxProcessed(s.inbox);
  return rows.length === n && rows.every((r) => r.state !== 'PENDING' && r.state !== 'FAILED' && r.backfill_at) && [...inbox.values()].every((v) => v !== null);
}

describe('processes', () => {
  it('two pumps and two intakes started together: one of each works, the other stands by and takes over after kill -9', async () => {
    const pumps = [start('pump'), start('pump')];
    const intakes = [start('intake'), start('intake')];
    start('backfill');
    await waitFor('one active pump', () => pumps.filter((p) => hasLog(p, 'leader lock taken')).length === 1 && pumps.some((p) => hasLog(p, 'standing by')));
    await waitFor('one active intake', () => intakes.filter((p) => hasLog(p, 'leader lock taken')).length === 1 && intakes.some((p) => hasLog(p, 'standing by')));
    for (let i = 0; i < 20; i++) await putInbox(s.inbox, sisMessage());
    await waitFor('20 messages done', () => allTerminalAndBackfilled(20));
    const active = pumps.find((p) => hasLog(p, 'leader lock taken'))!;
    const standby = pumps.find((p) => p !== active)!;
    active.child.kill('SIGKILL');
    await waitFor('stand-by pump takes over', () => hasLog(standby, 'leader lock taken'), 20_000);
    for (let i = 0; i < 5; i++) await putInbox(s.inbox, sisMessage());
    await waitFor('5 more done by the new leader', () => allTerminalAndBackfilled(25));
  });

  it('kill -9 of the pump, again and again mid-run: afterwards nothing skipped, nothing out of order, everything backfilled', async () => {
    start('intake');
    start('backfill');
    const N = 400;
    for (let i = 0; i < N; i++) await putInbox(s.inbox, sisMessage({ type: i % 3 === 0 ? 'JUNK' : 'TEST' }));
    let pump = start('pump');
    for (let k = 0; k < 4; k++) {
      await new Promise((r) => setTimeout(r, 700 + Math.random() * 800));
      pump.child.kill('SIGKILL');
      await pump.exited;
      pump = start('pump');
    }
    await waitFor(`${N} messages done`, () => allTerminalAndBackfilled(N), 60_000);
    const rows = await procRows(s.db);
    expect(rows.map((r) => r.msg_id)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
    expect(rows.every((r) => r.state === 'SKIPPED' && r.reason === 'unsupported')).toBe(true);
    // FIFO: terminal times never go backwards along the inbox order
    for (let i = 1; i < rows.length; i++) expect(rows[i].terminal_at!.getTime()).toBeGreaterThanOrEqual(rows[i - 1].terminal_at!.getTime());
  });

  it('every process serves /metrics and /healthz; POST /cminmsgs/send validates and inserts', async () => {
    const ps = ['intake', 'pump', 'backfill', 'api'].map((n) => start(n));
    const api = ps[3];
    for (const p of ps) {
      const h = await waitFor(`${p.name} healthz`, async () => (await fetch(`http://127.0.0.1:${p.port}/healthz`)).ok);
      expect(h).toBe(true);
      expect(await metricValue(p, 'msgx_build_info')).toBe(1);
    }
    const post = (body: string | Uint8Array, headers: Record<string, string> = {}) =>
      fetch(`http://127.0.0.1:${api.port}/cminmsgs/send`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-token', 'content-type': 'application/xml', ...headers },
        body: body as BodyInit,
      });
    const ok = await post(sisMessage({ type: 'TEST', styp: 'UPD' }));
    expect(ok.status).toBe(201);
    const { id } = (await ok.json()) as { id: number };
    const [row] = (await s.inbox.query<import('mysql2').RowDataPacket[]>('SELECT * FROM cminmsgs WHERE CMINMSGS_ID = ?', [id]))[0];
    expect(row).toMatchObject({ CMINMSGS_STATUS: 'VALID', CMINMSGS_SUBSYSTEM_TYPE: 'TEST', CMINMSGS_SUBSYSTEM_SUBTYPE: 'UPD' });
    expect(row.CMINMSGS_DATE_RECEIVED).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect((await post(sisMessage(), { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await post('<MSG><META>')).status).toBe(400);
    expect(await (await post('<MSG><FLOP/></MSG>')).json()).toMatchObject({ error: 'malformed', reason: 'no META element' });
    expect((await post(new Uint8Array([0x3c, 0x4d, 0xff, 0xfe]))).status).toBe(400);
    expect((await post(sisMessage(), { 'content-type': 'application/json' })).status).toBe(415);
    await waitFor('injected message processed and backfilled', () => allTerminalAndBackfilled(1));
  });

  it('rejects an oversize body with 413 and answers 403 on a read-only instance', async () => {
    const small = start('api', { MSGX_INBOX_MAX_MESSAGE_BYTES: '200' });
    await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${small.port}/healthz`)).ok);
    const big = await fetch(`http://127.0.0.1:${small.port}/cminmsgs/send`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-token', 'content-type': 'application/xml' },
      body: sisMessage({ body: `<X>${'a'.repeat(500)}</X>` }),
    });
    expect(big.status).toBe(413);
    const ro = start('api', { MSGX_INBOX_READ_ONLY: 'true' });
    await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${ro.port}/healthz`)).ok);
    const r = await fetch(`http://127.0.0.1:${ro.port}/cminmsgs/send`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-token', 'content-type': 'application/xml' },
      body: sisMessage(),
    });
    expect(r.status).toBe(403);
    const [rows] = await s.inbox.query<import('mysql2').RowDataPacket[]>('SELECT COUNT(*) n FROM cminmsgs');
    expect(Number(rows[0].n)).toBe(0);
  });
});
