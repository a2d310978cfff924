// The pump against real Postgres, MariaDB and Redis: FIFO, failure classes, the three-step success path.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { asQueryDb } from '../../../lib/db/kysely.ts';
import { ManualClock } from '../../../lib/core/clock.ts';
import { HandlerRegistry, type Mirror } from '../../../lib/domain/handlers.ts';
import { intakeRound } from '../../../lib/pipeline/intake.ts';
import { tick, drain, inlineDecoding, type PumpDeps, pumpSettings, withSqlPorts } from '../../../lib/pipeline/pump/loop.ts';
import { refreshHeadGauges } from '../../../lib/pipeline/gauges.ts';
import { metrics } from '../../../lib/runtime/metrics.ts';
import { testConfig } from '../../support/env.ts';
import { deadInbox, deadRedis, openServices, procRows, putInbox, resetPipeline, silentLog, sisMessage, type TestServices } from '../../support/services.ts';
import { slices } from '../../../lib/core/config.ts';

let s: TestServices;
const clock = new ManualClock('2026-12-01T00:00:00Z');
const config = testConfig({ 'msgx.pipeline.backoff': '1s,5s,30s,2m', 'msgx.pipeline.infra-alert-after': '2m' });

/** A business handler for tests: records its effect idempotently in test_effects; can be told to fail. */
let failNext: Error[] = [];
const registry = new HandlerRegistry().register('TEST', '*', async (ctx) => {
  const f = failNext.shift();
  if (f) throw f;
  await sql`insert into test_effects (msg_id, applied) values (${ctx.msgId}, 1)
            on conflict (msg_id) do update set applied = test_effects.applied`.execute(asQueryDb(ctx.tx));
  return { outcome: 'applied', mirror: [`T${ctx.msgId}`] };
});
const redisMirror = (): Mirror => ({ sync: async (ids) => void (await s.redis.set(`msgx:test:${ids[0]}`, 'ok')) });

function deps(over: Partial<Omit<PumpDeps, 'ports'>> = {}): PumpDeps {
  return withSqlPorts({ session: s.session, terminalDb: s.db, inbox: s.inbox, registry, mirror: redisMirror(), clock, ...pumpSettings(config), log: silentLog, decoder: inlineDecoding, ...over });
}
async function enqueueAll() {
  await intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
}
const state = async (id: number) => (await procRows(s.db)).find((r) => r.msg_id === id)!;

beforeAll(async () => {
  s = await openServices();
  await sql`create table if not exists test_effects (msg_id bigint primary key, applied int not null)`.execute(s.db);
});
afterAll(async () => s.close());
beforeEach(async () => {
  await resetPipeline(s);
  await sql`truncate test_effects`.execute(s.db);
  failNext = [];
  clock.set('2026-12-01T00:00:00Z');
});

