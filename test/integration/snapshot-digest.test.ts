// The snapshot digest through the pump (lib/flight/digest.ts): a snapshot that says again what the
// previous one said skips the merge and write of its unchanged flights, and ends exactly as the
// merge path ends. Each case runs three times from the same start — once as it is, once with every
// stored digest dropped before the second snapshot (the merge path), and once with the second
// snapshot decoded with the decode hints read right after the first one, whatever happened between
// (records left undecoded that the business step must decode after all) — and all must leave the
// same flights, events, ledger and Redis.
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildMirror, buildRegistry } from '../../lib/app/composition.ts';
import { ManualClock } from '../../lib/core/clock.ts';
import { slices } from '../../lib/core/config.ts';
import type { DecodeHints } from '../../lib/domain/handlers.ts';
import { decodeMessage, HINTED_BODY } from '../../lib/pipeline/decoding.ts';
import { HINT_DAYS } from '../../lib/sql/digest.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { pumpSettings, tick, type PumpDeps, withSqlPorts } from '../../lib/pipeline/pump/loop.ts';
import { testConfig } from '../support/env.ts';
import { openServices, putInbox, resetDomain, resetPipeline, silentLog, type TestServices } from '../support/services.ts';
import { flop, rec, schd } from './flight-support.ts';

let s: TestServices;
const config = testConfig();
const clock = new ManualClock('2026-12-01T00:00:00Z');
const registry = buildRegistry();

/** Decoding on this thread with the hints given (`hints`: these instead of the pump's; `seen`: what the pump gave). */
let hints: DecodeHints | undefined;
const seen: (DecodeHints | undefined)[] = [];
const settings = { airport: slices(config).airport, includeDayBoundary: pumpSettings(config).pump.includeDayBoundary };
const decoder = {
  decode: async (bodies: string[], given?: DecodeHints) => {
    seen.push(given);
    return bodies.map((b) => decodeMessage(registry, settings, b, hints ?? given));
  },
};

function deps(): PumpDeps {
  return withSqlPorts({
    session: s.session,
    terminalDb: s.db,
    inbox: s.inbox,
    registry,
    mirror: buildMirror({ db: s.db, redis: s.redis, airport: slices(config).airport }),
    clock,
    ...pumpSettings(config),
    log: silentLog,
    decoder,
  });
}

/** Put messages in the inbox and apply them one by one, as the pump does. */
async function pump(...bodies: string[]): Promise<void> {
  for (const b of bodies) await putInbox(s.inbox, b);
  await intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
  for (const _ of bodies) {
    clock.advance(60_000);
    expect(await tick(deps())).toMatchObject({ kind: 'processed', state: 'SUCCEEDED' });
  }
}

// flight 3 is a shared flight of master 1 (MAFL of 1; mirror scope of the masters)
const FIRST = [rec('1', 9), rec('2', 9, '<STND>S1</STND>'), rec('3', 9, '<MAID>1</MAID>'), rec('4', 9)];
const snapshot = (records = FIRST) => schd('DNLD', records);

/** Everything the second snapshot may touch, as it ends. */
async function outcome() {
  const flights = await sql`select flid, state, state_version, operation_day::text, last_msg_id, stnd, maid, mafl from flight_schd order by flid`.execute(s.db);
  const events = await sql<{ target: string; flid: string; state_version: number; op: string | null; changed: unknown }>`
    select target, flid, state_version, payload->>'OP' as op, payload->'CHANGED' as changed from msg_event order by event_id`.execute(s.db);
  const ledger =
    await sql`select operation_day::text, version, outcome, written, unchanged, deleted, (select version from schd_gen g where g.operation_day = l.operation_day) as gen from schd_snap_log l order by msg_id`.execute(
      s.db,
    );
  const keys = (await s.redis.keys('msgx:flight:*')).sort();
  const redis = await Promise.all(keys.map(async (k) => [k, JSON.parse((await s.redis.get(k))!)]));
  return { flights: flights.rows, events: events.rows, ledger: ledger.rows, redis };
}

/** What happens between the two snapshots, and what the second one carries. */
interface Case {
  name: string;
  between: () => Promise<void>;
  second?: string[];
  /** FLIDs the second snapshot gives a msg event. */
  changed: string[];
}

const cases: Case[] = [
  { name: 'nothing', between: async () => {}, changed: [] },
  { name: 'a FLOP changed flight 2', between: () => pump(flop('STND', '2', '<STND>S9</STND>')), changed: ['2'] },
  { name: 'an FDEL deleted flight 4', between: () => pump(flop('FDEL', '4', '')), changed: ['4'] },
  {
    name: 'flight 4 was changed outside the pump (an operator tool, a restore to another state): its version moved on',
    between: async () => void (await sql`update flight_schd set stnd = 'X', state_version = state_version + 1 where flid = '4'`.execute(s.db)),
    changed: ['4'],
  },
  {
    name: 'flight 2 was purged (its floor kept, its row and digest gone)',
    between: async () => {
      await sql`insert into flight_version_floor (flid, state_version, purged_at) select flid, state_version + 1, now() from flight_schd where flid = '2'`.execute(s.db);
      await sql`delete from flight_schd where flid = '2'`.execute(s.db);
    },
    changed: ['2'],
  },
  { name: 'Redis lost flight 1 (the mirror brings it back)', between: async () => void (await s.redis.del('msgx:flight:1')), changed: [] },
  { name: 'the second snapshot changes flight 2', between: async () => {}, second: [rec('1', 9), rec('2', 9, '<STND>S2</STND>'), rec('3', 9, '<MAID>1</MAID>'), rec('4', 9)], changed: ['2'] },
  { name: 'the second snapshot leaves out flight 3 (deleted; master 1 re-derived)', between: async () => {}, second: [rec('1', 9), rec('2', 9, '<STND>S1</STND>'), rec('4', 9)], changed: ['3', '1'] },
];

