import { describe, expect, it } from 'vitest';
import { decodeRefMessage } from '../../../lib/refdata/decode.ts';
import { REF_CATEGORIES, refCategory, type RefCategory } from '../../../lib/sis/refdata-keys.ts';
import { decodeEnvelope } from '../../../lib/sis/envelope.ts';
import { refXml } from '../../support/refdata-ctx.ts';

const decode = (xml: string, rtype?: string) => {
  const env = decodeEnvelope(xml);
  return decodeRefMessage(env, refCategory(rtype ?? env.type)!);
};
const protocolOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { failure?: { cls: string; detail: string } }).failure;
  }
  return undefined;
};

/** A record of a category with every known field: key = `${rtype}-${n}`, repeated fields twice. */
function fullRecord(cat: RefCategory, n: number): string {
  const parts = cat.fields.map((f, i) => {
    if (i === 0) return `<${f}>${cat.rtype}-${n}</${f}>`;
    if (cat.repeated.includes(f)) return `<${f}>${f}a</${f}><${f}>${f}b</${f}>`;
    return `<${f}> ${f} value </${f}>`;
  });
  return `<${cat.rtype}>${parts.join('')}</${cat.rtype}>`;
}

describe('key table', () => {
  it('has the 13 categories of the design and the 10 further TYPEs, each with its key first', () => {
    expect(REF_CATEGORIES.filter((c) => c.design).map((c) => `${c.rtype}/${c.key}`)).toEqual([
      'COUL/COUC',
      'ARPT/ITCD',
      'AIRL/ITOP',
      'AIRC/ITAT',
      'REGN/RNUM',
      'ORGN/OGID',
      'FLTL/FTYP',
      'TLST/TCOD',
      'GLST/GCOD',
      'SLST/SCOD',
      'CLST/CCOD',
      'BLST/BCOD',
      'CHLT/CCOD',
    ]);
    expect(REF_CATEGORIES.filter((c) => !c.design).map((c) => `${c.rtype}/${c.key}`)).toEqual([
      'ABDG/ABCD',
      'ABNR/ANRC',
      'CITY/ITCD',
      'DLYL/DCOD',
      'HLTR/HLTC',
      'PLST/PCOD',
      'REGL/REGC',
      'STTS/STTC',
      'VIPL/VPCD',
      'VIPS/VSCD',
    ]);
    for (const c of REF_CATEGORIES) for (const r of c.repeated) expect(c.fields).toContain(r);
  });
});

describe('decodeRefMessage, every category', () => {
  for (const cat of REF_CATEGORIES) {
    it(`${cat.rtype}: key ${cat.key}, scalars trimmed, repeated children as arrays`, () => {
      const m = decode(refXml(cat.rtype, 'DNLD', [fullRecord(cat, 1), fullRecord(cat, 2)]));
      expect(m.op).toBe('replace');
      expect(m.unknownTags).toEqual([]);
      expect(m.records.map((r) => r.rkey)).toEqual([`${cat.rtype}-1`, `${cat.rtype}-2`]);
      const f = m.records[0].fields;
      expect(Object.keys(f).sort()).toEqual([...cat.fields].sort());
      for (const tag of cat.fields.slice(1)) {
        if (cat.repeated.includes(tag)) expect(f[tag]).toEqual([`${tag}a`, `${tag}b`]);
        else expect(f[tag]).toBe(`${tag} value`);
      }
    });
  }
});

