// All reference-data (and SCHS) messages of the real sample corpus, applied through the handlers
// in file order with fresh message ids: the known-bad samples fail with the right class, all the
// others apply, and the tables end with the expected contents. Skipped visibly without the corpus.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refCategory, REF_CATEGORIES } from '../../lib/sis/refdata-keys.ts';
import { listCategory } from '../../lib/refdata/store.ts';
import { testConfig } from '../support/env.ts';
import { applyMessage, testDb, type ApplyResult } from '../support/refdata-ctx.ts';
import { corpusAvailable, corpusMessages, CORPUS_DIR } from '../support/refdata-corpus.ts';

const available = corpusAvailable();
if (!available) console.warn(`[refdata-corpus] SKIPPED: sample corpus not found at ${CORPUS_DIR}`);

describe.skipIf(!available)('corpus reference messages through the refdata handlers', () => {
  const db = testDb();
  const outcomes: { where: string; type: string; result: ApplyResult }[] = [];

  beforeAll(async () => {
    await sql`TRUNCATE ref_master, res_status, schs_season, req_track`.execute(db);
    let msgId = 50_000;
    for (const m of corpusMessages()) {
      const type = /<TYPE>\s*(\w+)\s*<\/TYPE>/.exec(m.xml)?.[1] ?? '';
      if (!refCategory(type) && type !== 'SCHS' && type !== 'RSTA') continue;
      const result = await applyMessage(db, { xml: m.xml, msgId: ++msgId, now: new Date('2026-12-01T00:00:00Z'), config: testConfig() });
      outcomes.push({ where: `${m.file}#${m.index}`, type, result });
    }
  });
  afterAll(() => db.destroy());

  it('covers all 23 reference TYPEs and SCHS', () => {
    expect(new Set(outcomes.map((o) => o.type))).toEqual(new Set([...REF_CATEGORIES.map((c) => c.rtype), 'SCHS']));
  });

  it('the known-bad samples fail with the right class; every other one applies', () => {
    const failed = outcomes.filter((o) => o.result.outcome !== 'applied').map((o) => [o.where, o.result.outcome === 'failed' ? o.result.failure.cls : o.result.outcome]);
    expect(failed).toEqual([
      ['INSERT_CMINMSGS_ABNR.sql#2', 'MALFORMED'], // junk after </MSG>
      ['INSERT_CMINMSGS_AIRC.sql#0', 'PROTOCOL'], // RECS 1, 2 records
      ['INSERT_CMINMSGS_FLTL.sql#1', 'PROTOCOL'], // RECS 2, 1 record
    ]);
  });

  it('ends with the expected table contents', async () => {
    const contents: Record<string, string[]> = {};
    for (const c of REF_CATEGORIES) contents[c.rtype] = (await listCategory(db, c.rtype)).map((r) => r.rkey);
    expect(contents).toEqual(EXPECTED);
  });

  it('keeps repeated children and attributes of the samples', async () => {
    const airl = Object.fromEntries((await listCategory(db, 'AIRL')).map((r) => [r.rkey, r.record]));
    expect(airl.CX).toMatchObject({
      TRML: [
        { '@MVIN': 'A', '@FLIN': 'I', value: 'T3A' },
        { '@MVIN': 'D', '@FLIN': 'I', value: 'T3B' },
      ],
      OGRP: ['ONE WORLD', 'CHINA WORLD'],
      SUBC: [],
    });
    expect(airl.UA).toMatchObject({
      TRML: [{ '@MVIN': null, '@FLIN': null, value: null }],
      SUBC: [
        { CODE: '001', NAME: 'First Subcompany', NAMC: '第一子公司' },
        { CODE: '002', NAME: 'Second Subcompany', NAMC: '第二子公司' },
      ],
    });
    const abdg = Object.fromEntries((await listCategory(db, 'ABDG')).map((r) => [r.rkey, r.record]));
    expect(abdg['112']).toMatchObject({ STND: ['112', '111'], GATE: ['11A', '11B'], AHGT: null });
    const arpt = Object.fromEntries((await listCategory(db, 'ARPT')).map((r) => [r.rkey, r.record]));
    expect(arpt.MEL).toMatchObject({ ABBR: [], ANMC: '墨尔本国际机场' });
    const seasons = await sql<{ snam: string; apcd: string; recs: number; n: number }>`
      SELECT snam, apcd, recs, jsonb_array_length(flights) AS n FROM schs_season`.execute(db);
    expect(seasons.rows).toEqual([{ snam: 'Winter', apcd: 'CTU', recs: 2, n: 2 }]);
  });
});

// From reading the samples, per file in statement order (ABDG also in INSERT_CMINMSGS_SCHD.sql).
// Empty categories end with a DEL of what the earlier messages wrote.
const EXPECTED: Record<string, string[]> = {
  COUL: [],
  ARPT: ['MEL', 'PEK'],
  AIRL: ['AA', 'AB', 'CX', 'UA'],
  AIRC: ['310'],
  REGN: ['A40LF', 'A6AIN', 'B2290'],
  ORGN: [],
  FLTL: [],
  TLST: [],
  GLST: [],
  SLST: [],
  CLST: ['C12'],
  BLST: ['b14'],
  CHLT: ['C11'],
  ABDG: ['112', '212', '214'],
  ABNR: ['MACHINE', 'WEATHER'],
  CITY: ['CTU', 'HET', 'TEST'],
  DLYL: [],
  HLTR: ['DIT', 'MNTT', 'WCH'],
  PLST: ['C', 'D'],
  REGL: [],
  STTS: ['BOR', 'CANCEL', 'DELAY'],
  VIPL: ['Tom'],
  VIPS: ['LIM2'],
};
