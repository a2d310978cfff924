// Reference data, RSTA and SCHS through the registered handlers against the real Postgres.
import Fastify from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { REF_CATEGORIES } from '../../lib/sis/refdata-keys.ts';
import { refdataRoutes } from '../../lib/api/refdata-routes.ts';
import { statusAt } from '../../lib/refdata/rsta.ts';
import { listCategory } from '../../lib/refdata/store.ts';
import { ManualClock } from '../../lib/core/clock.ts';
import { testConfig } from '../support/env.ts';
import { applyMessage, refXml, testDb } from '../support/refdata-ctx.ts';

const db = testDb();
const config = testConfig();
const NOW = new Date('2026-12-01T00:00:00Z');
let msgId = 1000;
const apply = (xml: string, now = NOW) => applyMessage(db, { xml, msgId: ++msgId, now, config });
const keys = async (rtype: string) => (await listCategory(db, rtype)).map((r) => r.rkey);

beforeEach(async () => {
  await sql`TRUNCATE ref_master, res_status, schs_season, req_track`.execute(db);
});
afterAll(() => db.destroy());

describe('every STYP for every category', () => {
  for (const cat of REF_CATEGORIES) {
    const rec = (k: string, v: string) => `<${cat.rtype}><${cat.key}>${k}</${cat.key}><${cat.fields[1]}>${v}</${cat.fields[1]}></${cat.rtype}>`;
    const f1 = cat.fields[1];
    it(`${cat.rtype}: DNLD replaces, ADD/UPD upsert, DEL removes by key, RESP replaces`, async () => {
      expect(await apply(refXml(cat.rtype, 'DNLD', [rec('A', 'a1'), rec('B', 'b1')]))).toEqual({ outcome: 'applied' });
      expect(await keys(cat.rtype)).toEqual(['A', 'B']);
      await apply(refXml(cat.rtype, 'ADD', [rec('C', 'c1')]));
      await apply(refXml(cat.rtype, 'UPD', [rec('A', 'a2')]));
      const rows = await listCategory(db, cat.rtype);
      expect(rows.map((r) => [r.rkey, cat.repeated.includes(f1) ? (r.record[f1] as string[])[0] : r.record[f1]])).toEqual([
        ['A', 'a2'],
        ['B', 'b1'],
        ['C', 'c1'],
      ]);
      expect(rows[0].lastMsgId).toBe(msgId);
      await apply(refXml(cat.rtype, 'DEL', [`<${cat.rtype}><${cat.key}>B</${cat.key}></${cat.rtype}>`]));
      expect(await keys(cat.rtype)).toEqual(['A', 'C']);
      await apply(refXml(cat.rtype, 'RESP', [rec('D', 'd1')]));
      expect(await keys(cat.rtype)).toEqual(['D']);
    });
  }
});

