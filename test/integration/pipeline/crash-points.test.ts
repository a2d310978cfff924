// Pump v2 crash recovery with the real pump process killed with SIGKILL at each point of a batch
// (msgx.test.crash-at): after the business commit, in the middle of the mirror step (a snapshot
// whose flights take two Redis pipelines), and just before the terminal statement. A new pump
// then finishes the work. The end state must equal a crash-free run of the same inbox: flights,
// the event sequence, change records, terminal states — and Redis equal to Postgres.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../../lib/core/clock.ts';
import { listFlights } from '../../../lib/flight/read.ts';
import { toJson, type FlightState } from '../../../lib/flight/state.ts';
import { intakeRound } from '../../../lib/pipeline/intake.ts';
import { bigSnapshot } from '../../support/fixtures.ts';
import { testConfig } from '../../support/env.ts';
import { runPipelineUntilSettled } from '../../support/pipeline.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../../support/processes.ts';
import { openServices, putInbox, resetDomain, resetPipeline, silentLog, sisMessage, type TestServices } from '../../support/services.ts';
import { slices } from '../../../lib/core/config.ts';

const TZ = 'Asia/Shanghai';
const config = testConfig();
let s: TestServices;
const procs: Proc[] = [];

/** A snapshot of 1,500 flights (mirror step: two Redis pipelines of 1,000), then FLOPs, an FDEL, a shared flight moved to another master. */
function workload(): string[] {
  let seqn = 900_000;
  const flop = (styp: string, f: number, inner: string) => sisMessage({ type: 'FLOP', styp, seqn: ++seqn, body: `<FLOP><FLID>${f}</FLID><FFID>X</FFID>${inner}</FLOP>` });
  const adft = (inner: string) => sisMessage({ type: 'SCHD', styp: 'ADFT', seqn: ++seqn, body: `<SCHD><RECS>1</RECS><FLTR>${inner}</FLTR></SCHD>` });
  const out = [bigSnapshot(1500, 1, { seqn: ++seqn })];
  out.push(adft('<FLID>2</FLID><MAID>1</MAID>'), adft('<FLID>3</FLID><MAID>1</MAID>'));
  for (let i = 0; i < 60; i++) out.push(flop('STND', 10 + (i % 20), `<STND>S${i}</STND>`));
  out.push(flop('FDEL', 11, '<FDEL></FDEL>'), adft('<FLID>3</FLID><MAID>4</MAID>'), flop('FDEL', 1, '<FDEL></FDEL>'));
  for (let i = 0; i < 20; i++) out.push(flop('REMC', 30 + i, `<REMC>R${i}</REMC>`));
  return out;
}

const CLOCK = new Set(['UPDATED_AT', 'updated_at', 'created_at', 'terminal_at', 'backfill_next_at']);
const strip = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(strip)
    : v && typeof v === 'object' && !(v instanceof Date)
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([k]) => !CLOCK.has(k))
            .map(([k, x]) => [k, strip(x)]),
        )
      : v;

async function snapshotOfStores() {
  const q = async (x: ReturnType<typeof sql<Record<string, unknown>>>) => (await x.execute(s.db)).rows;
  const events = await q(sql`select event_id, target, flid, state_version, payload from msg_event order by event_id`);
  const rank = new Map(events.map((e, i) => [String(e.event_id), i + 1]));
  const flights = (await listFlights(s.db, { limit: 10_000, includeDeleted: true }, TZ)).flights;
  return {
    proc: await q(sql`select msg_id, state, reason, identity_key from proc_state order by msg_id`),
    flights: strip(flights),
    events: strip(
      events.map((e) => ({ ...e, event_id: rank.get(String(e.event_id)), payload: { ...(e.payload as object), EVENT_ID: rank.get(String((e.payload as { EVENT_ID?: unknown }).EVENT_ID)) } })),
    ),
    changes: await q(sql`select flid, state_version, msg_id, op, cause, changes from flight_change order by flid, state_version`),
    active: flights.filter((f) => f.STATE === 'ACTIVE'),
  };
}

async function redisMatchesPostgres(active: FlightState[]) {
  const keys = (await s.redis.keys('msgx:flight:*')).sort();
  expect(keys).toEqual(active.map((f) => `msgx:flight:${f.FLID}`).sort());
  const values = await s.redis.mget(...keys);
  const byKey = new Map(keys.map((k, i) => [k, JSON.parse(values[i]!)]));
  for (const f of active) expect(byKey.get(`msgx:flight:${f.FLID}`)).toEqual(toJson(f));
}

async function fresh() {
  await resetPipeline(s);
  await resetDomain(s);
  for (const xml of workload()) await putInbox(s.inbox, xml);
  await intakeRound({ db: s.db, inbox: s.inbox, clock: new ManualClock(), intake: slices(config).intake, log: silentLog });
}

let reference: Awaited<ReturnType<typeof snapshotOfStores>>;

beforeAll(async () => {
  s = await openServices();
  await fresh();
  await runPipelineUntilSettled(s, config, new ManualClock());
  reference = await snapshotOfStores();
}, 300_000);
afterAll(async () => {
  await stopAll(procs);
  await s?.close();
});

describe('Pump v2: kill -9 at each point of a batch, then a new pump', () => {
  for (const [point, what] of [
    ['pump.after-business-commit:2', 'after the business commit of a FLOP batch (before its mirror step)'],
    ['pump.mid-redis:1', "in the middle of the snapshot's mirror step (1,000 of 1,500 flights written)"],
    ['pump.before-terminal:2', 'after the mirror step, before the terminal statement'],
  ] as const) {
    it(`${what}: nothing lost, nothing applied twice, Redis equal to Postgres`, async () => {
      await fresh();
      const doomed = startWorker('pump', { MSGX_TEST_CRASH_AT: point });
      procs.push(doomed);
      const code = await Promise.race([doomed.exited, new Promise((r) => setTimeout(() => r('timeout'), 60_000))]);
      if (code === 'timeout') console.error(doomed.logs.slice(-15).join('\n'));
      expect(code).toBeNull(); // killed by a signal (SIGKILL), not an exit
      expect(doomed.child.signalCode).toBe('SIGKILL');
      // the crash left committed outcomes that are not terminal
      const open = await sql<{ n: number; applied: number }>`select count(*)::int as n, count(applied_state)::int as applied from proc_state where state in ('PENDING', 'FAILED')`.execute(s.db);
      expect(open.rows[0].n).toBeGreaterThan(0);
      expect(open.rows[0].applied).toBeGreaterThan(0);
      const pump = startWorker('pump');
      procs.push(pump);
      await waitFor(
        'every message terminal',
        async () => (await sql<{ n: number }>`select count(*)::int as n from proc_state where state in ('PENDING', 'FAILED')`.execute(s.db)).rows[0].n === 0,
        60_000,
      );
      await stopAll([pump]);
      const after = await snapshotOfStores();
      expect(after.proc).toEqual(reference.proc);
      expect(after.flights).toEqual(reference.flights);
      expect(after.events).toEqual(reference.events);
      expect(after.changes).toEqual(reference.changes);
      await redisMatchesPostgres(after.active);
    }, 180_000);
  }
});