describe('pump', () => {
  it('applies messages in inbox order and marks SUCCEEDED with a backfill intent', async () => {
    const a = await putInbox(s.inbox, sisMessage());
    const b = await putInbox(s.inbox, sisMessage());
    await enqueueAll();
    expect(await tick(deps())).toEqual({ kind: 'processed', msgId: a, state: 'SUCCEEDED' });
    expect(await tick(deps())).toEqual({ kind: 'processed', msgId: b, state: 'SUCCEEDED' });
    expect(await tick(deps())).toEqual({ kind: 'idle' });
    const rows = await procRows(s.db);
    expect(rows.map((r) => [r.state, r.kind, r.backfill_next_at !== null, r.terminal_at !== null])).toEqual([
      ['SUCCEEDED', 'TEST/UPD', true, true],
      ['SUCCEEDED', 'TEST/UPD', true, true],
    ]);
    expect(await s.redis.get(`msgx:test:T${a}`)).toBe('ok');
  });

  it('a FAILED head blocks later messages until NEXT_ATTEMPT_AT', async () => {
    const a = await putInbox(s.inbox, sisMessage());
    const b = await putInbox(s.inbox, sisMessage());
    await enqueueAll();
    failNext = [new Error('boom')];
    expect(await tick(deps())).toMatchObject({ msgId: a, state: 'FAILED' });
    const r = await tick(deps());
    expect(r).toMatchObject({ kind: 'wait', msgId: a });
    expect((await state(b)).state).toBe('PENDING');
    clock.advance(999);
    expect(await tick(deps())).toMatchObject({ kind: 'wait', msgId: a });
    clock.advance(1);
    expect(await tick(deps())).toMatchObject({ msgId: a, state: 'SUCCEEDED' });
    expect(await tick(deps())).toMatchObject({ msgId: b, state: 'SUCCEEDED' });
    expect((await state(a)).attempts).toBe(1);
  });

  it('a handler error that keeps failing exhausts to DEAD(EXHAUSTED) with the backfill intent in the same statement', async () => {
    const a = await putInbox(s.inbox, sisMessage());
    await enqueueAll();
    failNext = Array.from({ length: 5 }, () => new TypeError('handler bug'));
    for (let i = 0; i < 4; i++) {
      expect(await tick(deps())).toMatchObject({ state: 'FAILED' });
      clock.advance(10 * 60_000);
    }
    expect(await tick(deps())).toMatchObject({ state: 'DEAD' });
    const row = await state(a);
    expect(row.reason).toBe('EXHAUSTED(INTERNAL): TypeError: handler bug');
    expect(row.attempts).toBe(5);
    expect(row.backfill_next_at).not.toBeNull();
    expect(row.terminal_at).toEqual(row.backfill_next_at);
  });

  it('INFRA failures longer than the whole ladder hold the head as FAILED(INFRA), never DEAD, and raise head_blocked; the head resumes as soon as the service answers', async () => {
    const a = await putInbox(s.inbox, sisMessage());
    await enqueueAll();
    const down = deadInbox();
    let waits = 0;
    try {
      // while held, the pump probes the inbox every second (a wait of at most 1 s) and retries on the ladder
      for (let i = 0; i < 400 && (await state(a)).failures_in_row <= 4; i++) {
        const r = await tick(deps({ inbox: down }));
        if (r.kind === 'wait') {
          waits++;
          expect(r.until.getTime() - clock.now().getTime()).toBeLessThanOrEqual(1000);
          clock.set(r.until);
          continue;
        }
        expect(r).toMatchObject({ msgId: a, state: 'FAILED' });
      }
    } finally {
      await down.end().catch(() => {});
    }
    const row = await state(a);
    expect(row.state).toBe('FAILED');
    expect(row.reason).toMatch(/^INFRA: inbox read failed/);
    expect(row.error_service).toBe('mariadb'); // the probe's target is data, not read back from the reason
    expect(row.attempts).toBe(0);
    expect(row.failures_in_row).toBeGreaterThan(4);
    expect(waits).toBeGreaterThan(10); // the ladder's 30 s and 2 m steps were waited out in probes of 1 s
    // head gauges come from their own refresh (not the pump's loop)
    await refreshHeadGauges(s.db, clock, slices(config).failures);
    expect((await metrics.headBlocked.get()).values[0].value).toBe(1);
    expect((await metrics.backlogMessages.get()).values[0].value).toBe(1);
    // the service is back: the next tick applies it at once, NEXT_ATTEMPT_AT (up to 2 min away) notwithstanding
    expect((await state(a)).next_attempt_at!.getTime()).toBeGreaterThan(clock.now().getTime());
    expect(await tick(deps())).toMatchObject({ msgId: a, state: 'SUCCEEDED' });
    await refreshHeadGauges(s.db, clock, slices(config).failures);
    expect((await metrics.headBlocked.get()).values[0].value).toBe(0);
    expect((await metrics.backlogMessages.get()).values[0].value).toBe(0);
  });

  it('a duplicate identity is SKIPPED(duplicate-of:<id>)', async () => {
    const a = await putInbox(s.inbox, sisMessage({ seqn: 4242 }));
    const b = await putInbox(s.inbox, sisMessage({ seqn: 4242 }));
    const c = await putInbox(s.inbox, sisMessage({ seqn: 4242, dttm: '20261202083000' })); // another day: not a duplicate
    await enqueueAll();
    await drain(deps(), 10_000);
    expect((await state(a)).state).toBe('SUCCEEDED');
    expect(await state(b)).toMatchObject({ state: 'SKIPPED', reason: `duplicate-of:${a}` });
    expect((await state(c)).state).toBe('SUCCEEDED');
  });

  it('identity is bound inside the business transaction: a duplicate writes nothing; skipped, dead and unsupported messages keep their binding', async () => {
    const { protocol } = await import('../../../lib/core/errors.ts');
    const reg = new HandlerRegistry().register('TEST', '*', async (ctx) => {
      if (ctx.env.styp === 'SKIP') return { outcome: 'skipped', reason: 'test-skip' };
      if (ctx.env.styp === 'BAD') throw protocol('bad test message');
      await sql`insert into test_effects (msg_id, applied) values (${ctx.msgId}, 1)`.execute(asQueryDb(ctx.tx));
      return { outcome: 'applied', mirror: [`T${ctx.msgId}`] };
    });
    const pairs = [
      { type: 'TEST', styp: 'UPD', seqn: 5001 },
      { type: 'TEST', styp: 'SKIP', seqn: 5002 },
      { type: 'TEST', styp: 'BAD', seqn: 5003 },
      { type: 'ZZZZ', styp: 'UPD', seqn: 5004 },
    ];
    const ids: [number, number][] = [];
    for (const p of pairs) ids.push([await putInbox(s.inbox, sisMessage(p)), await putInbox(s.inbox, sisMessage(p))]);
    await enqueueAll();
    await drain(deps({ registry: reg }), 10_000);
    const [ok, skip, bad, unsupported] = ids;
    expect(await state(ok[0])).toMatchObject({ state: 'SUCCEEDED', identity_key: expect.stringContaining('|TEST|UPD|5001') });
    expect(await state(skip[0])).toMatchObject({ state: 'SKIPPED', reason: 'test-skip', identity_key: expect.stringContaining('|TEST|SKIP|5002') });
    expect(await state(bad[0])).toMatchObject({ state: 'DEAD', reason: 'PROTOCOL: bad test message', identity_key: expect.stringContaining('|TEST|BAD|5003') });
    expect(await state(unsupported[0])).toMatchObject({ state: 'SKIPPED', reason: 'unsupported', identity_key: expect.stringContaining('|ZZZZ|UPD|5004') });
    for (const [first, dup] of ids) {
      expect(await state(dup)).toMatchObject({ state: 'SKIPPED', reason: `duplicate-of:${first}`, identity_key: null });
      expect((await state(dup)).backfill_next_at).not.toBeNull();
    }
    // the duplicate's business transaction was rolled back before the handler ran
    expect((await sql<{ msg_id: number }>`select msg_id from test_effects order by msg_id`.execute(s.db)).rows.map((r) => Number(r.msg_id))).toEqual([ok[0]]);
  });

  it('raw row deleted → DEAD(MALFORMED: raw-missing); not XML and entity bombs → DEAD(MALFORMED); the next message proceeds', async () => {
    const gone = await putInbox(s.inbox, sisMessage());
    const notXml = await putInbox(s.inbox, 'this is not xml');
    const bomb = await putInbox(s.inbox, '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><MSG>&lol2;</MSG>');
    const xxe = await putInbox(s.inbox, '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><MSG>&e;</MSG>');
    const noMeta = await putInbox(s.inbox, '<MSG><FLOP/></MSG>');
    const badSeqn = await putInbox(s.inbox, sisMessage().replace(/<SEQN>\d+/, '<SEQN>12a'));
    const good = await putInbox(s.inbox, sisMessage());
    await enqueueAll();
    await s.inbox.query('DELETE FROM cminmsgs WHERE CMINMSGS_ID = ?', [gone]);
    await drain(deps(), 10_000);
    expect(await state(gone)).toMatchObject({ state: 'DEAD', reason: 'MALFORMED: raw-missing' });
    expect((await state(notXml)).reason).toMatch(/^MALFORMED: not well-formed XML/);
    expect((await state(bomb)).reason).toBe('MALFORMED: DOCTYPE/ENTITY declarations are not accepted');
    expect((await state(xxe)).reason).toBe('MALFORMED: DOCTYPE/ENTITY declarations are not accepted');
    expect((await state(noMeta)).reason).toBe('MALFORMED: no META element');
    expect((await state(badSeqn)).reason).toBe('PROTOCOL: META/SEQN="12a" is not an integer');
    expect((await state(good)).state).toBe('SUCCEEDED');
  });

  it('a kind with no handler is SKIPPED(unsupported), kept on record and owed a backfill', async () => {
    const a = await putInbox(s.inbox, sisMessage({ type: 'ZZZZ', styp: 'UPD' }));
    await enqueueAll();
    await tick(deps());
    expect(await state(a)).toMatchObject({ state: 'SKIPPED', reason: 'unsupported', kind: 'ZZZZ/UPD' });
    expect((await state(a)).backfill_next_at).not.toBeNull();
  });

  it('Redis down between the business commit and the terminal commit: held at the head, re-applied, SUCCEEDED once', async () => {
    const a = await putInbox(s.inbox, sisMessage());
    const b = await putInbox(s.inbox, sisMessage());
    await enqueueAll();
    const down = deadRedis();
    try {
      const r = await tick(deps({ mirror: { sync: async (ids) => void (await down.set(`msgx:test:${ids[0]}`, 'ok')) } }));
      expect(r).toMatchObject({ msgId: a, state: 'FAILED' });
    } finally {
      down.disconnect();
    }
    const row = await state(a);
    expect(row.reason).toMatch(/^INFRA: mirror step \(Redis\) failed after the business commit/);
    expect(row.error_service).toBe('redis');
    expect(row.terminal_at).toBeNull();
    // the business change is committed, the message is not finished; b must wait
    expect((await sql<{ n: number }>`select count(*)::int n from test_effects where msg_id = ${a}`.execute(s.db)).rows[0].n).toBe(1);
    expect((await state(b)).state).toBe('PENDING');
    clock.advance(60_000);
    expect(await tick(deps())).toMatchObject({ msgId: a, state: 'SUCCEEDED' });
    expect(await s.redis.get(`msgx:test:T${a}`)).toBe('ok');
    expect((await sql<{ applied: number }>`select applied from test_effects where msg_id = ${a}`.execute(s.db)).rows).toEqual([{ applied: 1 }]);
    expect(await tick(deps())).toMatchObject({ msgId: b, state: 'SUCCEEDED' });
  });

  it('a handler protocol error is DEAD(PROTOCOL) and its writes are rolled back', async () => {
    const { protocol } = await import('../../../lib/core/errors.ts');
    const reg = new HandlerRegistry().register('TEST', '*', async (ctx) => {
      await sql`insert into test_effects values (${ctx.msgId}, 1)`.execute(asQueryDb(ctx.tx));
      throw protocol('RECS="3" but 2 records');
    });
    const a = await putInbox(s.inbox, sisMessage());
    await enqueueAll();
    await tick(deps({ registry: reg }));
    expect(await state(a)).toMatchObject({ state: 'DEAD', reason: 'PROTOCOL: RECS="3" but 2 records' });
    expect((await sql`select * from test_effects`.execute(s.db)).rows).toEqual([]);
  });
});
