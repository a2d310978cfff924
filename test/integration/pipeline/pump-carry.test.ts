// The drain's carried SUCCEEDED (lib/pipeline/pump.ts): message N's terminal commits inside N+1's
// business transaction, after N's Redis step; every other next step commits it on its own first.
// Also the head and body read-ahead: a late row below the read-ahead, a missing row, a FAILED head.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../../lib/clock.ts';
import { protocol } from '../../../lib/pipeline/errors.ts';
import { HandlerRegistry, type Mirror } from '../../../lib/pipeline/handlers.ts';
import { intakeRound } from '../../../lib/pipeline/intake.ts';
import { drain, type PumpDeps } from '../../../lib/pipeline/pump.ts';
import { testConfig } from '../../support/env.ts';
import { openServices, procRows, putInbox, resetPipeline, silentLog, sisMessage, type TestServices } from '../../support/services.ts';

let s: TestServices;
const clock = new ManualClock('2026-12-01T00:00:00Z');
const config = testConfig({ 'msgx.pipeline.backoff': '1s,5s,30s,2m' });

/** Per message: what the handler does (default: apply, recording the effect). */
let plan = new Map<number, 'skip' | 'protocol' | 'internal'>();
/** Order in which the handler and the mirror saw messages, and the proc_state of the previous message at each handler call. */
let seen: string[] = [];
const registry = new HandlerRegistry().register('TEST', '*', async (ctx) => {
  seen.push(`h${ctx.msgId}`);
  const p = plan.get(ctx.msgId);
  await sql`insert into test_effects (msg_id, applied) values (${ctx.msgId}, 1) on conflict (msg_id) do nothing`.execute(ctx.tx);
  if (p === 'skip') return { outcome: 'skipped', reason: 'test-skip' };
  if (p === 'protocol') throw protocol('bad');
  if (p === 'internal') throw new TypeError('handler bug');
  return { outcome: 'applied', mirror: [`T${ctx.msgId}`] };
});
let failMirror = new Set<number>();
const mirror = (): Mirror => ({
  sync: async (ids) => {
    const id = Number(ids[0].slice(1));
    seen.push(`m${id}`);
    await new Promise((r) => setTimeout(r, 5)); // the next message's transaction runs meanwhile
    if (failMirror.has(id)) throw new Error('redis down');
    await s.redis.set(`msgx:test:${ids[0]}`, 'ok');
  },
});

const deps = (over: Partial<PumpDeps> = {}): PumpDeps => ({ session: s.session, inbox: s.inbox, registry, mirror: mirror(), clock, config, log: silentLog, ...over });
const enqueueAll = () => intakeRound({ db: s.db, inbox: s.inbox, clock, config, log: silentLog });
const state = async (id: number) => (await procRows(s.db)).find((r) => r.msg_id === id)!;
const effects = async () => (await sql<{ msg_id: number }>`select msg_id from test_effects order by msg_id`.execute(s.db)).rows.map((r) => Number(r.msg_id));
const put = async (n: number) => {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await putInbox(s.inbox, sisMessage()));
  return ids;
};

beforeAll(async () => {
  s = await openServices();
  await sql`create table if not exists test_effects (msg_id bigint primary key, applied int not null)`.execute(s.db);
});
afterAll(async () => s.close());
beforeEach(async () => {
  await resetPipeline(s);
  await sql`truncate test_effects`.execute(s.db);
  plan = new Map();
  failMirror = new Set();
  seen = [];
  clock.set('2026-12-01T00:00:00Z');
});