async function run(c: Case, mode: 'digests' | 'merge' | 'stale hints') {
  await resetPipeline(s);
  await resetDomain(s);
  clock.set('2026-12-01T00:00:00Z');
  hints = undefined;
  await pump(snapshot());
  if (mode === 'stale hints') {
    hints = await registry.decodeHints(s.db);
    expect(hints.knownRecords?.size).toBe(FIRST.length);
  }
  await c.between();
  const before = (await sql<{ n: number }>`select count(*)::int as n from msg_event where target = 'msg'`.execute(s.db)).rows[0].n;
  if (mode === 'merge') await sql`delete from flight_snap_digest`.execute(s.db);
  await pump(snapshot(c.second));
  hints = undefined;
  const changed = await sql<{ flid: string }>`select flid from msg_event where target = 'msg' order by event_id offset ${before}`.execute(s.db);
  // every flight the second snapshot left ACTIVE has its digest at its current version
  const outdated = await sql`select d.flid from flight_snap_digest d join flight_schd f using (flid) where f.state = 'ACTIVE' and d.state_version <> f.state_version`.execute(s.db);
  expect(outdated.rows, mode).toEqual([]);
  return { ...(await outcome()), changed: changed.rows.map((r) => r.flid) };
}

beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => s.close());
beforeEach(() => clock.set('2026-12-01T00:00:00Z'));

describe('snapshot digest: the same content again', () => {
  it.each(cases)('$name: ends as the merge path ends', async (c) => {
    const skipping = await run(c, 'digests');
    const merging = await run(c, 'merge');
    const stale = await run(c, 'stale hints');
    expect(skipping.changed).toEqual(c.changed);
    expect(skipping).toEqual(merging);
    expect(stale).toEqual(merging);
  });

  it('a large snapshot is decoded with the hints the pump reads: its unchanged records are not decoded, and it ends as the merge path ends', async () => {
    // a comment makes the message large (HINTED_BODY) without changing what it says
    const large = (records = FIRST) => snapshot(records).replace('</MSG>', `<!--${'x'.repeat(HINTED_BODY)}--></MSG>`);
    await resetPipeline(s);
    await resetDomain(s);
    seen.length = 0;
    await pump(large());
    const first = await outcome();
    await pump(large());
    expect(seen.map((h) => h?.knownRecords?.size)).toEqual([0, FIRST.length]);
    const again = decodeMessage(registry, settings, large(), seen[1]);
    if (!again.ok || again.entry !== 'batch') throw new Error('not decoded');
    const cmd = again.cmd as { records: { patch?: unknown; raw?: string }[] };
    expect(cmd.records.map((r) => [r.patch === undefined, typeof r.raw])).toEqual(FIRST.map(() => [true, 'string']));
    const after = await outcome();
    expect(after.flights).toEqual(first.flights);
    expect(after.events).toEqual(first.events);
    expect(after.redis).toEqual(first.redis);
    expect((await sql`select written, unchanged from schd_snap_log order by msg_id`.execute(s.db)).rows).toEqual([
      { written: 4, unchanged: 0 },
      { written: 0, unchanged: 4 },
    ]);
  });

  it('an unchanged flight is not written again: its row keeps the message that last changed it', async () => {
    await resetPipeline(s);
    await resetDomain(s);
    await pump(snapshot());
    const first = await sql`select flid, state_version, last_msg_id, updated_at from flight_schd order by flid`.execute(s.db);
    expect((await sql<{ n: number }>`select count(*)::int as n from flight_snap_digest`.execute(s.db)).rows[0].n).toBe(FIRST.length);
    await pump(snapshot());
    expect((await sql`select flid, state_version, last_msg_id, updated_at from flight_schd order by flid`.execute(s.db)).rows).toEqual(first.rows);
    expect((await sql`select written, unchanged from schd_snap_log order by msg_id`.execute(s.db)).rows).toEqual([
      { written: 4, unchanged: 0 },
      { written: 0, unchanged: 4 },
    ]);
  });

  it(`the hints cover the ${HINT_DAYS} latest snapshot days only (in inbox order), not every day Postgres holds, and only digests still at their flight's version`, async () => {
    await resetPipeline(s);
    await resetDomain(s);
    await pump(snapshot()); // 2026-12-01, the latest snapshot day
    // older days, each as a snapshot left them (an earlier message each); one flight of the 29th moved on since
    for (const [i, day] of ['2026-11-30', '2026-11-29', '2026-11-28'].entries()) {
      await sql`insert into flight_schd (flid, state, state_version, operation_day, created_at, updated_at) values (${`9${i}1`}, 'ACTIVE', 2, ${day}::date, now(), now()), (${`9${i}2`}, 'ACTIVE', 3, ${day}::date, now(), now())`.execute(
        s.db,
      );
      await sql`insert into flight_snap_digest (flid, digest, state_version) values (${`9${i}1`}, ${`d${i}1`}, 2), (${`9${i}2`}, ${`d${i}2`}, 2)`.execute(s.db);
      await sql`insert into schd_gen (operation_day, version, last_message_id, updated_at) values (${day}::date, 1, ${-i}, now())`.execute(s.db);
    }
    const known = (await registry.decodeHints(s.db)).knownRecords;
    expect([...(known ?? new Map()).entries()].filter(([d]) => d.startsWith('d')).sort()).toEqual([
      ['d01', { flid: '901', day: '2026-11-30' }],
      ['d11', { flid: '911', day: '2026-11-29' }],
    ]);
    expect(known?.size).toBe(FIRST.length + 2);
  });
});
