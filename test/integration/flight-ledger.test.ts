// Snapshot ledger, ADFT, FLOP/FDEL, outbox and Redis against the real Postgres and Redis.
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { COLLECTIONS, SCALAR_KEYS } from '../../lib/flight/rules.ts';
import { openServices, type TestServices } from '../support/services.ts';
import { apply, count, events, flightRow, flop, nextMsgId, rec, redisState, resetFlights, schd } from './flight-support.ts';

let s: TestServices;
beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => s.close());
beforeEach(async () => resetFlights(s.db, s.redis));

describe('schema follows the rule table', () => {
  it('every scalar key has its flight_schd column, every collection its table and columns', async () => {
    const cols = await sql<{ table_name: string; column_name: string }>`
      select table_name, column_name from information_schema.columns where table_schema = 'public' and table_name like 'flight_%'`.execute(s.db);
    const has = (t: string, c: string) => cols.rows.some((r) => r.table_name === t && r.column_name === c);
    for (const k of SCALAR_KEYS) expect(has('flight_schd', k.column), k.key).toBe(true);
    for (const c of COLLECTIONS) {
      expect(has(c.table, 'source_seq'), c.tag).toBe(true);
      for (const f of c.fields) expect(has(c.table, f.name.toLowerCase()), `${c.tag}.${f.name}`).toBe(true);
    }
  });
});

