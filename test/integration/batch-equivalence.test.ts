// Pump v2 equivalence: the same inbox processed with K = 1 (one message per business
// transaction) and K = 500 (msgx.pipeline.apply-batch) ends in identical flight state, the
// identical event sequence (EVENT_IDs by rank, msg and schd interleaved), identical change
// records and identical terminal states. The inbox: the third-party corpus (when ../shared is
// there; renumbered SEQNs) and a generated mixed workload (seeded): snapshots with masters and
// shared flights, FLOPs of many STYPs, FDEL of shared flights and of masters (cascade), ADFT
// creating, reviving and moving shared flights between masters, exact duplicates, FLOPs for
// unknown and deleted flights, bad values (PROTOCOL), broken XML (MALFORMED), unsupported kinds
// and reference data (transaction handlers) between flight messages.
import { CLOCK_KEYS, canonical } from '../support/canonical.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../lib/core/clock.ts';
import { renumberSeqn } from '../../lib/inject/files.ts';
import { listFlights } from '../../lib/flight/read.ts';
import { toJson, type FlightState } from '../../lib/flight/state.ts';
import { corpusMessages, corpusPresent } from '../support/corpus.ts';
import { testConfig } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { openServices, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';

const TZ = 'Asia/Shanghai';
let s: TestServices;

/** Deterministic PRNG (mulberry32). */
function rng(seed: number) {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function workload(): string[] {
  const out: string[] = [];
  let seqn = 600_000;
  const msg = (type: string, styp: string, body: string) => sisMessage({ type, styp, body, seqn: ++seqn });
  const t = (hhmm: string) => `01DEC26${hhmm}`;
  // the corpus first (it has its own SNDR/DTTM; SEQNs renumbered so nothing collides by accident)
  for (const m of corpusMessages()) out.push(renumberSeqn(m.xml, ++seqn));
  const r = rng(20261201);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const MASTERS = [501, 502, 503, 504];
  const flids = Array.from({ length: 60 }, (_, i) => 501 + i);
  const rec = (f: number, extra = '') =>
    `<FLTR><FLID>${f}</FLID><ALCD>CA</ALCD><FLNO>CA${3000 + f}</FLNO><SODT>${t(`${String(6 + (f % 12)).padStart(2, '0')}15`)}</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT><STND>${f % 40}</STND>${
      MASTERS.includes(f) ? '' : f % 5 === 0 ? `<MAID>${MASTERS[f % 4]}</MAID>` : ''
    }${extra}</FLTR>`;
  const snapshot = (fs: number[]) => msg('SCHD', 'DNLD', `<SCHD><RECS>${fs.length}</RECS>${fs.map((f) => rec(f)).join('')}</SCHD>`);
  const flop = (styp: string, f: number, inner: string) => msg('FLOP', styp, `<FLOP><FLID>${f}</FLID><FFID>X</FFID>${inner}</FLOP>`);
  out.push(snapshot(flids));
  const sent: string[] = [];
  for (let i = 0; i < 700; i++) {
    const f = pick(flids);
    const x = r();
    let m: string;
    if (x < 0.3) m = flop('STND', f, `<STND>${Math.floor(r() * 90)}</STND>`);
    else if (x < 0.45) m = flop('ESTT', f, `<ESTT>${t(`${String(7 + Math.floor(r() * 12)).padStart(2, '0')}${String(Math.floor(r() * 60)).padStart(2, '0')}`)}</ESTT>`);
    else if (x < 0.55) m = flop('GTDT', f, `<GTDT GTNO="1"><GATE>G${Math.floor(r() * 30)}</GATE><GTYP>D</GTYP></GTDT>`);
    else if (x < 0.6) m = flop('REMC', f, r() < 0.5 ? '<REMC>gate change</REMC>' : '<REMC></REMC>');
    else if (x < 0.64)
      m = flop('FDEL', r() < 0.3 ? pick(MASTERS) : f, '<FDEL></FDEL>'); // masters cascade
    else if (x < 0.7)
      m = msg('SCHD', 'ADFT', `<SCHD><RECS>1</RECS><FLTR><FLID>${f}</FLID><FLNO>CA${3000 + f}</FLNO><SODT>${t('0930')}</SODT><MAID>${pick(MASTERS)}</MAID></FLTR></SCHD>`); // revive / move to another master
    else if (x < 0.72)
      m = msg('SCHD', 'ADFT', `<SCHD><RECS>1</RECS><FLTR><FLID>${pick(MASTERS)}</FLID><FLNO>CA${3000 + f}</FLNO><SODT>${t('0800')}</SODT></FLTR></SCHD>`); // revive a master
    else if (x < 0.76 && sent.length)
      m = pick(sent); // the exact same message again: SKIPPED(duplicate-of)
    else if (x < 0.78)
      m = flop('STND', 9000 + Math.floor(r() * 5), '<STND>1</STND>'); // SKIPPED(no-flight)
    else if (x < 0.8)
      m = flop('ACFT', f, '<ACFT></ACFT>'); // DEAD(PROTOCOL)
    else if (x < 0.81)
      m = '<MSG><META><SNDR>X</SNDR>'; // DEAD(MALFORMED)
    else if (x < 0.83)
      m = msg('ZZZZ', 'UPD', '<ZZZZ/>'); // SKIPPED(unsupported)
    else if (x < 0.86)
      m = msg('GLST', 'UPD', `<RECS>1</RECS><GLST><GCOD>G${Math.floor(r() * 5)}</GCOD><GTNM>Gate ${i}</GTNM></GLST>`); // a transaction handler
    else if (x < 0.87)
      m = snapshot(flids.filter(() => r() < 0.9)); // a second snapshot: deletions by absence, revivals
    else m = flop('MAXP', f, `<MAXP>${100 + Math.floor(r() * 200)}</MAXP>`);
    sent.push(m);
    out.push(m);
  }
  return out;
}

/** Canonical JSON without clock-valued keys ('at' too: the change records' own time). */
const strip = (v: unknown) => canonical(v, new Set([...CLOCK_KEYS, 'at']));

async function run(k: number) {
  await resetPipeline(s);
  await resetDomain(s);
  const config = testConfig({ 'msgx.pipeline.apply-batch': String(k) });
  for (const xml of workload()) await putInbox(s.inbox, xml);
  await runPipelineUntilSettled(s, config, new ManualClock('2026-12-01T00:00:00Z'), 2000);
  const q = async (x: ReturnType<typeof sql<Record<string, unknown>>>) => (await x.execute(s.db)).rows;
  const events = await q(sql`select event_id, target, flid, state_version, state, payload from msg_event order by event_id`);
  const rank = new Map(events.map((e, i) => [String(e.event_id), i + 1]));
  const redisKeys = (await s.redis.keys('msgx:flight:*')).sort();
  return strip({
    proc: await q(sql`select msg_id, state, reason, kind, identity_key, applied_state, backfill_at is not null as backfilled from proc_state order by msg_id`),
    flights: (await listFlights(s.db, { limit: 10_000, includeDeleted: true }, TZ)).flights,
    events: events.map((e) => ({ ...e, event_id: rank.get(String(e.event_id)), payload: { ...(e.payload as object), EVENT_ID: rank.get(String((e.payload as { EVENT_ID?: unknown }).EVENT_ID)) } })),
    changes: await q(sql`select flid, state_version, msg_id, kind, op, cause, changes from flight_change order by flid, state_version`),
    ledger: await q(sql`select operation_day::text as day, version, last_message_id from schd_gen order by 1`),
    snapLog: await q(sql`select msg_id, styp, operation_day::text as day, version, outcome, recs, written, unchanged, deleted from schd_snap_log order by msg_id, id`),
    refMaster: await q(sql`select rtype, rkey, record, last_msg_id from ref_master order by rtype, rkey`),
    redis: await Promise.all(redisKeys.map(async (key) => [key, JSON.parse((await s.redis.get(key)) ?? 'null')])),
  }) as Record<string, Record<string, unknown>[]>;
}

describe('Pump v2: K = 1 and K = 500 are equivalent', () => {
  let one: Awaited<ReturnType<typeof run>>;
  let many: Awaited<ReturnType<typeof run>>;

  beforeAll(async () => {
    s = await openServices();
    one = await run(1);
    many = await run(500);
  }, 600_000);
  afterAll(async () => s?.close());

  it('the workload is mixed as intended', () => {
    const proc = one.proc as { state: string; reason: string | null }[];
    const by = (p: RegExp) => proc.filter((x) => p.test(`${x.state} ${x.reason ?? ''}`)).length;
    expect(proc.length).toBeGreaterThan(700 + (corpusPresent ? 150 : 0));
    expect(proc.every((p) => ['SUCCEEDED', 'SKIPPED', 'DEAD'].includes(p.state))).toBe(true);
    expect(by(/^SKIPPED duplicate-of:/)).toBeGreaterThan(5);
    expect(by(/^SKIPPED no-flight$/)).toBeGreaterThan(5);
    expect(by(/^SKIPPED no-flight:deleted$/)).toBeGreaterThan(5);
    expect(by(/^DEAD PROTOCOL/)).toBeGreaterThan(5);
    expect(by(/^DEAD MALFORMED/)).toBeGreaterThan(2);
    expect(by(/^SKIPPED unsupported/)).toBeGreaterThan(5);
    const causes = new Set((one.changes as { cause: string; op: string }[]).flatMap((c) => [c.cause, c.op]));
    for (const c of ['MESSAGE', 'CASCADE', 'MAFL', 'SNAPSHOT_DELETE', 'CREATE', 'UPDATE', 'DELETE', 'REVIVE']) expect(causes).toContain(c);
    expect((one.events as unknown[]).length).toBeGreaterThan(500);
  });

  it('identical terminal states', () => expect(many.proc).toEqual(one.proc));
  it('identical flight states and Redis, and Redis holds exactly the ACTIVE flights as Postgres has them', () => {
    expect(many.flights).toEqual(one.flights);
    expect(many.redis).toEqual(one.redis);
    const active = (many.flights as unknown as FlightState[]).filter((f) => f.STATE === 'ACTIVE');
    expect(many.redis).toEqual(active.map((f) => [`msgx:flight:${f.FLID}`, strip(toJson(f))]).sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1)));
  });
  it('identical event sequence (msg and schd, EVENT_IDs by rank)', () => expect(many.events).toEqual(one.events));
  it('identical change records, ledger and snapshot log, reference data', () => {
    expect(many.changes).toEqual(one.changes);
    expect(many.ledger).toEqual(one.ledger);
    expect(many.snapLog).toEqual(one.snapLog);
    expect(many.refMaster).toEqual(one.refMaster);
  });
});
