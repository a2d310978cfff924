// The one-trip loader (lib/flight/store.ts loadStates: one statement, every detail table
// aggregated per flight) returns exactly what the per-table loader it replaced returned (1 + one
// query per detail table, kept below as the reference), over flights with every collection,
// empty fields, several elements, shared/master flights, a deleted flight and a bare one.
import { Kysely, PostgresDialect, sql } from 'kysely';
import type { QueryDb } from '../../lib/db/kysely.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COLLECTIONS, columnOf, DETAIL_TABLES, SCALAR_KEYS, STATUS_KEYS, type CollectionSpec, type ValueKind } from '../../lib/flight/rules.ts';
import { emptyData, isoLocal, type FlightData, type FlightState, type MaflEntry, type Row } from '../../lib/flight/state.ts';
import { loadStates } from '../../lib/flight/store.ts';
import { readFlights } from '../../lib/flight/read.ts';
import { openServices, type TestServices } from '../support/services.ts';
import { apply, flop, rec, resetFlights, schd, TZ } from './flight-support.ts';

// ---- reference: the per-table loader as it was before the one-trip loader -------------------
function fromDb(kind: ValueKind, v: unknown, tz: string): string | number | null {
  if (v === null || v === undefined) return null;
  if (kind === 'time') return isoLocal(v as Date, tz);
  if (kind === 'int') return Number(v);
  return String(v);
}
function detailRowToValue(spec: CollectionSpec, r: Record<string, unknown>, tz: string): Row | string {
  if (spec.raw) return String(r.xml);
  const row: Row = {};
  if (spec.keyAttr && r.source_seq !== null) row[spec.keyAttr] = Number(r.source_seq);
  for (const f of spec.fields) {
    const v = fromDb(f.kind, r[columnOf(f)], tz);
    if (v !== null) row[f.name] = v;
  }
  return row;
}
async function referenceLoad(db: QueryDb, flids: readonly string[], tz: string): Promise<Map<string, FlightState>> {
  const out = new Map<string, FlightState>();
  const ids = [...new Set(flids)];
  const cols = [
    sql`flid, state, state_version, operation_day::text as operation_day, last_msg_id, updated_at, mafl`,
    ...STATUS_KEYS.map((k) => sql.ref(k.toLowerCase())),
    ...SCALAR_KEYS.map((s) => sql.ref(s.column)),
  ];
  const main = await sql<Record<string, unknown>>`select ${sql.join(cols)} from flight_schd where flid = any(${ids}::text[])`.execute(db);
  for (const r of main.rows) {
    const data: FlightData = emptyData();
    for (const k of STATUS_KEYS) data[k] = r[k.toLowerCase()] === true;
    for (const s of SCALAR_KEYS) {
      const v = fromDb(s.kind, r[s.column], tz);
      if (v !== null) data[s.key] = v;
    }
    out.set(String(r.flid), {
      FLID: String(r.flid),
      STATE: r.state as FlightState['STATE'],
      STATE_VERSION: Number(r.state_version),
      OPERATION_DAY: (r.operation_day as string | null) ?? null,
      UPDATED_AT: isoLocal(r.updated_at as Date, tz),
      LAST_MSG_ID: r.last_msg_id === null ? null : Number(r.last_msg_id),
      data,
      MAFL: (r.mafl as MaflEntry[]) ?? [],
    });
  }
  if (out.size === 0) return out;
  const found = [...out.keys()];
  for (const table of DETAIL_TABLES) {
    const specs = COLLECTIONS.filter((c) => c.table === table);
    const disc = specs[0].discriminator?.column;
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table)} where flid = any(${found}::text[]) order by flid, ${disc ? sql`${sql.ref(disc)}, ` : sql``}ordinal`.execute(db);
    for (const r of rows.rows) {
      const spec = disc ? specs.find((s) => s.discriminator!.value === r[disc])! : specs[0];
      const list = (out.get(String(r.flid))!.data[spec.tag] ??= []) as (Row | string)[];
      list.push(detailRowToValue(spec, r, tz));
    }
  }
  return out;
}

// ---- fixtures: every collection, twice where it can be ----------------------------------------
const t = (hhmm: string) => `09DEC26${hhmm}`;
const EVERY = [
  `<GTDT GTNO="1"><GATE>G1</GATE><PGOT>${t('0700')}</PGOT><PGCT>${t('0730')}</PGCT><GOTM>${t('0701')}</GOTM><GCTM>${t('0731')}</GCTM><GTYP>D</GTYP></GTDT><GTDT GTNO="2"><GATE>G2</GATE><PGOT></PGOT></GTDT><GTDT GTNO=""><GATE>G3</GATE></GTDT>`,
  `<CKDT CKNO="1"><CHKC>C1</CHKC><CCLS>J</CCLS><PCOT>${t('0500')}</PCOT><PCCT>${t('0600')}</PCCT><COTM>${t('0505')}</COTM><CCTM>${t('0605')}</CCTM><CTYP>D</CTYP></CKDT><CKDT CKNO="1"><CHKC>C2</CHKC></CKDT>`,
  `<CLDT CLNO="3"><BELT>B3</BELT><BCLS>Y</BCLS><PCOT>${t('0900')}</PCOT><PCCT>${t('0930')}</PCCT><FBAG>${t('0905')}</FBAG><LBAG>${t('0925')}</LBAG><BTYP>I</BTYP></CLDT>`,
  `<CHDT CHNO="4"><CHUT>H4</CHUT><CCLS>F</CCLS><PCBT>${t('0600')}</PCBT><PCET>${t('0700')}</PCET><CBTM>${t('0601')}</CBTM><CETM>${t('0701')}</CETM><CTYP>D</CTYP></CHDT>`,
  `<PSDT PSNO="1"><PSST>101</PSST><STST>${t('0600')}</STST><STET>${t('0900')}</STET></PSDT><PSDT PSNO="2"><PSST>102</PSST></PSDT>`,
  `<CHOT CSNO="1"><CHTM>${t('1010')}</CHTM><CHID>ON</CHID><CHST>1</CHST></CHOT><CHOT CSNO="2"><CHTM></CHTM><CHID>OFF</CHID></CHOT>`,
  `<DELY CODE="81" STRT="${t('0815')}" DURA="0100">ATC</DELY><DELY CODE="93" STRT="" DURA="0030"></DELY>`,
  `<ABTM ASNO="1"><ABDG>B1</ABDG><ABOP>C</ABOP><AOTM>${t('1012')}</AOTM></ABTM>`,
  `<PSHT PSHN="1"><PSTM>${t('1030')}</PSTM><PSID>P1</PSID><PUST>S</PUST></PSHT>`,
  `<TIPT><TRTM>${t('1031')}</TRTM><TRST>T</TRST></TIPT><TIPT><TRTM>${t('1032')}</TRTM></TIPT>`,
  `<ROUT RTNO="1"><APCD>PEK</APCD><SCAT>${t('0800')}</SCAT><SCDT>${t('0830')}</SCDT></ROUT><ROUT RTNO="2"><APCD>SHA</APCD></ROUT>`,
  `<ERUT RTNO="1"><APCD>CAN</APCD><SCAT>${t('0800')}</SCAT></ERUT><ERUT RTNO="2"><APCD>PEK</APCD></ERUT><ERUT RTNO="3"><APCD>SHA</APCD></ERUT>`,
  '<SRVT><SRTC>WCHR</SRTC><SRQT>2</SRQT><SRST/></SRVT><SRVT><SRTC>UMNR</SRTC></SRVT>',
  '<VIPF><VPCD>V1</VPCD><VFES>Y</VFES><VIPT><VPNM>X</VPNM></VIPT></VIPF>',
].join('');

let s: TestServices;
beforeAll(async () => {
  s = await openServices();
  await resetFlights(s.db, s.redis);
});
afterAll(async () => {
  await resetFlights(s.db, s.redis);
  await s.close();
});

describe('one-trip flight loader', () => {
  it('returns exactly what the per-table loader returned, in one statement', async () => {
    const scalars = `<ESTT>${t('0930')}</ESTT><MAXP>199</MAXP><CNCL>${t('0700')}</CNCL><FDIV DDES="HKG" DDIR="TO">weather</FDIV><TAOP>CA</TAOP><TAFL>CA1</TAFL><TAID>7</TAID>`;
    const r = await apply(
      s.db,
      s.redis,
      schd('DNLD', [rec('1', 9, scalars + EVERY), rec('2', 9, EVERY), rec('3', 9), rec('4', 9, '<MAID>1</MAID><GTDT GTNO="1"><GATE>G9</GATE></GTDT>'), rec('5', 9)]),
    );
    expect(r.outcome).toBe('applied');
    expect((await apply(s.db, s.redis, flop('FDEL', '5', '<FDEL></FDEL>'))).outcome).toBe('applied');
    expect((await apply(s.db, s.redis, flop('PORT', '2', `<PORT><POTM>${t('1015')}</POTM><POID>O</POID></PORT>`))).outcome).toBe('applied');
    const ids = ['1', '2', '3', '4', '5', '404', '1'];
    const ref = await referenceLoad(s.db, ids, TZ);
    let statements = 0;
    const counted = new Kysely<Record<string, never>>({ dialect: new PostgresDialect({ pool: s.pool }), log: () => void statements++ });
    const got = await loadStates(counted, ids, TZ);
    expect(statements).toBe(1);
    expect([...got.keys()].sort()).toEqual(['1', '2', '3', '4', '5']);
    for (const [flid, want] of ref) {
      expect(got.get(flid), flid).toStrictEqual(want);
      expect(JSON.stringify(got.get(flid)), flid).toBe(JSON.stringify(want)); // key order too
    }
    // every collection really is there (the fixture is not silently thinner than the rules)
    for (const c of COLLECTIONS) expect((got.get('1')!.data[c.tag] as unknown[]).length, c.tag).toBeGreaterThan(0);
    expect(got.get('1')!.MAFL).toEqual([{ FLID: '4', FLNO: 'XX4' }]);
    expect(got.get('5')!.STATE).toBe('DELETED');
    // readFlights (mirror, routes, schd dispatcher) gives the same
    expect(await readFlights(s.db, ids, TZ)).toStrictEqual(ref);
    expect(await loadStates(s.db, [], TZ)).toEqual(new Map());
    expect(await loadStates(s.db, ['404'], TZ)).toEqual(new Map());
  });

  it('a time zone of the session does not change what is read', async () => {
    const want = await referenceLoad(s.db, ['1', '2'], TZ);
    const got = await s.db.transaction().execute(async (tx) => {
      await sql`set local time zone 'America/Los_Angeles'`.execute(tx);
      return loadStates(tx, ['1', '2'], TZ);
    });
    expect(got).toStrictEqual(want);
  });
});