describe('snapshot (SCHD DNLD)', () => {
  it('creates flights with details, ledger v1, roster, one msg + one schd event per flight, Redis keys', async () => {
    const r = await apply(s.db, s.redis, schd('DNLD', [rec('1', 9, '<GTDT GTNO="1"><GATE>G1</GATE></GTDT><ERUT RTNO="1"><APCD>PEK</APCD></ERUT>'), rec('2', 9)]));
    expect(r).toMatchObject({ outcome: 'applied', wake: ['msg-dispatch', 'schd-dispatch', 'state-dispatch'] });
    expect(await flightRow(s.db, '1')).toMatchObject({ state: 'ACTIVE', state_version: 1, operation_day: '2026-12-09', last_msg_id: r.msgId });
    const gen = await sql<{ version: number; last_message_id: number }>`select version, last_message_id from schd_gen where operation_day = '2026-12-09'`.execute(s.db);
    expect(gen.rows).toEqual([{ version: 1, last_message_id: r.msgId }]);
    expect(await count(s.db, 'schd_gen_flid')).toBe(2);
    const ev = await events(s.db);
    expect(ev.filter((e) => e.target === 'msg').map((e) => [e.flid, e.payload.OP, e.payload.EVENT_ID === e.event_id])).toEqual([
      ['1', 'UPSERT', true],
      ['2', 'UPSERT', true],
    ]);
    expect(ev.filter((e) => e.target === 'schd').map((e) => e.flid)).toEqual(['1', '2']);
    expect(await redisState(s.redis, '1')).toMatchObject({
      FLID: '1',
      STATE_VERSION: 1,
      OPERATION_DAY: '2026-12-09',
      GTDT: [{ GTNO: 1, GATE: 'G1' }],
      ERUT: [{ RTNO: 1, APCD: 'PEK' }],
      CANCELLED: false,
    });
    expect(await count(s.db, 'schd_snap_log')).toBe(1);
  });

  it('latest snapshot replayed: no version, no event; Redis repaired', async () => {
    const xml = schd('DNLD', [rec('1', 9), rec('2', 9)]);
    const first = await apply(s.db, s.redis, xml);
    await s.redis.del('msgx:flight:2');
    const n = (await events(s.db)).length;
    const again = await apply(s.db, s.redis, xml, { msgId: first.msgId });
    expect(again).toMatchObject({ outcome: 'applied' });
    expect('wake' in again).toBe(false);
    expect((await events(s.db)).length).toBe(n);
    expect((await flightRow(s.db, '1')).state_version).toBe(1);
    expect(await redisState(s.redis, '2')).toMatchObject({ FLID: '2', STATE_VERSION: 1 });
    const gen = await sql<{ version: number }>`select version from schd_gen`.execute(s.db);
    expect(gen.rows[0].version).toBe(1);
  });

  it('an unchanged flight in a new snapshot gets no version and no event; ledger version still advances', async () => {
    await apply(s.db, s.redis, schd('DNLD', [rec('1', 9), rec('2', 9)]));
    const n = (await events(s.db)).length;
    await apply(s.db, s.redis, schd('DNLD', [rec('1', 9), rec('2', 9, '<STND>S5</STND>')]));
    const ev = (await events(s.db, 'msg')).slice(2);
    expect(ev.map((e) => [e.flid, e.payload.CHANGED])).toEqual([['2', ['STND']]]);
    expect((await events(s.db)).length).toBe(n + 1); // one msg; schd row of 2 upserted in place
    expect((await flightRow(s.db, '1')).state_version).toBe(1);
    expect((await flightRow(s.db, '2')).state_version).toBe(2);
    expect((await sql<{ version: number }>`select version from schd_gen`.execute(s.db)).rows[0].version).toBe(2);
  });

  it('a flight taken over by the next day is not deleted; an absent flight of the same day is (tombstone, Redis key removed)', async () => {
    await apply(
      s.db,
      s.redis,
      schd(
        'DNLD',
        [rec('A', 9), rec('B', 9), rec('C', 9, '', '2330')].map((x) => x.replace(/<FLID>(\w)<\/FLID>/, (_, f) => `<FLID>${f.charCodeAt(0)}</FLID>`)),
      ),
    );
    const [A, B, C] = ['65', '66', '67'];
    expect(await redisState(s.redis, B)).not.toBeNull();
    // C moves to day 10 (SODT changed), by the day-10 snapshot
    await apply(s.db, s.redis, schd('DNLD', [rec(C, 10, '', '0030')]));
    expect((await flightRow(s.db, C)).operation_day).toBe('2026-12-10');
    // new day-9 snapshot without B and C
    const r = await apply(s.db, s.redis, schd('DNLD', [rec(A, 9)]));
    expect(r).toMatchObject({ outcome: 'applied' });
    expect(await flightRow(s.db, C)).toMatchObject({ state: 'ACTIVE', operation_day: '2026-12-10' });
    expect(await flightRow(s.db, B)).toMatchObject({ state: 'DELETED', state_version: 2 });
    expect((await flightRow(s.db, B)).deleted_at).not.toBeNull();
    const tomb = (await events(s.db, 'msg')).filter((e) => e.flid === B).at(-1)!;
    expect(tomb.payload).toMatchObject({ FLID: B, DELETED: true, STATE_VERSION: 2, MSG_ID: r.msgId });
    expect((await events(s.db, 'schd')).filter((e) => e.flid === B && e.state === 'PENDING')).toEqual([]);
    expect(await redisState(s.redis, B)).toBeNull();
    expect(await redisState(s.redis, C)).toMatchObject({ OPERATION_DAY: '2026-12-10' });
    // a later snapshot containing B revives it from an empty state, version continues
    await apply(s.db, s.redis, schd('DNLD', [rec(A, 9), rec(B, 9)]));
    expect(await flightRow(s.db, B)).toMatchObject({ state: 'ACTIVE', state_version: 3, deleted_at: null });
  });

  it('a snapshot larger than one write statement is written as one: every flight, msg events (each with its state row) then schd rows in order, change records, deletions', async () => {
    // FLIDs 700001…: flight_change is not emptied between tests (resetFlights), and message IDs
    // repeat across files and runs of the slot's database: this test's change records are counted
    // by its own FLIDs, whose earlier records (a run before) it removes first
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => String(700_000 + from + i));
    const mine = range(1, 2500);
    await sql`delete from flight_change where flid = any(${mine}::text[])`.execute(s.db);
    const gate = (f: string) => `<GTDT GTNO="1"><GATE>G${Number(f) % 40}</GATE></GTDT>`;
    const first = await apply(
      s.db,
      s.redis,
      schd(
        'DNLD',
        range(1, 2500).map((f) => rec(f, 9, gate(f))),
      ),
      { mirror: false },
    );
    expect(first).toMatchObject({ outcome: 'applied' });
    expect(await count(s.db, 'flight_schd')).toBe(2500);
    expect(await count(s.db, 'flight_gate')).toBe(2500);
    const changes = async (msgId: number) => (await sql<{ n: number }>`select count(*)::int n from flight_change where msg_id = ${msgId} and flid = any(${mine}::text[])`.execute(s.db)).rows[0].n;
    expect(await changes(first.msgId)).toBe(2500);
    // a change record is kept as the pump wrote it (json; docs/decisions.md "Change records as json")
    const stored = (
      await sql<{ type: string; text: string; changes: Record<string, unknown> }>`select pg_typeof(changes)::text as type, changes::text as text, changes
        from flight_change where msg_id = ${first.msgId} and flid = ${mine[0]}`.execute(s.db)
    ).rows[0];
    expect(stored).toMatchObject({ type: 'json', text: JSON.stringify(stored.changes) });
    expect(stored.changes.GTDT).toEqual([null, [expect.objectContaining({ GATE: 'G1' })]]);
    const ev1 = await events(s.db);
    expect(ev1.map((e) => `${e.target}:${e.flid}`)).toEqual([...range(1, 2500).flatMap((f) => [`msg:${f}`, `state:${f}`]), ...range(1, 2500).map((f) => `schd:${f}`)]);
    expect(ev1.filter((e) => e.target === 'msg').every((e) => e.payload.EVENT_ID === e.event_id)).toBe(true);
    // the next one changes 1–1,200, keeps 1,201–1,900 and drops 1,901–2,500
    const second = await apply(
      s.db,
      s.redis,
      schd(
        'DNLD',
        range(1, 1900).map((f) => rec(f, 9, Number(f) <= 701_200 ? `<STND>S${f}</STND>${gate(f)}` : gate(f))),
      ),
      { mirror: false },
    );
    expect(second).toMatchObject({ outcome: 'applied' });
    const ev2 = (await events(s.db)).filter((e) => e.event_id > ev1.at(-1)!.event_id);
    // each flight's state row right after its (last) msg event, at its new version
    expect(ev2.map((e) => `${e.target}:${e.flid}`)).toEqual([...[...range(1, 1200), ...range(1901, 2500)].flatMap((f) => [`msg:${f}`, `state:${f}`]), ...range(1, 1200).map((f) => `schd:${f}`)]);
    expect(ev2.filter((e) => e.target === 'state').every((e) => e.state_version === 2)).toBe(true);
    expect(ev2.filter((e) => e.flid === '702000' && e.target === 'msg').map((e) => e.payload)).toMatchObject([{ FLID: '702000', DELETED: true, STATE_VERSION: 2, MSG_ID: second.msgId }]);
    expect((await events(s.db, 'schd')).map((e) => e.flid).sort()).toEqual(range(1, 1900).sort());
    expect(await flightRow(s.db, '700007')).toMatchObject({ state: 'ACTIVE', state_version: 2, stnd: 'S700007' });
    expect(await flightRow(s.db, '701500')).toMatchObject({ state: 'ACTIVE', state_version: 1 });
    expect(await flightRow(s.db, '702500')).toMatchObject({ state: 'DELETED', state_version: 2 });
    expect(await changes(second.msgId)).toBe(1800);
    expect(await count(s.db, 'schd_gen_flid')).toBe(1900);
  });

  const invalid: [string, string][] = [
    ['RECS mismatch', schd('DNLD', [rec('1', 9), rec('2', 9)], 3)],
    ['record without FLID', schd('DNLD', [rec('1', 9), '<FLTR><FLNO>X</FLNO><SODT>09DEC260800</SODT></FLTR>'])],
    ['two operation days', schd('DNLD', [rec('1', 9), rec('2', 10)])],
    ['over capacity', schd('DNLD', [rec('1', 9), rec('2', 9, '<PSDT PSNO="1"><PSST>S</PSST></PSDT>'.repeat(10))])],
    ['empty DNLD', schd('DNLD', [])],
    ['bad time', schd('DNLD', [rec('1', 9, '<ESTT>31FEB260800</ESTT>')])],
  ];
  for (const [name, xml] of invalid) {
    it(`INV-4 ${name} → PROTOCOL, nothing written`, async () => {
      await apply(s.db, s.redis, schd('DNLD', [rec('9', 9)]));
      const before = { f: await count(s.db, 'flight_schd'), e: await count(s.db, 'msg_event'), g: await count(s.db, 'schd_gen_flid') };
      const r = await apply(s.db, s.redis, xml);
      expect(r).toMatchObject({ outcome: 'failed', failure: { cls: 'PROTOCOL' } });
      expect({ f: await count(s.db, 'flight_schd'), e: await count(s.db, 'msg_event'), g: await count(s.db, 'schd_gen_flid') }).toEqual(before);
      expect((await flightRow(s.db, '9')).state).toBe('ACTIVE');
    });
  }
});

