// The batch pump (lib/pipeline/pump/): consecutive messages in one business transaction, one
// mirror step and one terminal statement per batch; a message's own failure is its outcome inside
// the batch, a retryable one ends the batch before it; an unexpected error rolls the batch back
// and it is tried again smaller; a crash after the business commit is made terminal, not re-applied.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { asQueryDb } from '../../../lib/db/kysely.ts';
import { ManualClock } from '../../../lib/core/clock.ts';
import { protocol } from '../../../lib/core/errors.ts';
import { HandlerRegistry, type BatchDomain, type Mirror } from '../../../lib/domain/handlers.ts';
import { intakeRound } from '../../../lib/pipeline/intake.ts';
import { drain, inlineDecoding, type PumpDeps, pumpSettings, withSqlPorts } from '../../../lib/pipeline/pump/loop.ts';
import { payload } from '../../../lib/sis/envelope.ts';
import { testConfig } from '../../support/env.ts';
import { openServices, procRows, putInbox, resetPipeline, silentLog, sisMessage, type TestServices } from '../../support/services.ts';
import { slices } from '../../../lib/core/config.ts';

let s: TestServices;
const clock = new ManualClock('2026-12-01T00:00:00Z');
const config = testConfig({ 'msgx.pipeline.backoff': '1s,5s,30s,2m' });

/** Per message: what the transaction handler does (default: apply, recording the effect). */
let plan = new Map<number, 'skip' | 'protocol' | 'internal'>();
const registry = new HandlerRegistry().register('TEST', '*', async (ctx) => {
  const p = plan.get(ctx.msgId);
  await sql`insert into test_effects (msg_id, applied) values (${ctx.msgId}, 1) on conflict (msg_id) do nothing`.execute(asQueryDb(ctx.tx));
  if (p === 'skip') return { outcome: 'skipped', reason: 'test-skip' };
  if (p === 'protocol') throw protocol('bad');
  if (p === 'internal') throw new TypeError('handler bug');
  return { outcome: 'applied', mirror: [`T${ctx.msgId}`] };
});

/** A batch domain whose net write (write) fails with a database error while the batch holds a BOOM message. */
const boomDomain: BatchDomain<{ boom: boolean }> = {
  decode: (env) => ({ boom: payload(env)[0]?.text === 'BOOM' }),
  ownBatch: () => false,
  open: ({ tx }) => {
    const applied: number[] = [];
    let boom = false;
    return {
      preload: async () => {},
      apply: async (m) => {
        applied.push(m.msgId);
        boom ||= m.cmd.boom;
        return { outcome: 'applied', mirror: [`B${m.msgId}`] };
      },
      addressed: async () => [],
      write: async () => {
        if (boom) await sql`select 1 / 0`.execute(asQueryDb(tx)); // division_by_zero: neither the message's fault nor INFRA
        await sql`insert into test_effects (msg_id, applied) select x, 1 from unnest(${applied}::bigint[]) x on conflict (msg_id) do nothing`.execute(asQueryDb(tx));
        return { wake: [] };
      },
    };
  },
};
registry.registerDomain('BOOM', '*', boomDomain);

/** Mirror calls (the FLIDs of each), what proc_state looked like when each was called; can be told to fail. */
let mirrorCalls: { flids: string[]; openApplied: number; terminal: number }[] = [];
let failMirror = false;
/** How long each mirror step takes (a loaded Redis): the tail is still running when the next batch is chosen. */
let mirrorDelayMs = 0;
const mirror = (): Mirror => ({
  sync: async (ids) => {
    if (mirrorDelayMs > 0) await new Promise((r) => setTimeout(r, mirrorDelayMs));
    const r = await sql<{ open_applied: number; terminal: number }>`
      select count(*) filter (where state in ('PENDING', 'FAILED') and applied_state is not null)::int as open_applied,
             count(*) filter (where state in ('SUCCEEDED', 'SKIPPED', 'DEAD'))::int as terminal from proc_state`.execute(s.db);
    mirrorCalls.push({ flids: ids, openApplied: r.rows[0].open_applied, terminal: r.rows[0].terminal });
    if (failMirror) throw new Error('redis down');
  },
});

const deps = (over: Partial<Omit<PumpDeps, 'ports'>> = {}): PumpDeps =>
  withSqlPorts({
    session: s.session,
    terminalDb: s.db,
    inbox: s.inbox,
    registry,
    mirror: mirror(),
    clock,
    ...pumpSettings(config),
    log: silentLog,
    decoder: inlineDecoding,
    ...over,
  });
