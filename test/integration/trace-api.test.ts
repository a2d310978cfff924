// Issue 12 over real HTTP (the api process): the message trace, the flight timeline (live,
// deleted, archived), counts per state and reason, the paged list and the last-hour charts, from
// hand-written records of the kind the pump writes (test/support/trace-fixtures.ts).
import { Ajv, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageTrace } from '../../lib/api/message-trace.ts';
import { messageTraceSchema } from '../../lib/api/trace-schemas.ts';
import { deadInbox, openServices, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { writeTraceFixture, type TraceFixture } from '../support/trace-fixtures.ts';

let s: TestServices;
let api: Proc;
let fx: TraceFixture;
// Every answer of these routes is also checked against the api's own OpenAPI document (the
// fixture's traces and timelines are richer than the one of test/integration/openapi.test.ts:
// attempts, DEAD, tombstones, event-only versions, archived flights).
const ajv = new Ajv({ strict: false, allErrors: true });
formats.default(ajv);
const TEMPLATES = ['/ops/messages/{id}', '/flights/{flid}/timeline', '/ops/states', '/ops/list', '/ops/last-hour'];
let doc: { paths: Record<string, { get: { responses: Record<string, { content?: Record<string, { schema: object }> }> } }> };
const validators = new Map<string, ValidateFunction>();
let validated = 0;
function checkAgainstDocument(path: string, status: number, body: unknown) {
  const template = TEMPLATES.find((t) => new RegExp(`^${t.replace(/\{[^}]+\}/g, '[^/?]+')}(\\?|$)`).test(path));
  if (!template) return;
  const key = `${template} ${status}`;
  const schema = doc.paths[template]?.get.responses[String(status)]?.content?.['application/json']?.schema;
  expect(schema, `${key} is documented`).toBeDefined();
  const v = validators.get(key) ?? ajv.compile(schema!);
  validators.set(key, v);
  expect(v(body), `${path} ${status}: ${ajv.errorsText(v.errors)}`).toBe(true);
  validated++;
}
const get = async (path: string, token: string | null = 'test-token') => {
  const r = await fetch(`http://127.0.0.1:${api.port}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const body = (await r.json()) as any;
  checkAgainstDocument(path, r.status, body);
  return { status: r.status, body };
};

describe('message trace, flight timeline and console reads over HTTP', () => {
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
    fx = await writeTraceFixture(s);
    api = startWorker('api');
    await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${api.port}/healthz`)).ok);
    doc = await (await fetch(`http://127.0.0.1:${api.port}/openapi.json`)).json();
  });
  afterAll(async () => {
    await stopAll(api ? [api] : []);
    await s?.close();
    expect(validated).toBeGreaterThan(0); // the document matched the paths (30 answers in a full run)
  });

  it('every new route wants the bearer token and validates its parameters', async () => {
    for (const p of [`/ops/messages/${fx.stand}`, '/flights/16/timeline', '/ops/states', '/ops/list?state=DEAD', '/ops/last-hour']) {
      expect((await get(p, null)).status, p).toBe(401);
      expect((await get(p, 'wrong')).status, p).toBe(401);
    }
    expect((await get('/ops/messages/abc')).status).toBe(400);
    expect((await get('/flights/CA1234/timeline')).status).toBe(400);
    expect((await get('/ops/list?state=BROKEN')).status).toBe(400);
    expect((await get('/ops/list?state=DEAD&limit=0')).status).toBe(400);
    expect((await get('/ops/messages/999999')).body).toEqual({ error: 'not-found', reason: 'no message 999999 in the inbox or in PROC_STATE' });
    expect((await get('/flights/4242/timeline')).status).toBe(404);
  });

  it('the trace of a message: inbox row, identity, attempts, state, flights with before -> after, events with offsets, backfill', async () => {
    const { status, body: t } = await get(`/ops/messages/${fx.stand}`);
    expect(status).toBe(200);
    expect(t.inbox).toMatchObject({ present: true, received: '2026-12-01T08:30:00+08:00', processed: null, type: 'FLOP', subtype: 'STND' });
    expect(t.identity).toBe(`AODB|${fx.stand}|FLOP/STND`);
    expect(t.state).toMatchObject({ state: 'SUCCEEDED', kind: 'FLOP/STND', attempts: 2, enqueuedAt: '2026-12-01T08:35:00+08:00', terminalAt: '2026-12-01T08:36:00+08:00' });
    expect(t.attempts).toEqual([
      { at: '2026-12-01T08:35:00+08:00', errorClass: 'INTERNAL', detail: 'TypeError: boom', nextState: 'FAILED' },
      { at: '2026-12-01T08:36:00+08:00', errorClass: 'INTERNAL', detail: 'TypeError: boom again', nextState: 'FAILED' },
    ]);
    expect(t.flights.map((f: any) => [f.flid, f.stateVersion, f.op, f.cause])).toEqual([
      ['16', 2, 'UPDATE', 'MESSAGE'],
      ['17', 2, 'UPDATE', 'MAFL'],
    ]);
    expect(t.flights[0].changes).toEqual([{ key: 'STND', before: '504', after: '21' }]);
    expect(t.flights[1].changes).toEqual([{ key: 'MAFL', before: [], after: [{ FLID: '18', FLNO: 'CA101' }] }]);
    expect(t.events.map((e: any) => [e.topic, e.flid, e.stateVersion, e.state, e.partition, e.offset])).toEqual([
      ['msgx.flight.msg', '16', 2, 'SENT', 2, '41'],
      ['msgx.flight.msg', '17', 2, 'PENDING', null, null],
      ['msgx.flight.schd', '17', 2, 'PENDING', null, null],
    ]);
    expect(t.backfill).toMatchObject({ status: 'OWED' });

    const c = (await get(`/ops/messages/${fx.create}`)).body;
    expect(c.inbox.processed).toBe('2026-12-01T08:32:00+08:00');
    expect(c.backfill).toMatchObject({ status: 'WRITTEN', at: '2026-12-01T08:32:00+08:00' });
    expect(c.flights.map((f: any) => `${f.flid}v${f.stateVersion} ${f.op}/${f.cause}`)).toEqual(['16v1 CREATE/MESSAGE', '99v1 CREATE/MESSAGE', '99v2 DELETE/SNAPSHOT_DELETE']);
  });

  it('with the inbox unreachable the trace still answers from Postgres and says so', async () => {
    const inbox = deadInbox();
    try {
      const t = await messageTrace({ db: s.db, inbox, timeZone: 'Asia/Shanghai', topics: { msg: 'm', schd: 's' }, ioTimeoutMs: 500 }, fx.stand);
      expect(t.found).toBe(true);
      expect(t.inbox).toMatchObject({ present: null, error: expect.stringMatching(/^inbox unavailable: /) });
      const v = ajv.compile(messageTraceSchema);
      expect(v(JSON.parse(JSON.stringify(t))), ajv.errorsText(v.errors)).toBe(true);
      expect(t.flights).toHaveLength(2);
    } finally {
      await inbox.end().catch(() => {});
    }
  });

  it('the FDEL trace shows the delete and its tombstone event', async () => {
    const t = (await get(`/ops/messages/${fx.fdel}`)).body;
    expect(t.flights).toMatchObject([{ flid: '16', stateVersion: 3, op: 'DELETE', changes: [{ key: 'STATE', before: 'ACTIVE', after: 'DELETED' }] }]);
    expect(t.events).toMatchObject([{ target: 'msg', flid: '16', stateVersion: 3, tombstone: true, state: 'SENT', partition: 2, offset: '42' }]);
  });

  it('a DEAD message traces its reason and its attempt; a message only in the inbox is found too', async () => {
    const t = (await get(`/ops/messages/${fx.protocol}`)).body;
    expect(t.state).toMatchObject({ state: 'DEAD', reason: 'PROTOCOL: GATE: GTYP="TOO" is not one of D, I' });
    expect(t.attempts).toMatchObject([{ errorClass: 'PROTOCOL', nextState: 'DEAD' }]);
    expect(t.flights).toEqual([]);
    await s.db.deleteFrom('proc_state').where('msg_id', '=', fx.skipped).execute();
    const only = (await get(`/ops/messages/${fx.skipped}`)).body;
    expect(only).toMatchObject({ found: true, state: null, inbox: { present: true, type: 'ZZZZ' } });
    await s.db
      .insertInto('proc_state')
      .values({ msg_id: fx.skipped, state: 'SKIPPED', reason: 'unsupported', kind: 'ZZZZ/UPD', enqueued_at: new Date(), updated_at: new Date() } as never)
      .execute();
  });

  it('the timeline of a deleted flight: every version in order with its message and fields', async () => {
    const t = (await get('/flights/16/timeline')).body;
    expect(t).toMatchObject({ flid: '16', status: 'DELETED', current: { stateVersion: 3, lastMsgId: fx.fdel }, archived: [] });
    expect(t.versions.map((v: any) => [v.stateVersion, v.op, v.message.id, v.message.kind, v.source])).toEqual([
      [1, 'CREATE', fx.create, 'SCHD/DNLD', 'change'],
      [2, 'UPDATE', fx.stand, 'FLOP/STND', 'change'],
      [3, 'DELETE', fx.fdel, 'FLOP/FDEL', 'change'],
    ]);
    expect(t.versions[1]).toMatchObject({
      at: '2026-12-01T08:35:00+08:00',
      changes: [{ key: 'STND', before: '504', after: '21' }],
      message: { received: '2026-12-01T08:30:00+08:00', state: 'SUCCEEDED' },
    });
    // leading zeros name the same flight
    expect((await get('/flights/0016/timeline')).body.flid).toBe('16');
  });

  it('a version whose change record is gone still shows from its event (keys only); a cascade names its cause', async () => {
    const t = (await get('/flights/17/timeline')).body;
    expect(t.status).toBe('ACTIVE');
    expect(t.versions).toMatchObject([
      { stateVersion: 1, op: 'UPSERT', source: 'event', changedKeys: ['FLNO', 'MAID'], changes: [], message: { id: fx.create, kind: 'SCHD/DNLD' } },
      { stateVersion: 2, op: 'UPDATE', cause: 'MAFL', source: 'change', changedKeys: ['MAFL'] },
    ]);
  });

  it('an archived (purged) flight answers from the history store, snapshot delete included', async () => {
    const t = (await get('/flights/99/timeline')).body;
    expect(t).toMatchObject({ status: 'ARCHIVED', current: null, archived: [{ stateVersion: 2, flightState: 'DELETED', purgeRule: 'DELETED', archivedAt: '2026-12-01T09:00:00+08:00' }] });
    expect(t.versions.map((v: any) => `${v.stateVersion} ${v.op} ${v.cause}`)).toEqual(['1 CREATE MESSAGE', '2 DELETE SNAPSHOT_DELETE']);
  });

  it('counts per state and reason class, each a paged list (DEAD never mixed with SKIPPED)', async () => {
    const c = (await get('/ops/states')).body;
    expect(c.timeZone).toBe('Asia/Shanghai');
    const dead = c.states.find((x: any) => x.state === 'DEAD');
    expect(dead).toEqual({
      state: 'DEAD',
      count: 2,
      reasons: [
        { reason: 'EXHAUSTED(INTERNAL)', count: 1 },
        { reason: 'PROTOCOL', count: 1 },
      ],
    });
    expect(c.states.find((x: any) => x.state === 'SKIPPED')).toEqual({ state: 'SKIPPED', count: 1, reasons: [{ reason: 'unsupported', count: 1 }] });

    const l = (await get('/ops/list?state=DEAD&reason=PROTOCOL')).body;
    expect(l.messages.map((m: any) => m.msgId)).toEqual([fx.protocol]);
    expect(l.nextBefore).toBeNull();
    const p1 = (await get('/ops/list?state=DEAD&limit=1')).body;
    expect(p1.messages.map((m: any) => m.msgId)).toEqual([fx.exhausted]);
    expect(p1.nextBefore).toBe(fx.exhausted);
    const p2 = (await get(`/ops/list?state=DEAD&limit=1&before=${p1.nextBefore}`)).body;
    expect(p2.messages.map((m: any) => m.msgId)).toEqual([fx.protocol]);
    expect(p2.nextBefore).toBeNull();
  });

  it('the last hour per minute comes from Postgres: 60 minutes, backlog, outcomes, latency, dispatch pending', async () => {
    // two messages terminal within the last hour, one still open, one outbox event pending
    const now = Date.now();
    await s.db
      .updateTable('proc_state')
      .set({ terminal_at: new Date(now - 90_000), updated_at: new Date(now - 90_000), enqueued_at: new Date(now - 120_000) })
      .where('msg_id', 'in', [fx.protocol, fx.exhausted])
      .execute();
    await s.db
      .insertInto('proc_state')
      .values({ msg_id: 900_001, state: 'PENDING', enqueued_at: new Date(now - 30 * 60_000), updated_at: new Date(now - 30 * 60_000) } as never)
      .execute();
    const h = (await get('/ops/last-hour')).body;
    expect(h.minutes).toHaveLength(60);
    expect(h.minutes[59]).toMatch(/\+08:00$/);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    expect(sum(h.applied.DEAD)).toBe(2);
    expect(h.backlog[59]).toBe(1);
    expect(h.backlog[0]).toBe(0); // the open message arrived 30 minutes ago
    expect(h.latencySeconds.max.filter((x: number | null) => x !== null).length).toBeGreaterThan(0);
    expect(h.dispatchPending[59]).toBe(2); // flight 17's msg and schd rows
    await s.db.deleteFrom('proc_state').where('msg_id', '=', 900_001).execute();
  });

  it('a reason class with a newline (cut from a stored reason) is a filter that works; NUL is refused', async () => {
    await s.db
      .insertInto('proc_state')
      .values({ msg_id: 900_002, state: 'SKIPPED', reason: 'odd\nclass: detail', enqueued_at: new Date(), updated_at: new Date() } as never)
      .execute();
    try {
      const skipped = (await get('/ops/states')).body.states.find((x: any) => x.state === 'SKIPPED');
      expect(skipped.reasons).toContainEqual({ reason: 'odd\nclass', count: 1 });
      const l = await get(`/ops/list?state=SKIPPED&reason=${encodeURIComponent('odd\nclass')}`);
      expect(l.status, JSON.stringify(l.body)).toBe(200);
      expect(l.body.messages.map((m: any) => m.msgId)).toEqual([900_002]);
      expect((await get(`/ops/list?state=SKIPPED&reason=odd%00class`)).status).toBe(400);
    } finally {
      await s.db.deleteFrom('proc_state').where('msg_id', '=', 900_002).execute();
    }
  });
});