describe('SCHD RESP guard', () => {
  const openRqfd = (day: string) =>
    sql`insert into req_track (kind, operation_day, state, seqn, body, routing_id, created_at, sent_at)
        values ('RQFD', ${day}::date, 'SENT', 1, '<x/>', 'R', now(), now())`.execute(s.db);

  it('without an open RQFD: SKIPPED(no-open-request), nothing written', async () => {
    const r = await apply(s.db, s.redis, schd('RESP', [rec('1', 9)]));
    expect(r).toMatchObject({ outcome: 'skipped', reason: 'no-open-request' });
    expect(await count(s.db, 'flight_schd')).toBe(0);
  });

  it('with the open RQFD of its day: applied, request DONE; a re-application after a crash converges; a later RESP is late', async () => {
    await openRqfd('2026-12-09');
    const xml = schd('RESP', [rec('1', 9)]);
    const r = await apply(s.db, s.redis, xml, { mirror: false });
    expect(r).toMatchObject({ outcome: 'applied' });
    expect((await sql<{ state: string }>`select state from req_track`.execute(s.db)).rows[0].state).toBe('DONE');
    expect(await redisState(s.redis, '1')).toBeNull(); // crash before the Redis write
    const again = await apply(s.db, s.redis, xml, { msgId: r.msgId });
    expect(again).toMatchObject({ outcome: 'applied' });
    expect(await redisState(s.redis, '1')).toMatchObject({ STATE_VERSION: 1 });
    expect((await flightRow(s.db, '1')).state_version).toBe(1);
    const late = await apply(s.db, s.redis, schd('RESP', [rec('1', 9)]));
    expect(late).toMatchObject({ outcome: 'skipped', reason: 'late-response' });
  });

  it('an empty RESP takes the open RQFD day and empties that roster', async () => {
    await apply(s.db, s.redis, schd('DNLD', [rec('1', 9)]));
    await openRqfd('2026-12-09');
    const r = await apply(s.db, s.redis, schd('RESP', []));
    expect(r).toMatchObject({ outcome: 'applied' });
    expect((await flightRow(s.db, '1')).state).toBe('DELETED');
    expect(await count(s.db, 'schd_gen_flid')).toBe(0);
  });
});