const enqueueAll = () => intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
const state = async (id: number) => (await procRows(s.db)).find((r) => r.msg_id === id)!;
const effects = async () => (await sql<{ msg_id: number }>`select msg_id from test_effects order by msg_id`.execute(s.db)).rows.map((r) => Number(r.msg_id));
const put = async (n: number, o: { type?: string; body?: (i: number) => string } = {}) => {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await putInbox(s.inbox, sisMessage({ type: o.type, ...(o.body ? { body: o.body(i) } : {}) })));
  return ids;
};

beforeAll(async () => {
  s = await openServices();
  await sql`create table if not exists test_effects (msg_id bigint primary key, applied int not null)`.execute(s.db);
});
afterAll(async () => s.close());
beforeEach(async () => {
  await resetPipeline(s);
  await sql`truncate test_effects, proc_attempt`.execute(s.db);
  plan = new Map();
  mirrorCalls = [];
  failMirror = false;
  mirrorDelayMs = 0;
  clock.set('2026-12-01T00:00:00Z');
});

describe('pump: batches', () => {
  it('a run of messages is one batch: one mirror step for all of them, called before any is terminal; all SUCCEEDED; the lock released', async () => {
    const ids = await put(10);
    await enqueueAll();
    expect(await drain(deps(), 10_000)).toMatchObject({ processed: 10, next: 'idle' });
    for (const id of ids) expect(await state(id)).toMatchObject({ state: 'SUCCEEDED', reason: null, applied_state: 'SUCCEEDED' });
    expect((await procRows(s.db)).every((r) => r.backfill_next_at !== null && r.terminal_at !== null)).toBe(true);
    expect(await effects()).toEqual(ids);
    // INV-10 per batch: the mirror step ran after the business commit (every outcome applied) and before any terminal state
    expect(mirrorCalls).toEqual([{ flids: ids.map((i) => `T${i}`), openApplied: 10, terminal: 0 }]);
    const locks = await sql<{
      n: number;
    }>`select count(*)::int n from pg_locks where locktype = 'advisory' and objid = 7001 and granted and database = (select oid from pg_database where datname = current_database())`.execute(s.db);
    expect(locks.rows[0].n).toBe(0);
  });

  it('msgx.pipeline.apply-batch bounds a batch: 5 messages with K = 2 are three batches, in order', async () => {
    const ids = await put(5);
    await enqueueAll();
    await drain(deps(pumpSettings(testConfig({ 'msgx.pipeline.apply-batch': '2' }))), 10_000);
    expect(mirrorCalls.map((c) => c.flids)).toEqual([[`T${ids[0]}`, `T${ids[1]}`], [`T${ids[2]}`, `T${ids[3]}`], [`T${ids[4]}`]]);
    for (const id of ids) expect((await state(id)).state).toBe('SUCCEEDED');
  });

  it("a message's own failure is its outcome and the batch goes on; a retryable one ends the batch before it", async () => {
    const ids = await put(6);
    plan.set(ids[1], 'skip');
    plan.set(ids[2], 'protocol');
    plan.set(ids[4], 'internal');
    await enqueueAll();
    const r = await drain(deps(), 10_000);
    expect(r.next).toBeInstanceOf(Date); // the FAILED head waits for its next attempt
    expect(await state(ids[0])).toMatchObject({ state: 'SUCCEEDED' });
    expect(await state(ids[1])).toMatchObject({ state: 'SKIPPED', reason: 'test-skip' });
    expect(await state(ids[2])).toMatchObject({ state: 'DEAD', reason: 'PROTOCOL: bad' });
    expect(await state(ids[3])).toMatchObject({ state: 'SUCCEEDED' });
    expect(await state(ids[4])).toMatchObject({ state: 'FAILED', error_class: 'INTERNAL', attempts: 1, identity_key: null, applied_state: null });
    expect(await state(ids[5])).toMatchObject({ state: 'PENDING', identity_key: null, applied_state: null });
    // each failed message took back its own writes (savepoint), and nothing else
    expect(await effects()).toEqual([ids[0], ids[3]]);
    const attempts = await sql<{ msg_id: string; error_class: string; next_state: string }>`select msg_id, error_class, next_state from proc_attempt`.execute(s.db);
    expect(attempts.rows.map((a) => ({ ...a, msg_id: Number(a.msg_id) }))).toEqual([{ msg_id: ids[4], error_class: 'INTERNAL', next_state: 'FAILED' }]);
    // the head is retried on its own schedule, then the rest follows
    plan.delete(ids[4]);
    clock.advance(2_000);
    expect(await drain(deps(), 10_000)).toMatchObject({ processed: 2, next: 'idle' });
    expect(await effects()).toEqual([ids[0], ids[3], ids[4], ids[5]]);
  });

  it('an unexpected database error rolls the batch back; it is retried smaller, so the messages before the bad one commit in order and it alone fails', async () => {
    const ids = await put(8, { type: 'BOOM', body: (i) => `<BOOM>${i === 5 ? 'BOOM' : 'ok'}</BOOM>` });
    await enqueueAll();
    const r = await drain(deps(), 10_000);
    expect(r.next).toBeInstanceOf(Date);
    for (const i of [0, 1, 2, 3, 4]) expect((await state(ids[i])).state).toBe('SUCCEEDED');
    expect(await state(ids[5])).toMatchObject({ state: 'FAILED', error_class: 'INTERNAL' });
    expect((await state(ids[5])).reason).toMatch(/division by zero/);
    for (const i of [6, 7]) expect(await state(ids[i])).toMatchObject({ state: 'PENDING', identity_key: null });
    expect(await effects()).toEqual(ids.slice(0, 5));
  });

  it('the same with a slow mirror step (the batch before still in its tail when the failed message is the head): the drain still returns its retry time', async () => {
    // the FAILED head behind a tail not yet terminal was once cut away with that tail's messages:
    // the drain said 'idle' and the retry waited for the keep-alive (a minute) instead of its backoff
    mirrorDelayMs = 300;
    const ids = await put(8, { type: 'BOOM', body: (i) => `<BOOM>${i === 5 ? 'BOOM' : 'ok'}</BOOM>` });
    await enqueueAll();
    const r = await drain(deps(), 10_000);
    expect(r.next).toBeInstanceOf(Date);
    expect((r.next as Date).getTime()).toBe(clock.now().getTime() + 1_000); // the first backoff step
    for (const i of [0, 1, 2, 3, 4]) expect((await state(ids[i])).state).toBe('SUCCEEDED');
    expect(await state(ids[5])).toMatchObject({ state: 'FAILED', error_class: 'INTERNAL' });
  });

  it('Redis fails after the business commit: every message of the batch keeps its committed outcome, the head is FAILED(INFRA); afterwards they are made terminal, in order', async () => {
    const ids = await put(3);
    plan.set(ids[1], 'skip');
    failMirror = true;
    await enqueueAll();
    await drain(deps(), 10_000);
    expect(await state(ids[0])).toMatchObject({ state: 'FAILED', error_class: 'INFRA', applied_state: 'SUCCEEDED', terminal_at: null });
    expect((await state(ids[0])).reason).toMatch(/^INFRA: mirror step \(Redis\) failed after the business commit/);
    expect(await state(ids[1])).toMatchObject({ state: 'PENDING', applied_state: 'SKIPPED', applied_reason: 'test-skip' });
    expect(await state(ids[2])).toMatchObject({ state: 'PENDING', applied_state: 'SUCCEEDED' });
    expect(await effects()).toEqual([ids[0], ids[2]]);
    failMirror = false;
    clock.advance(60_000);
    mirrorCalls = [];
    expect(await drain(deps(), 10_000)).toMatchObject({ processed: 3, next: 'idle' });
    expect((await procRows(s.db)).map((r) => [r.state, r.reason])).toEqual([
      ['SUCCEEDED', null],
      ['SKIPPED', 'test-skip'],
      ['SUCCEEDED', null],
    ]);
    expect(mirrorCalls).toHaveLength(1);
    expect(mirrorCalls[0].flids).toEqual(expect.arrayContaining([`T${ids[0]}`, `T${ids[2]}`]));
    expect(await effects()).toEqual([ids[0], ids[2]]);
  });

  it("Redis fails in a batch's mirror step while the next batch's business step runs (the tail overlaps it): the next batch rolls back, nothing of it applied; the head is FAILED(INFRA)", async () => {
    const ids = await put(4);
    failMirror = true;
    await enqueueAll();
    const k2 = () => deps(pumpSettings(testConfig({ 'msgx.pipeline.apply-batch': '2' })));
    expect((await drain(k2(), 10_000)).next).toBeInstanceOf(Date);
    expect(await state(ids[0])).toMatchObject({ state: 'FAILED', error_class: 'INFRA', applied_state: 'SUCCEEDED', terminal_at: null });
    expect(await state(ids[1])).toMatchObject({ state: 'PENDING', applied_state: 'SUCCEEDED' });
    // the second batch's business transaction ran (its handler wrote its effects) and rolled back
    for (const i of [2, 3]) expect(await state(ids[i])).toMatchObject({ state: 'PENDING', applied_state: null, identity_key: null });
    expect(await effects()).toEqual([ids[0], ids[1]]);
    expect(mirrorCalls.map((c) => c.flids)).toEqual([[`T${ids[0]}`, `T${ids[1]}`]]);
    failMirror = false;
    clock.advance(60_000);
    mirrorCalls = [];
    expect(await drain(k2(), 10_000)).toMatchObject({ processed: 4, next: 'idle' });
    for (const id of ids) expect((await state(id)).state).toBe('SUCCEEDED');
    expect(await effects()).toEqual(ids);
    // INV-10 per batch: each mirror step saw none of its batch terminal; Redis written in batch order
    expect(mirrorCalls.map((c) => c.flids)).toEqual([
      [`T${ids[0]}`, `T${ids[1]}`],
      [`T${ids[2]}`, `T${ids[3]}`],
    ]);
    // [applied, not terminal; terminal] when each mirror step began: the first batch terminal only after its own mirror step, before the second's
    expect(mirrorCalls.map((c) => [c.openApplied, c.terminal])).toEqual([
      [2, 0],
      [2, 2],
    ]);
  });

  it('a row missing at its turn is DEAD(raw-missing) inside the batch; a large body is read with the others', async () => {
    const ids = await put(5);
    const big = await putInbox(s.inbox, sisMessage({ body: `<TEST><VAL>${'x'.repeat(70_000)}</VAL></TEST>` }));
    await enqueueAll();
    await s.inbox.query('DELETE FROM cminmsgs WHERE CMINMSGS_ID = ?', [ids[2]]);
    await drain(deps(), 10_000);
    expect(await state(ids[2])).toMatchObject({ state: 'DEAD', reason: 'MALFORMED: raw-missing' });
    for (const i of [0, 1, 3, 4]) expect((await state(ids[i])).state).toBe('SUCCEEDED');
    expect((await state(big)).state).toBe('SUCCEEDED');
  });

  it('a replay while the message is in flight is not undone by its failure (the decision uses the committed attempt count)', async () => {
    const [a, b] = await put(2);
    plan.set(b, 'internal');
    await enqueueAll();
    // b as the pump reads it: 4 counted attempts of 5 (one more INTERNAL failure would exhaust it)…
    await sql`update proc_state set attempts = 4 where msg_id = ${b}`.execute(s.db);
    // …and an operator resets it while the batch is between its business commit and b's failure record
    const replaying: Mirror = { sync: async () => void (await sql`update proc_state set attempts = 0 where msg_id = ${b}`.execute(s.db)) };
    await drain(deps({ mirror: replaying }), 10_000);
    expect(await state(a)).toMatchObject({ state: 'SUCCEEDED' });
    expect(await state(b)).toMatchObject({ state: 'FAILED', attempts: 1, error_class: 'INTERNAL' });
  });

  it('a lock wait past lock_timeout (as the pump process sets it) ends the batch before that message as FAILED(INFRA), not an invisible hang', async () => {
    const [a, b] = await put(2);
    await enqueueAll();
    const blocker = await s.pool.connect();
    try {
      await blocker.query('begin');
      await blocker.query('insert into test_effects (msg_id, applied) values ($1, 0)', [b]); // b's key, not committed: b's insert waits for it
      await sql`set lock_timeout = '300ms'`.execute(s.session);
      const t0 = Date.now();
      await drain(deps(), 10_000);
      expect(Date.now() - t0).toBeLessThan(5_000);
    } finally {
      await blocker.query('rollback');
      blocker.release();
      await sql`reset lock_timeout`.execute(s.session);
    }
    expect(await state(a)).toMatchObject({ state: 'SUCCEEDED' });
    expect(await state(b)).toMatchObject({ state: 'FAILED', error_class: 'INFRA', attempts: 0 });
    expect((await state(b)).reason).toMatch(/lock timeout/);
    // a lock timeout is not probed (Postgres answers all along): the head waits for its backoff, then goes through
    expect((await drain(deps(), 10_000)).next).toBeInstanceOf(Date);
    clock.advance(2_000);
    await drain(deps(), 10_000);
    expect(await state(b)).toMatchObject({ state: 'SUCCEEDED' });
  });
});