describe('decodeRefMessage, shapes', () => {
  it('maps STYP to the operation', () => {
    const rec = '<BLST><BCOD>B1</BCOD></BLST>';
    expect(['DNLD', 'RESP', 'ADD', 'UPD', 'DEL'].map((s) => decode(refXml('BLST', s, [rec])).op)).toEqual(['replace', 'replace', 'upsert', 'upsert', 'delete']);
  });

  it('keeps attributes and nested children (AIRL TRML@MVIN@FLIN, SUBC, OGRP)', () => {
    const m = decode(
      refXml('AIRL', 'ADD', [
        `<AIRL><ITOP>CX</ITOP><ONAM>CATHAY</ONAM><TRML MVIN = "A" FLIN="I">T3A</TRML><TRML MVIN="" FLIN="">
        </TRML><OGRP>ONE WORLD</OGRP><SUBC><CODE>001</CODE><NAME>First</NAME><NAMC>第一</NAMC></SUBC><DORI/></AIRL>`,
      ]),
    );
    expect(m.records[0].fields).toEqual({
      ITOP: 'CX',
      ONAM: 'CATHAY',
      TRML: [
        { '@MVIN': 'A', '@FLIN': 'I', value: 'T3A' },
        { '@MVIN': null, '@FLIN': null, value: null },
      ],
      OGRP: ['ONE WORLD'],
      SUBC: [{ CODE: '001', NAME: 'First', NAMC: '第一' }],
      DORI: null,
    });
  });

  it('keeps ARPT/CITY ABBR@CODE, COUL REGC*, ORGN OCAT*, ABDG STND*/GATE* (absent → [])', () => {
    const arpt = decode(refXml('ARPT', 'DNLD', ['<ARPT><ITCD>SHA</ITCD><ABBR CODE="ABR1">HU</ABBR><ABBR CODE="ABR2">沪</ABBR></ARPT>']));
    expect(arpt.records[0].fields.ABBR).toEqual([
      { '@CODE': 'ABR1', value: 'HU' },
      { '@CODE': 'ABR2', value: '沪' },
    ]);
    const city = decode(refXml('CITY', 'DNLD', ['<CITY><ITCD>SHA</ITCD></CITY>']));
    expect(city.records[0].fields.ABBR).toEqual([]);
    const coul = decode(refXml('COUL', 'UPD', ['<COUL><COUC>CN</COUC><REGC>ASIA</REGC></COUL>']));
    expect(coul.records[0].fields.REGC).toEqual(['ASIA']);
    const abdg = decode(refXml('ABDG', 'DNLD', ['<ABDG><ABCD>112</ABCD><STND>112</STND><STND>111</STND><GATE>11A</GATE></ABDG>']));
    expect(abdg.records[0].fields).toMatchObject({ STND: ['112', '111'], GATE: ['11A'] });
  });

  it('an empty tag is "not available" (null), never a delete; both empty forms', () => {
    const m = decode(refXml('GLST', 'UPD', ['<GLST><GCOD>G1</GCOD><GTNM></GTNM><GNMC/><GCAT>  </GCAT></GLST>']));
    expect(m.records[0].fields).toEqual({ GCOD: 'G1', GTNM: null, GNMC: null, GCAT: null });
  });

  it('records are direct children only: a REGL record has a child named REGN', () => {
    const m = decode(refXml('REGL', 'DNLD', ['<REGL><REGC>ASIAPC</REGC><REGN>ASIA PACIFIC</REGN><RGNC>亚太</RGNC></REGL>']));
    expect(m.records).toEqual([{ rkey: 'ASIAPC', fields: { REGC: 'ASIAPC', REGN: 'ASIA PACIFIC', RGNC: '亚太' } }]);
  });

  it('CLST and CHLT share tags; only the TYPE tells them apart', () => {
    const rec = (t: string) => `<${t}><CCOD>C01</CCOD><CNMC>名</CNMC><CTML>T1</CTML><CCAT>X</CCAT></${t}>`;
    const clst = decode(refXml('CLST', 'ADD', [rec('CLST')]));
    const chlt = decode(refXml('CHLT', 'ADD', [rec('CHLT')]));
    expect([clst.rtype, chlt.rtype]).toEqual(['CLST', 'CHLT']);
    expect(clst.records[0].fields).toEqual(chlt.records[0].fields);
    // a CHLT record inside a CLST message is not a CLST record
    expect(protocolOf(() => decode(refXml('CLST', 'ADD', [rec('CHLT')], 1)))?.detail).toMatch(/RECS=1 but .* 0 record/);
  });

  it('a DEL record may carry only its key', () => {
    const m = decode(refXml('AIRC', 'DEL', ['<AIRC><ITAT>738</ITAT></AIRC>']));
    expect(m.records.map((r) => r.rkey)).toEqual(['738']);
  });

  it('reports tags the key table does not know, and still keeps them', () => {
    const m = decode(refXml('BLST', 'ADD', ['<BLST><BCOD>B1</BCOD><NEWT>x</NEWT></BLST>']));
    expect(m.unknownTags).toEqual(['NEWT']);
    expect(m.records[0].fields.NEWT).toBe('x');
  });

  it('a key carried twice keeps its last occurrence', () => {
    const m = decode(refXml('BLST', 'ADD', ['<BLST><BCOD>B1</BCOD><BTNM>one</BTNM></BLST>', '<BLST><BCOD>B1</BCOD><BTNM>two</BTNM></BLST>']));
    expect(m.records).toEqual([{ rkey: 'B1', fields: { BCOD: 'B1', BTNM: 'two' } }]);
  });

  it('RECS=0 is an empty category', () => {
    expect(decode(refXml('SLST', 'RESP', [])).records).toEqual([]);
  });

  const bad: [string, string, RegExp][] = [
    ['RECS says 1, two records (AIRC DNLD sample)', refXml('AIRC', 'DNLD', ['<AIRC><ITAT>1</ITAT></AIRC>', '<AIRC><ITAT>2</ITAT></AIRC>'], 1), /RECS=1 but the message carries 2/],
    ['RECS says 2, one record (FLTL ADD sample)', refXml('FLTL', 'ADD', ['<FLTL><FTYP>P</FTYP></FLTL>'], 2), /RECS=2 but the message carries 1/],
    ['RECS missing', refXml('FLTL', 'ADD', ['<FLTL><FTYP>P</FTYP></FLTL>'], null), /RECS missing/],
    ['RECS not a number', refXml('FLTL', 'ADD', []).replace('<RECS>0</RECS>', '<RECS>x</RECS>'), /RECS="x"/],
    ['RECS beyond 9999', refXml('FLTL', 'ADD', []).replace('<RECS>0</RECS>', '<RECS>10000</RECS>'), /RECS="10000"/],
    ['key missing', refXml('TLST', 'ADD', ['<TLST><TNAM>T</TNAM></TLST>']), /record 1: key TCOD="" missing or empty/],
    ['key empty', refXml('TLST', 'DEL', ['<TLST><TCOD> </TCOD></TLST>']), /key TCOD/],
    ['unknown STYP', refXml('TLST', 'XXX', []), /STYP="XXX"/],
  ];
  for (const [name, xml, detail] of bad)
    it(`PROTOCOL: ${name}`, () => {
      const f = protocolOf(() => decode(xml));
      expect(f?.cls).toBe('PROTOCOL');
      expect(f?.detail).toMatch(detail);
    });
});