describe('ADFT and FLOP', () => {
  it('ADFT is set-only, a snapshot clears; FLOP never changes OPERATION_DAY', async () => {
    await apply(s.db, s.redis, schd('DNLD', [rec('1', 9, '<STND>S1</STND><GTDT GTNO="1"><GATE>G1</GATE></GTDT>')]));
    await apply(s.db, s.redis, schd('ADFT', [`<FLTR><FLID>1</FLID><RENO>B5</RENO></FLTR>`]));
    expect(await redisState(s.redis, '1')).toMatchObject({ STND: 'S1', RENO: 'B5', GTDT: [{ GATE: 'G1' }], STATE_VERSION: 2 });
    await apply(s.db, s.redis, schd('DNLD', [rec('1', 9)]));
    const j = (await redisState(s.redis, '1'))!;
    expect(['STND', 'RENO', 'GTDT'].filter((k) => k in j)).toEqual([]);
    expect(await count(s.db, 'flight_gate')).toBe(0);
    await apply(s.db, s.redis, flop('STND', '1', '<STND>S7</STND>'));
    expect(await flightRow(s.db, '1')).toMatchObject({ stnd: 'S7', operation_day: '2026-12-09', state_version: 4 });
    // ADFT creates an unknown flight; without SODT its day stays unknown
    await apply(s.db, s.redis, schd('ADFT', [`<FLTR><FLID>2</FLID><FLNO>ZZ2</FLNO></FLTR>`]));
    expect(await flightRow(s.db, '2')).toMatchObject({ state: 'ACTIVE', operation_day: null });
  });

  it('FLOP: unknown FLID / deleted flight / unknown STYP are skipped; a repeated FLOP writes nothing', async () => {
    expect(await apply(s.db, s.redis, flop('STND', '5', '<STND>S1</STND>'))).toMatchObject({ outcome: 'skipped', reason: 'no-flight' });
    // a FLOP STYP the rule table does not handle has no registry entry: the pump ends it SKIPPED(unsupported)
    expect(await apply(s.db, s.redis, flop('ZZZZ', '5', ''))).toMatchObject({ outcome: 'unsupported' });
    await apply(s.db, s.redis, schd('DNLD', [rec('1', 9)]));
    const g = flop('GTDT', '1', '<GTDT GTNO="1"><GATE>G1</GATE></GTDT>');
    const first = await apply(s.db, s.redis, g);
    expect(first).toMatchObject({ outcome: 'applied', wake: ['msg-dispatch', 'schd-dispatch', 'state-dispatch'] });
    const n = await count(s.db, 'msg_event');
    const second = await apply(s.db, s.redis, flop('GTDT', '1', '<GTDT GTNO="1"><GATE>G1</GATE></GTDT>'));
    expect(second).toMatchObject({ outcome: 'applied', mirror: ['1'] });
    expect('wake' in second).toBe(false);
    expect(await count(s.db, 'msg_event')).toBe(n);
    expect((await flightRow(s.db, '1')).state_version).toBe(2);
    const del = await apply(s.db, s.redis, flop('FDEL', '1', '<FDEL></FDEL>'));
    expect(del).toMatchObject({ outcome: 'applied' });
    expect(await redisState(s.redis, '1')).toBeNull();
    expect((await events(s.db, 'msg')).at(-1)!.payload).toMatchObject({ DELETED: true, STATE_VERSION: 3 });
    expect((await events(s.db, 'schd')).filter((e) => e.state === 'PENDING')).toEqual([]);
    expect(await apply(s.db, s.redis, g)).toMatchObject({ outcome: 'skipped', reason: 'no-flight:deleted' });
  });

  it('crash between business commit and terminal commit: re-application converges (no new version, Redis repaired)', async () => {
    await apply(s.db, s.redis, schd('DNLD', [rec('1', 9)]));
    const xml = flop('CNCL', '1', '<CNCL>09DEC260700</CNCL>');
    const id = nextMsgId();
    await apply(s.db, s.redis, xml, { msgId: id, mirror: false });
    expect(await redisState(s.redis, '1')).toMatchObject({ CANCELLED: false, STATE_VERSION: 1 });
    const n = await count(s.db, 'msg_event');
    await apply(s.db, s.redis, xml, { msgId: id });
    expect(await count(s.db, 'msg_event')).toBe(n);
    expect(await redisState(s.redis, '1')).toMatchObject({ CANCELLED: true, STATE_VERSION: 2 });
  });
});

