// The operator view over real HTTP (the api process): the message trace, the flight timeline (live,
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
import { sql } from 'kysely';
import { markFailed } from '../../lib/requests/track.ts';
import { TEST_TOPICS } from '../support/env.ts';

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
    api = startWorker('api', { MSGX_HTTP_ANONYMOUS_READS: '' }); // reads need the token here
    await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${api.port}/healthz`)).ok);
    doc = await (await fetch(`http://127.0.0.1:${api.port}/openapi.json`, { headers: { authorization: 'Bearer test-token' } })).json();
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
      [TEST_TOPICS.MSGX_KAFKA_MSG_TOPIC, '16', 2, 'SENT', 2, '41'],
      [TEST_TOPICS.MSGX_KAFKA_MSG_TOPIC, '17', 2, 'PENDING', null, null],
      [TEST_TOPICS.MSGX_KAFKA_SCHD_TOPIC, '17', 2, 'PENDING', null, null],
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
      .values({ msg_id: fx.skipped, state: 'SKIPPED', reason: 'unsupported', reason_class: 'UNSUPPORTED', kind: 'ZZZZ/UPD', enqueued_at: new Date(), updated_at: new Date() } as never)
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

  it('GET /ops/messages sends the inbox received time as the true instant (airport wall time converted, not labelled Z)', async () => {
    const m = (await get('/ops/messages?limit=1000')).body.messages.find((x: any) => x.msg_id === fx.stand);
    // the trace shows 2026-12-01T08:30:00+08:00 (Asia/Shanghai): the same instant
    expect(m.received_at).toBe('2026-12-01T00:30:00.000Z');
    expect(new Date(m.received_at).getTime()).toBe(new Date('2026-12-01T08:30:00+08:00').getTime());
  });

  it('after a replay the trace shows one write-back time: the inbox keeps the first outcome (KEPT_EARLIER)', async () => {
    const before = await s.db.selectFrom('proc_state').select(['terminal_at', 'backfill_at']).where('msg_id', '=', fx.create).executeTakeFirstOrThrow();
    // the replayed outcome ended an hour later and its backfill found the row already marked (08:32)
    await s.db
      .updateTable('proc_state')
      .set({ terminal_at: new Date('2026-12-01T01:40:00Z'), backfill_at: new Date('2026-12-01T01:40:05Z') })
      .where('msg_id', '=', fx.create)
      .execute();
    try {
      const t = (await get(`/ops/messages/${fx.create}`)).body;
      expect(t.inbox.processed).toBe('2026-12-01T08:32:00+08:00');
      expect(t.state.terminalAt).toBe('2026-12-01T09:40:00+08:00');
      expect(t.backfill).toMatchObject({ status: 'KEPT_EARLIER', inboxValue: '2026-12-01T08:32:00+08:00', at: '2026-12-01T09:40:05+08:00' });
    } finally {
      await s.db.updateTable('proc_state').set(before).where('msg_id', '=', fx.create).execute();
    }
  });

  it('a held event names the DEAD event it waits behind', async () => {
    const first = (
      await sql<{ event_id: string; state: string; sent_at: Date | null }>`select event_id, state, sent_at from msg_event where flid = '17' and target = 'msg' order by event_id limit 1`.execute(s.db)
    ).rows[0];
    await sql`update msg_event set state = 'DEAD', sent_at = null where event_id = ${first.event_id}`.execute(s.db);
    try {
      const t = (await get(`/ops/messages/${fx.stand}`)).body;
      const held = t.events.find((e: any) => e.target === 'msg' && e.flid === '17');
      expect(held).toMatchObject({ state: 'PENDING', heldBy: Number(first.event_id) });
      expect(t.events.find((e: any) => e.flid === '16').heldBy).toBeNull();
    } finally {
      await sql`update msg_event set state = ${first.state}, sent_at = ${first.sent_at} where event_id = ${first.event_id}`.execute(s.db);
    }
  });

  it('GET /flights/:flid of a flight purged by retention says so in its 404 (not just "no flight")', async () => {
    const r = await get('/flights/99');
    expect(r.status).toBe(404);
    expect(r.body.reason).toMatch(/^flight 99 was purged to history at 2026-12-01T01:00:00.000Z \(rule DELETED: .*msgx\.history\.purge-after.*\); its versions: GET \/flights\/99\/timeline$/);
    expect((await get('/flights/4242')).body.reason).toBe('no flight with FLID 4242');
  });

  it('raw-missing is a reason class of its own, not MALFORMED', async () => {
    await s.db
      .insertInto('proc_state')
      .values({ msg_id: 900_003, state: 'DEAD', reason: 'MALFORMED: raw-missing', reason_class: 'RAW_MISSING', enqueued_at: new Date(), updated_at: new Date(), terminal_at: new Date() } as never)
      .execute();
    try {
      const dead = (await get('/ops/states')).body.states.find((x: any) => x.state === 'DEAD');
      expect(dead.reasons).toContainEqual({ reason: 'raw-missing', count: 1 });
      expect(dead.reasons.find((r: any) => r.reason === 'MALFORMED')).toBeUndefined();
      expect((await get('/ops/list?state=DEAD&reason=raw-missing')).body.messages.map((m: any) => m.msgId)).toEqual([900_003]);
    } finally {
      await s.db.deleteFrom('proc_state').where('msg_id', '=', 900_003).execute();
    }
  });
});

