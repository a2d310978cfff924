// Pump v2: a message whose mirror step failed after its business commit is finished later by
// rewriting Redis from Postgres for every flight it addresses — changed or not, masters and
// shared flights included — without applying it again. Redis fails for real: the mirror's
// client talks to a port where nothing listens (connection refused), as when Redis is down.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../../lib/core/clock.ts';
import { buildMirror, buildRegistry } from '../../../lib/app/composition.ts';
import { readFlights } from '../../../lib/flight/read.ts';
import { toJson } from '../../../lib/flight/state.ts';
import { intakeRound } from '../../../lib/pipeline/intake.ts';
import { drain, inlineDecoding, type PumpDeps, pumpSettings, withSqlPorts } from '../../../lib/pipeline/pump/loop.ts';
import { testConfig } from '../../support/env.ts';
import { deadRedis, openServices, procRows, putInbox, resetDomain, resetPipeline, silentLog, sisMessage, type TestServices } from '../../support/services.ts';
import { slices } from '../../../lib/core/config.ts';

const TZ = 'Asia/Shanghai';
const config = testConfig();
const clock = new ManualClock('2026-12-01T00:00:00Z');
let s: TestServices;
let seqn = 950_000;

const fltr = (f: number, extra = '') => `<FLTR><FLID>${f}</FLID><FLNO>CA${100 + f}</FLNO><SODT>01DEC260800</SODT><ACFT>320</ACFT>${extra}</FLTR>`;
const schd = (styp: string, recs: string[]) => sisMessage({ type: 'SCHD', styp, seqn: ++seqn, body: `<SCHD><RECS>${recs.length}</RECS>${recs.join('')}</SCHD>` });
const fdel = (f: number) => sisMessage({ type: 'FLOP', styp: 'FDEL', seqn: ++seqn, body: `<FLOP><FLID>${f}</FLID><FFID>X</FFID><FDEL></FDEL></FLOP>` });

function deps(redis = s.redis): PumpDeps {
  return withSqlPorts({
    decoder: inlineDecoding,
    session: s.session,
    terminalDb: s.db,
    inbox: s.inbox,
    registry: buildRegistry(),
    mirror: buildMirror({ db: s.db, redis, airport: slices(config).airport }),
    clock,
    ...pumpSettings(config),
    log: silentLog,
  });
}
async function put(xml: string) {
  const id = await putInbox(s.inbox, xml);
  await intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
  return id;
}
const redisFlight = async (f: number) => {
  const v = await s.redis.get(`msgx:flight:${f}`);
  return v === null ? null : (JSON.parse(v) as Record<string, unknown>);
};
const state = async (id: number) => (await procRows(s.db)).find((r) => r.msg_id === id)!;
const eventCount = async () => (await sql<{ n: number }>`select count(*)::int as n from msg_event`.execute(s.db)).rows[0].n;

/** Apply with Redis down: the business commits, the mirror step fails, the head is held. */
async function applyWithRedisDown(xml: string): Promise<number> {
  const id = await put(xml);
  const down = deadRedis();
  try {
    await drain(deps(down), 10_000);
  } finally {
    down.disconnect();
  }
  expect(await state(id)).toMatchObject({ state: 'FAILED', error_class: 'INFRA', applied_state: 'SUCCEEDED', terminal_at: null });
  expect((await state(id)).reason).toMatch(/^INFRA: mirror step \(Redis\) failed after the business commit/);
  return id;
}

/** Redis is back: the held message is finished (not applied again). */
async function repair(id: number) {
  const events = await eventCount();
  clock.advance(10 * 60_000);
  await drain(deps(), 10_000);
  expect(await state(id)).toMatchObject({ state: 'SUCCEEDED', applied_state: 'SUCCEEDED' });
  expect(await eventCount()).toBe(events); // nothing applied twice
}

/** Every flight in Redis is as Postgres has it (ACTIVE → its JSON, DELETED → no key). */
async function redisEqualsPostgres(flids: number[]) {
  const states = await readFlights(s.db, flids.map(String), TZ);
  for (const f of flids) {
    const st = states.get(String(f))!;
    expect(await redisFlight(f)).toEqual(st.STATE === 'ACTIVE' ? toJson(st) : null);
  }
}

beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => s?.close());
beforeEach(async () => {
  await resetPipeline(s);
  await resetDomain(s);
  clock.set('2026-12-01T00:00:00Z');
  // masters 1 and 4; 2 and 3 shared flights of 1; 5 on its own
  await put(schd('DNLD', [fltr(1), fltr(2, '<MAID>1</MAID>'), fltr(3, '<MAID>1</MAID>'), fltr(4), fltr(5)]));
  await drain(deps(), 10_000);
  expect((await redisFlight(1))?.MAFL).toEqual([
    { FLID: '2', FLNO: 'CA102' },
    { FLID: '3', FLNO: 'CA103' },
  ]);
});

describe('Redis repaired after a failed mirror step', () => {
  it('FDEL: the deleted flight leaves Redis (it stayed ACTIVE there before Pump v2)', async () => {
    const id = await applyWithRedisDown(fdel(5));
    expect((await redisFlight(5))?.STATE).toBe('ACTIVE'); // stale: the delete is committed in Postgres only
    await repair(id);
    expect(await redisFlight(5)).toBeNull();
    await redisEqualsPostgres([1, 2, 3, 4, 5]);
  });

  it('a shared flight moved to another master (MAID change): both masters and the flight are rewritten', async () => {
    const id = await applyWithRedisDown(schd('ADFT', ['<FLTR><FLID>3</FLID><MAID>4</MAID></FLTR>']));
    expect((await redisFlight(1))?.MAFL).toHaveLength(2); // stale
    await repair(id);
    expect((await redisFlight(1))?.MAFL).toEqual([{ FLID: '2', FLNO: 'CA102' }]);
    expect((await redisFlight(4))?.MAFL).toEqual([{ FLID: '3', FLNO: 'CA103' }]);
    expect((await redisFlight(3))?.MAID).toBe('4');
    await redisEqualsPostgres([1, 2, 3, 4, 5]);
  });

  it('FDEL of a master: the cascade-deleted shared flights leave Redis too', async () => {
    const id = await applyWithRedisDown(fdel(1));
    await repair(id);
    expect(await redisFlight(1)).toBeNull();
    expect(await redisFlight(2)).toBeNull();
    expect(await redisFlight(3)).toBeNull();
    await redisEqualsPostgres([1, 2, 3, 4, 5]);
  });

  it('a batch of messages whose mirror step failed: every message finished, Redis equal to Postgres', async () => {
    const ids: number[] = [];
    for (const xml of [fdel(5), schd('ADFT', ['<FLTR><FLID>3</FLID><MAID>4</MAID></FLTR>']), fdel(2)]) ids.push(await putInbox(s.inbox, xml));
    await intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
    const down = deadRedis();
    try {
      await drain(deps(down), 10_000);
    } finally {
      down.disconnect();
    }
    expect((await procRows(s.db)).filter((r) => ids.includes(r.msg_id)).map((r) => [r.state, r.applied_state])).toEqual([
      ['FAILED', 'SUCCEEDED'],
      ['PENDING', 'SUCCEEDED'],
      ['PENDING', 'SUCCEEDED'],
    ]);
    await repair(ids[0]);
    for (const id of ids) expect((await state(id)).state).toBe('SUCCEEDED');
    expect((await redisFlight(1))?.MAFL).toBeUndefined(); // no shared flight left: no MAFL key
    await redisEqualsPostgres([1, 2, 3, 4, 5]);
  });
});
