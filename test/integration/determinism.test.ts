// R5 (RELIABILITY.md): the same inbox content processed twice from empty stores gives the same
// state and the same event sequence. Clock-valued fields (UPDATED_AT, CREATED_AT, DELETED_AT,
// updated_at of reference rows…) are removed; EVENT_IDs are compared by rank. The two runs use
// different clocks, so that anything clock-dependent that is not declared as such shows up.
// The workload is hand-written and mixed: a SCHD DNLD creating 20 flights with collections,
// master/shared flights, FLOPs changing them (one twice), ADFT, FDEL (of a shared flight and of a
// master: cascade), a second snapshot of the same day (deletions by absence, a revival), a
// snapshot of another day, reference data (DNLD/ADD/UPD/DEL), RSTA, SCHS, and a few bad messages.
import { canonical } from '../support/canonical.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../lib/core/clock.ts';
import { connectClient } from '../../lib/db/postgres.ts';
import { listFlights } from '../../lib/flight/read.ts';
import { TEST_PG_URL, testConfig } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { openServices, putInbox, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';

const TZ = 'Asia/Shanghai';
const config = testConfig();

// ------------------------------------------------------------------------------------------
// the workload (fixed text: SEQNs are part of it, so both runs inject byte-identical messages)

function workload(): string[][] {
  let seqn = 810_000;
  const msg = (type: string, styp: string, body: string) => sisMessage({ type, styp, body, seqn: ++seqn });
  const flop = (styp: string, flid: number, inner: string) => msg('FLOP', styp, `<FLOP><FLID>${flid}</FLID><FFID>XX-${flid}</FFID>${inner}</FLOP>`);
  const schd = (styp: string, records: string[]) => msg('SCHD', styp, `<SCHD><RECS>${records.length}</RECS>${records.join('\n')}</SCHD>`);
  const ref = (type: string, styp: string, records: string[]) => msg(type, styp, `<RECS>${records.length}</RECS>${records.join('')}`);
  const t = (day: number, hhmm: string) => `${String(day).padStart(2, '0')}DEC26${hhmm}`;

  /** A departure of day `day` with collections that depend on the FLID only. */
  const rec = (flid: number, day = 1, extra = '') => {
    const hh = String(6 + (flid % 14)).padStart(2, '0');
    const sod = t(day, `${hh}${String((flid * 7) % 60).padStart(2, '0')}`);
    const gates = Array.from(
      { length: 1 + (flid % 3) },
      (_, i) => `<GTDT GTNO="${i + 1}"><GATE>G${(flid + i) % 30}</GATE><PGOT>${t(day, `${hh}00`)}</PGOT><PGCT>${t(day, `${hh}30`)}</PGCT><GTYP>D</GTYP></GTDT>`,
    ).join('');
    const routes = Array.from(
      { length: 1 + (flid % 4) },
      (_, i) => `<ROUT RTNO="${i + 1}"><APCD>${['PEK', 'SHA', 'CAN', 'HKG', 'NRT'][(flid + i) % 5]}</APCD><SCAT>${t(day, `${hh}45`)}</SCAT></ROUT>`,
    ).join('');
    return `<FLTR><FLID>${flid}</FLID><ALCD>CA</ALCD><FLNO>CA${1000 + flid}</FLNO><MVIN>D</MVIN><SODT>${sod}</SODT><FLTY>W</FLTY><FLIN>D</FLIN>
${routes}<ACFT>${flid % 2 ? '333' : '320'}</ACFT><RENO>B${5000 + flid}</RENO><TRML>T${1 + (flid % 2)}</TRML><MAXP>${150 + flid}</MAXP><STND>${500 + (flid % 10)}</STND>
${gates}<CKDT CKNO="1"><CHKC>C${flid % 90}</CHKC><CCLS>Y</CCLS><PCOT>${t(day, `${hh}00`)}</PCOT><PCCT>${t(day, `${hh}30`)}</PCCT><CTYP>D</CTYP></CKDT>
<PSDT PSNO="1"><PSST>${500 + (flid % 10)}</PSST><STST>${t(day, `${hh}00`)}</STST><STET>${t(day, `${hh}50`)}</STET></PSDT><PHAG>1100${flid % 10}</PHAG>${extra}</FLTR>`;
  };
  const FIRST = Array.from({ length: 20 }, (_, i) => 201 + i);
  const withRoles = (flid: number, day = 1) =>
    rec(
      flid,
      day,
      flid === 216 || flid === 217
        ? '<MAID>215</MAID>'
        : flid === 218
          ? '<TAOP>A</TAOP><TAFL>CA1219</TAFL><TAID>219</TAID>'
          : flid === 205
            ? '<DELY CODE="93" STRT="01DEC260800" DURA="0030">late inbound</DELY>'
            : '',
    );

  const phase1 = [
    ref('GLST', 'DNLD', [
      '<GLST><GCOD>G1</GCOD><GTNM>Gate 1</GTNM><GTML>T1</GTML></GLST>',
      '<GLST><GCOD>G2</GCOD><GTNM>Gate 2</GTNM><GTML>T1</GTML></GLST>',
      '<GLST><GCOD>G3</GCOD><GTNM>Gate 3</GTNM><GTML>T2</GTML></GLST>',
    ]),
    ref('AIRL', 'DNLD', [
      '<AIRL><ITOP>CA</ITOP><ICOP>CCA</ICOP><ONAM>Air China</ONAM><ONMC>中国国际航空</ONMC><TRML>T2</TRML><TRML>T3</TRML></AIRL>',
      '<AIRL><ITOP>MU</ITOP><ICOP>CES</ICOP><ONAM>China Eastern</ONAM><TRML>T1</TRML></AIRL>',
    ]),
    ref('SLST', 'ADD', ['<SLST><SCOD>501</SCOD><STNM>Stand 501</STNM></SLST>', '<SLST><SCOD>502</SCOD><STNM>Stand 502</STNM></SLST>']),
    schd(
      'DNLD',
      FIRST.map((f) => withRoles(f)),
    ),
    msg('RSTA', 'DNLD', `<RSTA><RTYP>GATE</RTYP><RSID>G2</RSID><STAT>D</STAT><STDT>${t(1, '0600')}</STDT><EDDT>${t(1, '1800')}</EDDT><REMK>works</REMK></RSTA>`),
    schd('DNLD', [rec(999, 3), rec(1000, 3), rec(1001, 3)]), // roster of day 3 in message order 999, 1000, 1001
    msg('SCHS', 'DNLD', '<SCHS><SNAM>W26</SNAM><APCD>PEK</APCD><SDAT>25OCT26</SDAT><EDAT>27MAR27</EDAT><RECS>1</RECS><FLTR><FLNO>CA1201</FLNO><ROUT><APCD>SHA</APCD></ROUT></FLTR></SCHS>'),
  ];
  const phase2 = [
    flop('ESTT', 201, `<ESTT>${t(1, '0930')}</ESTT>`),
    flop('ESTT', 201, `<ESTT>${t(1, '0930')}</ESTT>`), // the same operation again: no version, no event
    flop('MAXP', 201, '<MAXP>199</MAXP>'),
    flop('GTDT', 202, `<GTDT GTNO="1"><GATE>G9</GATE><PGOT>${t(1, '0700')}</PGOT><GTYP>D</GTYP></GTDT><GTDT GTNO="1"><GATE>G10</GATE></GTDT>`),
    flop('GTDT', 203, '<GTDT GTNO="0"/>'),
    flop('CKDT', 204, `<CKDT CKNO="1"><CHKC>C1</CHKC><CCLS>J</CCLS><COTM>${t(1, '0610')}</COTM><CTYP>D</CTYP></CKDT><CKDT CKNO="2"><CHKC>C2</CHKC><CCLS>Y</CCLS><CTYP>D</CTYP></CKDT>`),
    flop('DELY', 205, `<DELY CODE="81" STRT="${t(1, '0815')}" DURA="0100">ATC</DELY><DELY CODE="93" STRT="${t(1, '0800')}" DURA="0030">late inbound</DELY>`),
    flop('CNCL', 206, `<CNCL>${t(1, '0700')}</CNCL>`),
    flop('CNCL', 206, '<CNCL></CNCL>'),
    flop('BOTM', 207, `<BOTM>${t(1, '0900')}</BOTM>`),
    flop('LACL', 207, `<LACL>${t(1, '0920')}</LACL>`),
    flop('FDIV', 208, '<FDIV DDES="HKG" DDIR="TO">weather</FDIV>'),
    flop('FRET', 209, '<FRET REID="A">technical</FRET>'),
    flop('FLAB', 210, '<FLAB ARES="G">bird strike</FLAB>'),
    flop('HNAG', 211, '<FHAG>H1</FHAG><PHAG></PHAG>'),
    flop('TAOP', 218, '<TAOP></TAOP><TAFL>CA1219</TAFL><TAID>219</TAID>'),
    flop('ROUT', 212, Array.from({ length: 6 }, (_, i) => `<ROUT RTNO="${i + 1}"><APCD>A${i}</APCD></ROUT>`).join('')),
    flop('SRVT', 213, '<SRVT><SRTC>WCHR</SRTC><SRQT>2</SRQT><SRST/></SRVT><SRVT><SRTC>UMNR</SRTC><SRQT>1</SRQT></SRVT>'),
    flop('VIPF', 213, '<VIPF><VPCD>V1</VPCD><VFES>Y</VFES><VIPT><VPNM>X</VPNM></VIPT></VIPF>'),
    flop('CHOT', 214, `<CHOT CSNO="1"><CHTM>${t(1, '1010')}</CHTM><CHID>ON</CHID><CHST>1</CHST></CHOT>`),
    flop('PORT', 214, `<PORT><POTM>${t(1, '1015')}</POTM><POID>O</POID></PORT>`),
    flop('ABTM', 219, `<ABTM ASNO="1"><ABDG>B1</ABDG><ABOP>C</ABOP><AOTM>${t(1, '1012')}</AOTM></ABTM>`),
    flop('PSHT', 219, `<PSHT PSHN="1"><PSTM>${t(1, '1030')}</PSTM><PSID>P1</PSID><PUST>S</PUST></PSHT>`),
    flop('REMC', 4242, '<REMC>unknown flight</REMC>'), // SKIPPED no-flight
    flop('ACFT', 201, '<ACFT></ACFT>'), // DEAD PROTOCOL
    'not xml at all', // DEAD MALFORMED
    schd('ADFT', [`<FLTR><FLID>221</FLID><ALCD>CA</ALCD><FLNO>CA1221</FLNO><SODT>${t(1, '1100')}</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>320</ACFT><MAID>215</MAID></FLTR>`]),
    schd('ADFT', ['<FLTR><FLID>201</FLID><REMC>GATE CHANGE</REMC></FLTR>']),
    flop('FDEL', 216, '<FDEL></FDEL>'), // shared flight: master 215 re-derived
    flop('FDEL', 220, '<FDEL></FDEL>'),
    ref('GLST', 'UPD', ['<GLST><GCOD>G2</GCOD><GTNM>Gate 2 (north)</GTNM><GTML>T1</GTML></GLST>', '<GLST><GCOD>G4</GCOD><GTNM>Gate 4</GTNM></GLST>']),
    ref('GLST', 'DEL', ['<GLST><GCOD>G3</GCOD></GLST>']),
    msg('RSTA', 'DNLD', '<RSTA><RTYP>GATE</RTYP><RSID>G2</RSID><STAT>E</STAT></RSTA>'),
  ];
  const phase3 = [
    // second snapshot of day 1: 217 and 219 absent (deleted), 216 revived, 220 stays deleted
    schd(
      'DNLD',
      FIRST.filter((f) => f !== 217 && f !== 219 && f !== 220).map((f) => withRoles(f)),
    ),
    schd(
      'DNLD',
      [301, 302, 303].map((f) => rec(f, 2)),
    ),
    flop('ESTT', 302, `<ESTT>${t(2, '1200')}</ESTT>`),
    schd('DNLD', [rec(1001, 3)]), // 999 and 1000 deleted by absence (INV-7)
    flop('FDEL', 215, '<FDEL></FDEL>'), // master: cascade to its live shared flights
    flop('ESTT', 216, `<ESTT>${t(1, '1300')}</ESTT>`), // SKIPPED no-flight:deleted
    ref('AIRL', 'UPD', ['<AIRL><ITOP>MU</ITOP><ICOP>CES</ICOP><ONAM>China Eastern Airlines</ONAM><TRML>T1</TRML><TRML>T2</TRML></AIRL>']),
    ref('BLST', 'DNLD', ['<BLST><BCOD>B1</BCOD><BTNM>Belt 1</BTNM></BLST>']),
    ref('BLST', 'DNLD', ['<BLST><BCOD>B2</BCOD><BTNM>Belt 2</BTNM></BLST>', '<BLST><BCOD>B3</BCOD></BLST>']), // replaces B1
  ];
  return [phase1, phase2, phase3];
}

// ------------------------------------------------------------------------------------------
// one run and its canonical result

let s: TestServices;

async function resetAll() {
  await resetPipeline(s);
  await sql`truncate flight_schd, flight_snap_digest, flight_gate, flight_checkin, flight_carousel, flight_chute, flight_planned_stand, flight_chock,
            flight_delay, flight_airbridge, flight_pushback, flight_tractor, flight_route_point, flight_raw_fragment,
            schd_gen, schd_gen_flid, schd_snap_log, msg_event, req_track, ref_master, res_status, schs_season`.execute(s.db);
  await s.redis.flushdb();
}

const strip = (v: unknown) => canonical(v);

async function rows(q: ReturnType<typeof sql<Record<string, unknown>>>) {
  return (await q.execute(s.db)).rows;
}

/**
 * One run from empty stores. `reader`: a concurrent reader holds a REPEATABLE READ snapshot for
 * the whole run (as GET /all/flights does for a moment): it changes nothing logically, but it
 * keeps Postgres from pruning dead row versions, so the physical row order of the tables differs
 * from a run without it. Anything that depends on that order (a query without ORDER BY) shows up.
 */
async function runOnce(start: string, stepMs: number, o: { reader?: boolean; noSeqScan?: boolean } = {}) {
  await resetAll();
  // The pump's session: the planner may pick another plan (index instead of sequential scan) on
  // another database with other statistics; the outcome must not depend on it.
  for (const k of ['enable_seqscan', 'enable_bitmapscan']) await sql`select set_config(${k}, ${o.noSeqScan ? 'off' : 'on'}, false)`.execute(s.session);
  const reader = o.reader ? await connectClient(TEST_PG_URL, 'determinism-reader') : undefined;
  if (reader) await reader.query('begin isolation level repeatable read; select count(*) from flight_schd');
  const clock = new ManualClock(start);
  try {
    for (const phase of workload()) {
      for (const xml of phase) await putInbox(s.inbox, xml);
      await runPipelineUntilSettled(s, config, clock);
      clock.advance(stepMs);
    }
  } finally {
    if (reader) await reader.query('rollback').finally(() => reader.end());
    await sql`reset enable_seqscan; reset enable_bitmapscan`.execute(s.session);
  }
  const flights = (await listFlights(s.db, { limit: 10_000, includeDeleted: true }, TZ)).flights;
  const flightRows = await rows(sql`select to_jsonb(f) as r from flight_schd f order by flid`);
  const events = await rows(sql`select event_id, target, flid, state_version, state, payload from msg_event order by event_id`);
  const rank = new Map(events.map((e, i) => [String(e.event_id), i + 1]));
  const redisKeys = (await s.redis.keys('msgx:*')).sort();
  const redis = await Promise.all(redisKeys.map(async (k) => [k, JSON.parse((await s.redis.get(k)) ?? 'null')]));
  return {
    clockSample: flights[0]?.UPDATED_AT,
    result: strip({
      proc: await rows(sql`select msg_id, state, reason, kind, identity_key, attempts, backfill_at is not null as backfilled from proc_state order by msg_id`),
      flights,
      flightRows: flightRows.map((r) => r.r),
      events: events.map((e) => ({
        rank: rank.get(String(e.event_id)),
        target: e.target,
        flid: e.flid,
        state_version: e.state_version,
        state: e.state,
        payload: { ...(e.payload as Record<string, unknown>), ...('EVENT_ID' in (e.payload as object) ? { EVENT_ID: rank.get(String((e.payload as { EVENT_ID: unknown }).EVENT_ID)) } : {}) },
      })),
      ledger: await rows(sql`select operation_day::text as day, version, last_message_id from schd_gen order by 1`),
      rosters: await rows(sql`select operation_day::text as day, flid from schd_gen_flid order by 1, 2`),
      snapLog: await rows(sql`select msg_id, styp, operation_day::text as day, version, outcome, recs, written, unchanged, deleted from schd_snap_log order by id`),
      refMaster: await rows(sql`select rtype, rkey, record, last_msg_id from ref_master order by rtype, rkey`),
      resStatus: await rows(sql`select rtyp, rsid, stat, stdt, eddt, remk, last_msg_id from res_status order by rtyp, rsid`),
      seasons: await rows(sql`select snam, apcd, sdat::text, edat::text, recs, flights, last_msg_id from schs_season order by 1, 2`),
      redis,
    }) as Record<string, unknown[]>,
  };
}

describe('R5 determinism', () => {
  let first: Awaited<ReturnType<typeof runOnce>>;
  let second: Awaited<ReturnType<typeof runOnce>>;

  beforeAll(async () => {
    s = await openServices();
    first = await runOnce('2026-12-01T00:00:00Z', 60 * 60_000);
    second = await runOnce('2026-12-03T05:17:23Z', 7 * 60_000, { reader: true, noSeqScan: true });
  });
  afterAll(async () => s?.close());

  it('the workload is substantial and its outcomes are the intended ones', () => {
    const r = first.result;
    const proc = r.proc as { state: string; reason: string | null }[];
    expect(proc.every((p) => ['SUCCEEDED', 'SKIPPED', 'DEAD'].includes(p.state))).toBe(true);
    expect(proc.filter((p) => p.state !== 'SUCCEEDED').map((p) => `${p.state} ${p.reason?.split(':')[0]}`)).toEqual(['SKIPPED no-flight', 'DEAD PROTOCOL', 'DEAD MALFORMED', 'SKIPPED no-flight']);
    const flights = r.flights as { FLID: string; STATE: string; MAFL?: unknown }[];
    expect(flights.length).toBe(27); // 201–221, 301–303, 999–1001
    expect(
      flights
        .filter((f) => f.STATE === 'DELETED')
        .map((f) => f.FLID)
        .sort(),
    ).toEqual(['1000', '215', '216', '217', '219', '220', '221', '999']);
    expect((r.events as unknown[]).length).toBeGreaterThan(60);
    expect((r.refMaster as unknown[]).length).toBeGreaterThan(6);
    // the clocks really differed between the runs
    expect(first.clockSample).not.toBe(second.clockSample);
  });

  it('same flight states (complete state and main rows), clock fields removed', () => {
    expect(second.result.flights).toEqual(first.result.flights);
    expect(second.result.flightRows).toEqual(first.result.flightRows);
    expect(second.result.redis).toEqual(first.result.redis);
  });

  it('same msg_event sequence (EVENT_IDs by rank, payload clock fields removed)', () => {
    expect(second.result.events).toEqual(first.result.events);
  });

  it('same ledger, rosters and snapshot log', () => {
    expect(second.result.ledger).toEqual(first.result.ledger);
    expect(second.result.rosters).toEqual(first.result.rosters);
    expect(second.result.snapLog).toEqual(first.result.snapLog);
  });

  it('same reference data (ref_master, resource status, seasons)', () => {
    expect(second.result.refMaster).toEqual(first.result.refMaster);
    expect(second.result.resStatus).toEqual(first.result.resStatus);
    expect(second.result.seasons).toEqual(first.result.seasons);
  });

  it('same message outcomes', () => {
    expect(second.result.proc).toEqual(first.result.proc);
  });
});