describe('semantics', () => {
  it('a DNLD after ADDs removes what the DNLD lacks, and only in its own category', async () => {
    await apply(refXml('CLST', 'ADD', ['<CLST><CCOD>C1</CCOD></CLST>', '<CLST><CCOD>C2</CCOD></CLST>']));
    await apply(refXml('CHLT', 'ADD', ['<CHLT><CCOD>C1</CCOD></CHLT>']));
    await apply(refXml('CLST', 'DNLD', ['<CLST><CCOD>C2</CCOD></CLST>']));
    expect(await keys('CLST')).toEqual(['C2']);
    expect(await keys('CHLT')).toEqual(['C1']);
  });

  it('an empty tag stores null ("not available") and deletes nothing', async () => {
    await apply(refXml('GLST', 'ADD', ['<GLST><GCOD>G1</GCOD><GTNM>Gate 1</GTNM></GLST>']));
    await apply(refXml('GLST', 'UPD', ['<GLST><GCOD>G1</GCOD><GTNM/></GLST>']));
    const [row] = await listCategory(db, 'GLST');
    expect(row.record).toEqual({ GCOD: 'G1', GTNM: null });
  });

  it('DEL with the key only; an unknown key is no error', async () => {
    await apply(refXml('AIRC', 'ADD', ['<AIRC><ITAT>738</ITAT><ICAT>B738</ICAT></AIRC>']));
    expect(await apply(refXml('AIRC', 'DEL', ['<AIRC><ITAT>738</ITAT></AIRC>', '<AIRC><ITAT>999</ITAT></AIRC>']))).toEqual({ outcome: 'applied' });
    expect(await keys('AIRC')).toEqual([]);
  });

  it('an empty RESP (RECS=0) empties the category', async () => {
    await apply(refXml('SLST', 'ADD', ['<SLST><SCOD>S1</SCOD></SLST>']));
    await apply(refXml('SLST', 'RESP', []));
    expect(await keys('SLST')).toEqual([]);
  });

  it('a message with a wrong RECS writes nothing (PROTOCOL)', async () => {
    await apply(refXml('FLTL', 'ADD', ['<FLTL><FTYP>P</FTYP></FLTL>']));
    const r = await apply(refXml('FLTL', 'DNLD', ['<FLTL><FTYP>C</FTYP></FLTL>'], 2));
    expect(r).toMatchObject({ outcome: 'failed', failure: { cls: 'PROTOCOL' } });
    expect(await keys('FLTL')).toEqual(['P']);
  });

  it('repeated children survive the round trip through jsonb', async () => {
    await apply(
      refXml('AIRL', 'ADD', ['<AIRL><ITOP>CX</ITOP><TRML MVIN="A" FLIN="I">T3A</TRML><TRML MVIN="D" FLIN="I">T3B</TRML><OGRP>ONE WORLD</OGRP><SUBC><CODE>1</CODE><NAME>n</NAME></SUBC></AIRL>']),
    );
    const [row] = await listCategory(db, 'AIRL');
    expect(row.record).toEqual({
      ITOP: 'CX',
      TRML: [
        { '@MVIN': 'A', '@FLIN': 'I', value: 'T3A' },
        { '@MVIN': 'D', '@FLIN': 'I', value: 'T3B' },
      ],
      OGRP: ['ONE WORLD'],
      SUBC: [{ CODE: '1', NAME: 'n' }],
    });
  });
});

const rsta = (styp: string, recs: string[]) =>
  `<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261201080000</DTTM><TYPE>RSTA</TYPE><STYP>${styp}</STYP></META>${recs.map((r) => `<RSTA>${r}</RSTA>`).join('')}</MSG>`;