describe('GET /requests/:id and GET /requests?state= over HTTP', () => {
  let s2: TestServices;
  let api2: Proc;
  beforeAll(async () => {
    s2 = await openServices();
    await sql`truncate req_track`.execute(s2.db);
    api2 = startWorker('api', { MSGX_HTTP_ANONYMOUS_READS: '' });
    await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${api2.port}/healthz`)).ok);
  });
  afterAll(async () => {
    await stopAll(api2 ? [api2] : []);
    await s2?.close();
  });
  const get2 = async (path: string, token: string | null = 'test-token') => {
    const r = await fetch(`http://127.0.0.1:${api2.port}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    return { status: r.status, body: (await r.json()) as any };
  };

  it('tells a FAILED request with the AODB error text, an EXPIRED one with what superseded it; filters by state; 404 / 400 / 401', async () => {
    const post = (payload: unknown) =>
      fetch(`http://127.0.0.1:${api2.port}/requests`, { method: 'POST', headers: { authorization: 'Bearer test-token', 'content-type': 'application/json' }, body: JSON.stringify(payload) }).then(
        async (r) => ({ status: r.status, body: (await r.json()) as any }),
      );
    const a = await post({ type: 'RQRD', rtype: 'SLST' });
    expect(a.status).toBe(202);
    const b = await post({ type: 'RQRD', rtype: 'SLST' }); // expires a
    const c = await post({ type: 'RQFD', operationDay: '2026-12-02' });
    await markFailed(s2.db, c.body.id, 4711, 'EROR: no schedule for 2026-12-02', new Date('2026-12-01T10:00:00Z'));
    expect((await get2(`/requests/${a.body.id}`)).body).toMatchObject({ id: a.body.id, state: 'EXPIRED', errorText: 'superseded by a newer RQRD' });
    const failed = (await get2(`/requests/${c.body.id}`)).body;
    expect(failed).toMatchObject({
      state: 'FAILED',
      kind: 'RQFD',
      operationDay: '2026-12-02',
      errorText: 'EROR: no schedule for 2026-12-02',
      closedByMsgId: 4711,
      closedAt: '2026-12-01T10:00:00.000Z',
    });
    expect(failed.createdAt).toMatch(/Z$/);
    expect((await get2('/requests?state=FAILED')).body.requests.map((r: any) => r.id)).toEqual([c.body.id]);
    expect((await get2('/requests')).body.requests.map((r: any) => r.id)).toEqual([c.body.id, b.body.id, a.body.id]);
    expect((await get2('/requests/99999999')).status).toBe(404);
    expect((await get2('/requests?state=LOST')).status).toBe(400);
    expect((await get2('/requests/abc')).status).toBe(400);
    expect((await get2(`/requests/${a.body.id}`, null)).status).toBe(401);
  });
});