describe('pump: carried SUCCEEDED', () => {
  it('a run of messages: all SUCCEEDED, each with a backfill intent, nothing open, the lock released', async () => {
    const ids = await put(10);
    await enqueueAll();
    expect(await drain(deps(), 10_000)).toMatchObject({ processed: 10, next: 'idle' });
    for (const id of ids) expect(await state(id)).toMatchObject({ state: 'SUCCEEDED', reason: null });
    expect((await procRows(s.db)).every((r) => r.backfill_next_at !== null && r.terminal_at !== null)).toBe(true);
    expect(await effects()).toEqual(ids);
    const locks = await sql<{ n: number }>`select count(*)::int n from pg_locks where locktype = 'advisory' and objid = 7001 and granted and database = (select oid from pg_database where datname = current_database())`.execute(s.db);
    expect(locks.rows[0].n).toBe(0);
  });

  it("N's Redis step ends before N+1's business commit and after N's business commit (INV-10)", async () => {
    const ids = await put(3);
    await enqueueAll();
    await drain(deps(), 10_000);
    // the mirror of N may overlap N+1's handler, but N+1's mirror (after N+1's commit) comes after N's
    const mirrors = seen.filter((x) => x.startsWith('m'));
    expect(mirrors).toEqual(ids.map((i) => `m${i}`));
    expect(seen.indexOf(`m${ids[0]}`)).toBeGreaterThan(seen.indexOf(`h${ids[0]}`));
  });

  it('N+1 skipped, DEAD or FAILED: N is SUCCEEDED on its own first, N+1 ends as it would alone', async () => {
    const ids = await put(4);
    plan.set(ids[1], 'skip');
    plan.set(ids[2], 'protocol');
    plan.set(ids[3], 'internal');
    await enqueueAll();
    await drain(deps(), 10_000);
    expect(await state(ids[0])).toMatchObject({ state: 'SUCCEEDED' });
    expect(await state(ids[1])).toMatchObject({ state: 'SKIPPED', reason: 'test-skip' });
    expect(await state(ids[2])).toMatchObject({ state: 'DEAD', reason: 'PROTOCOL: bad' });
    expect(await state(ids[3])).toMatchObject({ state: 'FAILED', error_class: 'INTERNAL' });
    // the rolled-back transactions took nothing with them but their own writes
    expect(await effects()).toEqual([ids[0]]);
  });

  it("N's Redis step fails while N+1 is applied: N+1's transaction rolls back, N is FAILED(INFRA) and stays the head", async () => {
    const ids = await put(3);
    failMirror.add(ids[0]);
    await enqueueAll();
    const r = await drain(deps(), 10_000);
    expect(r.next).toBeInstanceOf(Date);
    expect(await state(ids[0])).toMatchObject({ state: 'FAILED', error_class: 'INFRA', terminal_at: null });
    expect((await state(ids[0])).reason).toMatch(/^INFRA: redis mirror failed after business commit/);
    expect(await state(ids[1])).toMatchObject({ state: 'PENDING', identity_key: null });
    expect(await state(ids[2])).toMatchObject({ state: 'PENDING' });
    expect(await effects()).toEqual([ids[0]]); // N+1's business change was rolled back
    // Redis is back: N is re-applied (idempotent) and the rest follows in order
    failMirror.clear();
    clock.advance(60_000);
    expect(await drain(deps(), 10_000)).toMatchObject({ processed: 3, next: 'idle' });
    for (const id of ids) expect((await state(id)).state).toBe('SUCCEEDED');
    expect(await effects()).toEqual(ids);
  });

  it('the last message of a run is SUCCEEDED when the drain returns (no successor to carry it)', async () => {
    const [a] = await put(1);
    await enqueueAll();
    expect(await drain(deps(), 10_000)).toMatchObject({ processed: 1, next: 'idle' });
    expect(await state(a)).toMatchObject({ state: 'SUCCEEDED' });
  });
});

describe('pump: read-ahead', () => {
  it('a row missing at its turn is DEAD(raw-missing) even after a read-ahead saw its neighbours; the rest proceeds', async () => {
    const ids = await put(5);
    await enqueueAll();
    await s.inbox.query('DELETE FROM cminmsgs WHERE CMINMSGS_ID = ?', [ids[2]]);
    await drain(deps(), 10_000);
    expect(await state(ids[2])).toMatchObject({ state: 'DEAD', reason: 'MALFORMED: raw-missing' });
    for (const i of [0, 1, 3, 4]) expect((await state(ids[i])).state).toBe('SUCCEEDED');
  });

  it('a body too large for the read-ahead is read on its own', async () => {
    const big = await putInbox(s.inbox, sisMessage({ body: `<TEST><VAL>${'x'.repeat(70_000)}</VAL></TEST>` }));
    const [after] = await put(1);
    await enqueueAll();
    await drain(deps(), 10_000);
    expect((await state(big)).state).toBe('SUCCEEDED');
    expect((await state(after)).state).toBe('SUCCEEDED');
  });
});
