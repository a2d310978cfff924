// The flight domain end to end through the pipeline: the corpus SCHD DNLD first (it creates flights 15 and
// 16), a hand-written ADFT creating the other FLIDs the corpus FLOPs address, every corpus FLOP
// in file order (each applied once for real), the FDEL sample last, then a FLOP for the deleted 15.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../lib/core/clock.ts';
import { renumberSeqn } from '../../lib/inject/files.ts';
import { readFlights } from '../../lib/flight/read.ts';
import { toJson } from '../../lib/flight/state.ts';
import { CORPUS_ADFT_FIXTURE, corpusKind as kindOf, corpusPresent, flightCorpus } from '../support/corpus.ts';
import { testConfig } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';

const TZ = 'Asia/Shanghai';
let s: TestServices;
let seqn = 700_000;
const config = testConfig();
const clock = new ManualClock('2026-12-01T00:00:00Z');
const inject = async (xml: string) => putInbox(s.inbox, renumberSeqn(xml, seqn++));
const run = () => runPipelineUntilSettled(s, config, clock);
const flight = async (flid: string) => {
  const st = (await readFlights(s.db, [flid], TZ)).get(flid);
  return st && (toJson(st) as Record<string, any>);
};

describe.runIf(corpusPresent)('flight domain: corpus through the pipeline', () => {
  const { schd, flops, fdel } = flightCorpus();

  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
  });
  afterAll(async () => s?.close());

  it('the SCHD DNLD creates flights 15 and 16 with the expected fields', async () => {
    expect(schd).toHaveLength(1);
    expect(fdel).toHaveLength(1);
    await inject(schd[0].xml);
    await run();
    const f16 = (await flight('16'))!;
    expect(f16).toMatchObject({
      FLID: '16',
      STATE: 'ACTIVE',
      STATE_VERSION: 1,
      OPERATION_DAY: '2021-01-23',
      ALCD: 'YG',
      FLNO: 'YG9061',
      MVIN: 'A',
      SODT: '2021-01-23T03:25:00+08:00',
      ACFT: '733',
      RENO: 'B2574',
      TAOP: 'YG',
      TAFL: 'YG9028',
      TAID: '15',
      TRML: 'T2',
      MAXP: 300,
      STND: '504',
      CANCELLED: false,
      ROUT: [{ RTNO: 1, APCD: 'HGH', SCDT: '2021-01-23T00:10:00+08:00' }],
      PSDT: [{ PSNO: 1, PSST: '504', STST: '2021-01-23T02:37:00+08:00', STET: '2021-01-23T05:49:00+08:00' }],
    });
    expect((await flight('15'))!).toMatchObject({ FLNO: 'YG9028', MVIN: 'D', TAID: '16', OPERATION_DAY: '2021-01-23' });
    expect(JSON.parse((await s.redis.get('msgx:flight:16'))!)).toMatchObject({ FLID: '16', FLNO: 'YG9061', STATE_VERSION: 1 });
    const ev = await sql<{ target: string; n: number }>`select target, count(*)::int n from msg_event group by 1 order by 1`.execute(s.db);
    expect(ev.rows).toEqual([
      { target: 'msg', n: 2 },
      { target: 'schd', n: 2 },
      { target: 'state', n: 2 },
    ]);
  });

  it('every corpus FLOP is applied for real once the flights exist; the deliberately invalid FDIV is DEAD(PROTOCOL)', async () => {
    const before = (await procRows(s.db)).length;
    await inject(CORPUS_ADFT_FIXTURE);
    for (const m of flops) await inject(m.xml);
    await run();
    const rows = (await procRows(s.db)).slice(before);
    expect(rows[0]).toMatchObject({ kind: 'SCHD/ADFT', state: 'SUCCEEDED' });
    const outcomes = rows.slice(1).map((r) => `${r.state}${r.reason ? ' ' + r.reason.split(':')[0] : ''}`);
    expect(outcomes.filter((o) => o !== 'SUCCEEDED')).toEqual(['DEAD PROTOCOL']);
    expect(rows.find((r) => r.state === 'DEAD')!.reason).toMatch(/^PROTOCOL: .*DDIR="TOO"/);
    expect(rows.length - 1).toBe(flops.length);
    // every FLOP STYP of the corpus was applied at least once
    const styps = new Set(rows.filter((r) => r.state === 'SUCCEEDED' && r.kind!.startsWith('FLOP/')).map((r) => r.kind));
    expect(styps.size).toBe(new Set(flops.map((m) => kindOf(m.xml))).size); // FDIV also has valid samples
  });

  it('the FLOPs for 16 changed it (ERUT replaced whole); state and Redis agree', async () => {
    const f16 = (await flight('16'))!;
    expect(f16.STATE_VERSION).toBeGreaterThan(1);
    expect(f16.ERUT).toEqual([
      { RTNO: 1, APCD: 'XXX', SCDT: '2025-12-15T11:40:00+08:00' },
      { RTNO: 2, APCD: 'YYY', SCAT: '2025-12-15T13:45:00+08:00', SCDT: '2025-12-15T16:40:00+08:00' },
      { RTNO: 3, APCD: 'ZZZ', SCAT: '2025-12-15T18:40:00+08:00' },
    ]);
    expect(f16.OPERATION_DAY).toBe('2021-01-23'); // FLOP never changes the operation day
    const cached = JSON.parse((await s.redis.get('msgx:flight:16'))!);
    expect(cached).toEqual(f16);
  });

  it('the FDEL sample deletes 15 (tombstone, Redis key removed); a FLOP for 15 after it is SKIPPED(no-flight:deleted)', async () => {
    const v = (await flight('15'))!.STATE_VERSION;
    await inject(fdel[0].xml);
    await inject(sisMessage({ type: 'FLOP', styp: 'STND', body: '<FLOP><FLID>15</FLID><FFID>x</FFID><STND>505</STND></FLOP>' }));
    await inject(sisMessage({ type: 'FLOP', styp: 'STND', body: '<FLOP><FLID>999999</FLID><FFID>x</FFID><STND>505</STND></FLOP>' }));
    await run();
    const tail = (await procRows(s.db)).slice(-3);
    expect(tail.map((r) => [r.kind, r.state, r.reason])).toEqual([
      ['FLOP/FDEL', 'SUCCEEDED', null],
      ['FLOP/STND', 'SKIPPED', 'no-flight:deleted'],
      ['FLOP/STND', 'SKIPPED', 'no-flight'],
    ]);
    const f15 = await flight('15');
    expect(f15 === undefined || f15.STATE === 'DELETED').toBe(true);
    expect(await s.redis.get('msgx:flight:15')).toBeNull();
    const tomb = await sql<{ payload: Record<string, unknown> }>`
      select payload from msg_event where target = 'msg' and flid = '15' order by event_id desc limit 1`.execute(s.db);
    expect(tomb.rows[0].payload).toMatchObject({ FLID: '15', DELETED: true, STATE_VERSION: v + 1, MSG_ID: tail[0].msg_id });
    const schd15 = await sql`select 1 from msg_event where target = 'schd' and flid = '15' and state = 'PENDING'`.execute(s.db);
    expect(schd15.rows).toEqual([]);
  });

  it('re-injecting the last FLOP of each flight changes nothing: no new version, no new event (G-FLOP-IDEMPOTENT)', async () => {
    const msgEvents = async () => (await sql<{ n: number }>`select count(*)::int n from msg_event where target = 'msg'`.execute(s.db)).rows[0].n;
    const lastFor = (flid: string) => flops.filter((m) => m.xml.includes(`<FLID>${flid}</FLID>`) && kindOf(m.xml) !== 'FLOP/FDIV').at(-1)!;
    const before = { v16: (await flight('16'))!.STATE_VERSION, vCA: (await flight('121112312'))!.STATE_VERSION, events: await msgEvents() };
    await inject(lastFor('16').xml);
    await inject(lastFor('121112312').xml);
    await run();
    expect((await procRows(s.db)).slice(-2).map((r) => r.state)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    expect((await flight('16'))!.STATE_VERSION).toBe(before.v16);
    expect((await flight('121112312'))!.STATE_VERSION).toBe(before.vCA);
    expect(await msgEvents()).toBe(before.events);
  });
});