describe('RSTA', () => {
  const at = (iso: string) => new Date(iso);
  const gates = async (iso: string) => Object.fromEntries((await statusAt(db, { type: 'GATE', at: at(iso) })).map((r) => [r.rsid, r.status]));

  it('windows answered at query time; the last message wins; a missing status deletes nothing', async () => {
    await apply(refXml('GLST', 'DNLD', ['<GLST><GCOD>20</GCOD></GLST>', '<GLST><GCOD>21</GCOD></GLST>']));
    await apply(rsta('RESP', ['<RTYP>GATE</RTYP><RSID>21</RSID><STAT>D</STAT><STDT>01DEC261000</STDT><EDDT>01DEC261200</EDDT>', '<RTYP>GATE</RTYP><RSID>22</RSID><STAT>D</STAT>']));
    expect(await gates('2026-12-01T01:00:00Z')).toEqual({ 20: 'E', 21: 'E', 22: 'D' }); // 09:00 local
    expect(await gates('2026-12-01T02:00:00Z')).toEqual({ 20: 'E', 21: 'D', 22: 'D' }); // window start
    expect(await gates('2026-12-01T03:59:00Z')).toEqual({ 20: 'E', 21: 'D', 22: 'D' });
    expect(await gates('2026-12-01T04:00:00Z')).toEqual({ 20: 'E', 21: 'E', 22: 'D' }); // window end: enabled again
    // DNLD: a single update; 21 untouched, 22 enabled (E clears its window)
    await apply(rsta('DNLD', ['<RTYP>GATE</RTYP><RSID>22</RSID><STAT>E</STAT>']));
    expect(await gates('2026-12-01T03:00:00Z')).toEqual({ 20: 'E', 21: 'D', 22: 'E' });
    // other types are separate
    expect(await statusAt(db, { type: 'STND', at: NOW })).toEqual([]);
  });

  it('no STDT = from the message time (META/DTTM 08:00 local), not from when it was processed', async () => {
    await apply(rsta('DNLD', ['<RTYP>BELT</RTYP><RSID>3</RSID><STAT>D</STAT>']), new Date('2026-12-01T05:00:00Z'));
    const st = async (iso: string) => (await statusAt(db, { type: 'BELT', at: at(iso) }))[0].status;
    expect([await st('2026-11-30T23:59:59Z'), await st('2026-12-01T00:00:00Z'), await st('2027-01-01T00:00:00Z')]).toEqual(['E', 'D', 'D']);
  });

  it('GET /resources/status and /reference routes', async () => {
    await apply(refXml('GLST', 'DNLD', ['<GLST><GCOD>20</GCOD><GTNM>Gate 20</GTNM></GLST>']));
    await apply(rsta('DNLD', ['<RTYP>GATE</RTYP><RSID>20</RSID><STAT>D</STAT><STDT>01DEC261000</STDT><EDDT>01DEC261200</EDDT>']));
    const app = Fastify();
    await app.register(refdataRoutes, { db, clock: new ManualClock('2026-12-01T03:00:00Z') });
    const get = async (url: string) => {
      const r = await app.inject({ method: 'GET', url });
      return [r.statusCode, r.json()];
    };
    expect(await get('/resources/status?type=gate')).toMatchObject([200, { type: 'GATE', resources: [{ rsid: '20', status: 'D' }] }]);
    expect(await get('/resources/status?type=GATE&at=2026-12-01T04:00:00Z')).toMatchObject([200, { resources: [{ rsid: '20', status: 'E' }] }]);
    expect((await get('/resources/status?type=PIER'))[0]).toBe(400);
    expect((await get('/resources/status?type=GATE&at=yesterday'))[0]).toBe(400);
    expect(await get('/reference/glst')).toMatchObject([200, { rtype: 'GLST', key: 'GCOD', count: 1, records: [{ rkey: '20', record: { GTNM: 'Gate 20' } }] }]);
    expect(await get('/reference/GLST/20')).toMatchObject([200, { rkey: '20', record: { GCOD: '20' } }]);
    expect(await get('/reference/GLST/99')).toMatchObject([404, { error: 'not-found' }]);
    expect(await get('/reference/FLOP')).toMatchObject([404, { error: 'unknown-rtype' }]);
    await app.close();
  });
});

describe('SCHS', () => {
  const schs = (styp: string, snam: string, flnos: string[]) =>
    `<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261201080000</DTTM><TYPE>SCHS</TYPE><STYP>${styp}</STYP></META><SCHS><SNAM>${snam}</SNAM><APCD>CTU</APCD><SDAT>10SEP26</SDAT><EDAT>10JUN27</EDAT><RECS>${flnos.length}</RECS>${flnos.map((f) => `<FLTR><FLNO>${f}</FLNO></FLTR>`).join('')}</SCHS></MSG>`;
  it('each DNLD/RESP replaces its season only', async () => {
    await apply(schs('DNLD', 'Winter', ['CA1', 'CA2']));
    await apply(schs('DNLD', 'Summer', ['CA3']));
    await apply(schs('RESP', 'Winter', ['CA4']));
    const r = await sql<{ snam: string; flights: unknown }>`SELECT snam, flights FROM schs_season ORDER BY snam`.execute(db);
    expect(r.rows).toEqual([
      { snam: 'Summer', flights: [{ FLNO: 'CA3', ROUT: [], ERUT: [] }] },
      { snam: 'Winter', flights: [{ FLNO: 'CA4', ROUT: [], ERUT: [] }] },
    ]);
  });
});