describe('master / shared flights', () => {
  const shared = (flid: string, maid: string, flno = `CS${flid}`) => `<FLTR><FLID>${flid}</FLID><FLNO>${flno}</FLNO><MAID>${maid}</MAID></FLTR>`;

  it('link, FLNO change, relink, child deleted, master deleted (cascade), master revived derives MAFL at once', async () => {
    await apply(s.db, s.redis, schd('DNLD', [rec('100', 9), rec('200', 9)]));
    await apply(s.db, s.redis, schd('ADFT', [shared('101', '100'), shared('102', '100')]));
    expect((await redisState(s.redis, '100'))!.MAFL).toEqual([
      { FLID: '101', FLNO: 'CS101' },
      { FLID: '102', FLNO: 'CS102' },
    ]);
    expect((await flightRow(s.db, '100')).state_version).toBe(2); // one version step for two new shared flights
    const masterEv = (await events(s.db, 'msg')).filter((e) => e.flid === '100').at(-1)!;
    expect(masterEv.payload.CHANGED).toEqual(['MAFL']);
    // FLNO change of a shared flight
    await apply(s.db, s.redis, schd('ADFT', [shared('101', '100', 'CS9')]));
    expect((await redisState(s.redis, '100'))!.MAFL).toEqual([
      { FLID: '101', FLNO: 'CS9' },
      { FLID: '102', FLNO: 'CS102' },
    ]);
    // relink 102 to master 200: both masters re-derived
    await apply(s.db, s.redis, schd('ADFT', [shared('102', '200')]));
    expect((await redisState(s.redis, '100'))!.MAFL).toEqual([{ FLID: '101', FLNO: 'CS9' }]);
    expect((await redisState(s.redis, '200'))!.MAFL).toEqual([{ FLID: '102', FLNO: 'CS102' }]);
    // child deleted
    await apply(s.db, s.redis, flop('FDEL', '102', '<FDEL/>'));
    expect('MAFL' in (await redisState(s.redis, '200'))!).toBe(false);
    // master deleted: cascade to 101
    const d = await apply(s.db, s.redis, flop('FDEL', '100', '<FDEL/>'));
    expect(d).toMatchObject({ outcome: 'applied' });
    expect((await flightRow(s.db, '101')).state).toBe('DELETED');
    expect(await redisState(s.redis, '101')).toBeNull();
    expect((await events(s.db, 'msg')).filter((e) => e.payload.MSG_ID === d.msgId).map((e) => [e.flid, e.payload.DELETED])).toEqual([
      ['100', true],
      ['101', true],
    ]);
    // shared flight revived first, then its master: the master derives MAFL at once
    await apply(s.db, s.redis, schd('ADFT', [shared('101', '100')]));
    await apply(s.db, s.redis, schd('ADFT', [`<FLTR><FLID>100</FLID><FLNO>XX100</FLNO></FLTR>`]));
    expect((await redisState(s.redis, '100'))!.MAFL).toEqual([{ FLID: '101', FLNO: 'CS101' }]);
  });

  it('a snapshot that drops a master but keeps its shared flight keeps that flight', async () => {
    await apply(s.db, s.redis, schd('DNLD', [rec('100', 9), rec('101', 9, '<MAID>100</MAID>'), rec('102', 9, '<MAID>100</MAID>')]));
    expect((await redisState(s.redis, '100'))!.MAFL).toHaveLength(2);
    await apply(s.db, s.redis, schd('DNLD', [rec('101', 9, '<MAID>100</MAID>')]));
    expect((await flightRow(s.db, '100')).state).toBe('DELETED');
    expect((await flightRow(s.db, '102')).state).toBe('DELETED');
    expect((await flightRow(s.db, '101')).state).toBe('ACTIVE');
  });
});
