import { describe, expect, it } from 'vitest';
import { decodeRsta, statusOf } from '../../../lib/refdata/rsta.ts';
import { decodeEnvelope } from '../../../lib/sis/envelope.ts';

const TZ = 'Asia/Shanghai';
const NOW = new Date('2026-12-01T00:00:00Z'); // 08:00 local
const msg = (styp: string, records: string, recs = '') =>
  decodeEnvelope(`<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261201080000</DTTM><TYPE>RSTA</TYPE><STYP>${styp}</STYP></META>${recs}${records}</MSG>`);
const rec = (inner: string) => `<RSTA>${inner}</RSTA>`;
const fail = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { failure?: { cls: string; detail: string } }).failure;
  }
};

describe('decodeRsta', () => {
  it('D with a window in local time; E clears any window; no STDT = from the message time', () => {
    const u = decodeRsta(
      msg(
        'RESP',
        rec('<RTYP>GATE</RTYP><RSID>21</RSID><STAT>D</STAT><STDT>01DEC261000</STDT><EDDT>01dec261200</EDDT><REMK>paint</REMK>') +
          rec('<RTYP>STND</RTYP><RSID>212</RSID><STAT>E</STAT><STDT>01DEC261000</STDT>') +
          rec('<RTYP>BELT</RTYP><RSID>3</RSID><STAT>D</STAT>'),
        '<RECS>3</RECS>',
      ),
      TZ,
    );
    expect(u).toEqual([
      { rtyp: 'GATE', rsid: '21', stat: 'D', stdt: new Date('2026-12-01T02:00:00Z'), eddt: new Date('2026-12-01T04:00:00Z'), remk: 'paint' },
      { rtyp: 'STND', rsid: '212', stat: 'E', stdt: null, eddt: null, remk: null },
      { rtyp: 'BELT', rsid: '3', stat: 'D', stdt: NOW, eddt: null, remk: null },
    ]);
  });

  const bad: [string, string, RegExp][] = [
    ['RTYP outside BELT/CNTR/GATE/STND', rec('<RTYP>PIER</RTYP><RSID>1</RSID><STAT>D</STAT>'), /RTYP="PIER"/],
    ['RSID empty', rec('<RTYP>GATE</RTYP><RSID/><STAT>D</STAT>'), /RSID/],
    ['STAT not E/D', rec('<RTYP>GATE</RTYP><RSID>1</RSID><STAT>X</STAT>'), /STAT="X"/],
    ['bad time', rec('<RTYP>GATE</RTYP><RSID>1</RSID><STAT>D</STAT><STDT>32DEC261000</STDT>'), /STDT="32DEC261000"/],
    ['window ends before it starts', rec('<RTYP>GATE</RTYP><RSID>1</RSID><STAT>D</STAT><STDT>01DEC261000</STDT><EDDT>01DEC260900</EDDT>'), /EDDT/],
    ['no record (RECS=0)', '<RECS>0</RECS>', /no RSTA record/],
  ];
  for (const [name, records, detail] of bad)
    it(`PROTOCOL: ${name}`, () => {
      const f = fail(() => decodeRsta(msg('DNLD', records), TZ));
      expect(f?.cls).toBe('PROTOCOL');
      expect(f?.detail).toMatch(detail);
    });

  it('no STDT and EDDT already past at the message time: stored as expired, never refused', () => {
    // sent at 08:00 local, "disabled until 07:30": the window was over when it was sent
    const u = decodeRsta(msg('DNLD', rec('<RTYP>GATE</RTYP><RSID>7</RSID><STAT>D</STAT><EDDT>01DEC260730</EDDT>')), TZ);
    expect(u).toEqual([{ rtyp: 'GATE', rsid: '7', stat: 'D', stdt: null, eddt: new Date('2026-11-30T23:30:00Z'), remk: null }]);
    expect(statusOf(u[0], NOW)).toBe('E');
    // the decode depends on the message only: the same input gives the same result whatever the time
    const later = decodeRsta(msg('DNLD', rec('<RTYP>GATE</RTYP><RSID>8</RSID><STAT>D</STAT><EDDT>01DEC260900</EDDT>')), TZ);
    expect(later[0]).toMatchObject({ stdt: NOW, eddt: new Date('2026-12-01T01:00:00Z') });
  });

  it('RECS, when present, must match', () => {
    expect(fail(() => decodeRsta(msg('RESP', rec('<RTYP>GATE</RTYP><RSID>1</RSID><STAT>E</STAT>'), '<RECS>2</RECS>'), TZ))?.cls).toBe('PROTOCOL');
  });
});

describe('statusOf: D applies in [STDT, EDDT), enabled otherwise, computed at query time', () => {
  const window = { stat: 'D' as const, stdt: new Date('2026-12-01T02:00:00Z'), eddt: new Date('2026-12-01T04:00:00Z') };
  const cases: [string, typeof window | undefined, string, 'E' | 'D'][] = [
    ['no status at all → enabled', undefined, '2026-12-01T03:00:00Z', 'E'],
    ['before the window', window, '2026-12-01T01:59:59Z', 'E'],
    ['at the window start', window, '2026-12-01T02:00:00Z', 'D'],
    ['inside the window', window, '2026-12-01T03:30:00Z', 'D'],
    ['one ms before the window end', window, '2026-12-01T03:59:59.999Z', 'D'],
    ['at the window end (exclusive)', window, '2026-12-01T04:00:00Z', 'E'],
    ['after the window', window, '2026-12-02T00:00:00Z', 'E'],
    ['open-ended D, long after', { ...window, eddt: null as unknown as Date }, '2027-06-01T00:00:00Z', 'D'],
    ['E', { stat: 'E' as unknown as 'D', stdt: null as unknown as Date, eddt: null as unknown as Date }, '2026-12-01T03:00:00Z', 'E'],
  ];
  for (const [name, row, at, expected] of cases) it(name, () => expect(statusOf(row, new Date(at))).toBe(expected));
});
