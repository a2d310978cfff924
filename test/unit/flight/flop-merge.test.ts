// FLOP per STYP, table-driven: set, change, empty/clear forms; after every step the same
// message applied again changes nothing (G-FLOP-IDEMPOTENT). Fixtures are hand-written.
import { describe, expect, it } from 'vitest';
import { decodeFlop } from '../../../lib/flight/decode.ts';
import { applyFlop } from '../../../lib/flight/merge.ts';
import { FLOP_STYPS } from '../../../lib/flight/rules.ts';
import type { FlightState } from '../../../lib/flight/state.ts';
import { PipelineError } from '../../../lib/core/errors.ts';
import { baseState, CTX, flopEnv, t, TZ } from './helpers.ts';

type Step = [body: string, expect: Record<string, unknown>];
/** Per STYP: a start state (extra data) and steps; `undefined` in expect = key absent (cleared). */
const CASES: Record<string, { start?: FlightState['data']; steps: Step[] }> = {
  ACFT: {
    steps: [
      ['<ACFT>358</ACFT>', { ACFT: '358' }],
      ['<ACFT> 359 </ACFT>', { ACFT: '359' }],
    ],
  },
  FLTY: {
    steps: [
      ['<FLTY>C</FLTY>', { FLTY: 'C' }],
      ['<FLTY>W</FLTY>', { FLTY: 'W' }],
    ],
  },
  FLIN: {
    steps: [
      ['<FLIN>I</FLIN>', { FLIN: 'I' }],
      ['<FLIN>D</FLIN>', { FLIN: 'D' }],
    ],
  },
  ACTT: {
    steps: [
      ['<ACTT>01DEC260810</ACTT>', { ACTT: t('2026-12-01 08:10') }],
      ['<ACTT>01dec260812</ACTT>', { ACTT: t('2026-12-01 08:12') }],
      ['<ACTT/>', { ACTT: undefined }],
    ],
  },
  ESTT: {
    steps: [
      ['<ESTT>01DEC260810</ESTT>', { ESTT: t('2026-12-01 08:10') }],
      ['<ESTT></ESTT>', { ESTT: undefined }],
    ],
  },
  FINT: {
    steps: [
      ['<FINT>01DEC260810</FINT>', { FINT: t('2026-12-01 08:10') }],
      ['<FINT></FINT>', { FINT: undefined }],
    ],
  },
  MAXP: {
    steps: [
      ['<MAXP>130</MAXP>', { MAXP: 130 }],
      ['<MAXP>180</MAXP>', { MAXP: 180 }],
      ['<MAXP/>', { MAXP: undefined }],
    ],
  },
  TRML: {
    steps: [
      ['<TRML>T3</TRML>', { TRML: 'T3' }],
      ['<TRML></TRML>', { TRML: undefined }],
    ],
  },
  RENO: {
    steps: [
      ['<RENO>B1234</RENO>', { RENO: 'B1234' }],
      ['<RENO></RENO>', { RENO: undefined }],
    ],
  },
  BOTM: {
    steps: [
      ['<BOTM>01DEC260830</BOTM>', { BOTM: t('2026-12-01 08:30'), BOARDING: true }],
      ['<BOTM></BOTM>', { BOTM: undefined, BOARDING: false }],
    ],
  },
  LACL: {
    steps: [
      ['<LACL>01DEC260840</LACL>', { LACL: t('2026-12-01 08:40'), LAST_CALL: true }],
      ['<LACL/>', { LACL: undefined, LAST_CALL: false }],
    ],
  },
  CNCL: {
    steps: [
      ['<CNCL>01DEC260700</CNCL>', { CNCL: t('2026-12-01 07:00'), CANCELLED: true }],
      ['<CNCL></CNCL>', { CNCL: t('2026-12-01 07:00'), CANCELLED: false }],
      ['<CNCL>01DEC260705</CNCL>', { CNCL: t('2026-12-01 07:05'), CANCELLED: true }],
    ],
  },
  FDIV: {
    steps: [
      ['<FDIV DDES="HKG" DDIR="TO">WEATHER</FDIV>', { DDES: 'HKG', DDIR: 'TO', FDIV: 'WEATHER' }],
      ['<FDIV DDES="CAN" DDIR="">FOG</FDIV>', { DDES: 'CAN', DDIR: undefined, FDIV: 'FOG' }],
      ['<FDIV DDES = "CAN" DDIR="from"></FDIV>', { DDES: 'CAN', DDIR: 'FROM', FDIV: undefined }],
      ['<FDIV DDES="" DDIR="TO">WEATHER</FDIV>', { DDES: undefined, DDIR: undefined, FDIV: undefined }],
    ],
  },
  FRET: {
    steps: [
      ['<FRET REID="G">DOOR FAULT</FRET>', { REID: 'G', FRET: 'DOOR FAULT' }],
      ['<FRET REID="A"></FRET>', { REID: 'A', FRET: undefined }],
      ['<FRET></FRET>', { REID: undefined, FRET: undefined }],
      ['<FRET REID="G">X</FRET>', { REID: 'G', FRET: 'X' }],
      ['', { REID: undefined, FRET: undefined }],
    ],
  },
  FLAB: {
    steps: [
      ['<FLAB ARES="G">POOR VISIBILITY</FLAB>', { ARES: 'G', FLAB: 'POOR VISIBILITY' }],
      ['<FLAB ARES="O"></FLAB>', { ARES: 'O', FLAB: undefined }],
      ['<FLAB ARES=""></FLAB>', { ARES: undefined, FLAB: undefined }],
      ['<FLAB ARES="G">X</FLAB>', { ARES: 'G', FLAB: 'X' }],
      ['<FLAB></FLAB>', { ARES: undefined, FLAB: undefined }],
      ['<FLAB ARES="G">X</FLAB>', { ARES: 'G' }],
      ['', { ARES: undefined, FLAB: undefined }],
    ],
  },
  HNAG: {
    start: { FHAG: 'F0', PHAG: 'P0', MHAG: 'M0' },
    steps: [
      ['<FHAG>F1</FHAG>', { FHAG: 'F1', PHAG: 'P0', MHAG: 'M0' }],
      ['<PHAG></PHAG><MHAG>M2</MHAG>', { FHAG: 'F1', PHAG: undefined, MHAG: 'M2' }],
      ['<FHAG></FHAG><PHAG></PHAG><MHAG></MHAG>', { FHAG: undefined, PHAG: undefined, MHAG: undefined }],
    ],
  },
  TAOP: {
    steps: [
      ['<TAOP>CA</TAOP><TAFL>CA201</TAFL><TAID>6213345</TAID>', { TAOP: 'CA', TAFL: 'CA201', TAID: '6213345' }],
      ['<TAFL>CA203</TAFL><TAID>0062</TAID>', { TAOP: 'CA', TAFL: 'CA203', TAID: '62' }],
      ['<TAOP>CA</TAOP><TAFL></TAFL><TAID>62</TAID>', { TAOP: undefined, TAFL: undefined, TAID: undefined }],
    ],
  },
  VIPP: {
    steps: [
      ['<VIPP>2</VIPP><VIPR>3</VIPR>', { VIPP: '2', VIPR: '3' }],
      ['<VIPP></VIPP><VIPR>3</VIPR>', { VIPP: undefined, VIPR: '3' }],
      ['<VIPP>2</VIPP>', { VIPP: '2', VIPR: '3' }],
      ['<VIPP/><VIPR/>', { VIPP: undefined, VIPR: undefined }],
    ],
  },
  EXSS: {
    steps: [
      ['<EXSC>DELAY</EXSC><EXSR>one hour</EXSR>', { EXSC: 'DELAY', EXSR: 'one hour' }],
      ['<EXSC></EXSC><EXSR></EXSR>', { EXSC: undefined, EXSR: undefined }],
    ],
  },
  PORT: {
    steps: [
      ['<PORT><POTM>01DEC260855</POTM><POID>O</POID></PORT>', { PORT_OPEN: t('2026-12-01 08:55'), PORT_CLOSE: undefined }],
      ['<PORT><POTM>01DEC260915</POTM><POID>C</POID></PORT>', { PORT_OPEN: t('2026-12-01 08:55'), PORT_CLOSE: t('2026-12-01 09:15') }],
      ['<PORT><POTM></POTM><POID>O</POID></PORT>', { PORT_OPEN: undefined, PORT_CLOSE: t('2026-12-01 09:15') }],
    ],
  },
  GTDT: {
    steps: [
      [
        '<GTDT GTNO="1"><GATE>G28</GATE><PGOT>01DEC260805</PGOT><PGCT/><GTYP>D</GTYP></GTDT><GTDT GTNO="1"><GATE>G33</GATE></GTDT>',
        {
          GTDT: [
            { GTNO: 1, GATE: 'G28', PGOT: t('2026-12-01 08:05'), GTYP: 'D' },
            { GTNO: 1, GATE: 'G33' },
          ],
        },
      ],
      ['<GTDT GTNO="2"><GATE>G1</GATE></GTDT>', { GTDT: [{ GTNO: 2, GATE: 'G1' }] }],
      ['<GTDT GTNO="0"/>', { GTDT: undefined }],
    ],
  },
  CKDT: {
    steps: [
      ['<CKDT CKNO="1"><CHKC>01</CHKC><CCLS>X</CCLS><COTM>01DEC260700</COTM><CTYP>D</CTYP></CKDT>', { CKDT: [{ CKNO: 1, CHKC: '01', CCLS: 'X', COTM: t('2026-12-01 07:00'), CTYP: 'D' }] }],
      ['<CKDT CKNO="0"></CKDT>', { CKDT: undefined }],
    ],
  },
  CLDT: {
    steps: [
      ['<CLDT CLNO="1"><BELT>B01</BELT><FBAG>01DEC260900</FBAG><BTYP>D</BTYP></CLDT>', { CLDT: [{ CLNO: 1, BELT: 'B01', FBAG: t('2026-12-01 09:00'), BTYP: 'D' }] }],
      ['<CLDT CLNO="0"/>', { CLDT: undefined }],
    ],
  },
  CHDT: {
    steps: [
      ['<CHDT CHNO="1"><CHUT>CH21</CHUT><CCLS>X</CCLS><CTYP>E</CTYP></CHDT>', { CHDT: [{ CHNO: 1, CHUT: 'CH21', CCLS: 'X', CTYP: 'E' }] }],
      ['<CHDT CHNO="0"/>', { CHDT: undefined }],
    ],
  },
  PSDT: {
    steps: [
      ['<PSDT PSNO="1"><PSST>S211</PSST><STST>01DEC260600</STST></PSDT>', { PSDT: [{ PSNO: 1, PSST: 'S211', STST: t('2026-12-01 06:00') }] }],
      ['<PSDT PSNO="0"/>', { PSDT: undefined }],
    ],
  },
  CHOT: {
    steps: [
      ['<CHOT CSNO="1"><CHTM>01DEC260810</CHTM><CHID>ON</CHID><CHST>S211</CHST></CHOT>', { CHOT: [{ CSNO: 1, CHTM: t('2026-12-01 08:10'), CHID: 'ON', CHST: 'S211' }] }],
      ['<CHOT CSNO="1"><CHTM></CHTM><CHID>ON</CHID><CHST>S211</CHST></CHOT>', { CHOT: [{ CSNO: 1, CHID: 'ON', CHST: 'S211' }] }],
      ['<CHOT/>', { CHOT: undefined }],
    ],
  },
  DELY: {
    steps: [
      [
        '<DELY CODE="YY" STRT="01DEC260805" DURA="0200">weather</DELY><DELY CODE="XX">crew</DELY>',
        {
          DELY: [
            { CODE: 'YY', STRT: t('2026-12-01 08:05'), DURA: '0200', TEXT: 'weather' },
            { CODE: 'XX', TEXT: 'crew' },
          ],
        },
      ],
      ['<DELY></DELY>', { DELY: undefined }],
    ],
  },
  ABTM: {
    steps: [
      ['<ABTM ASNO="1"><ABDG>212</ABDG><ABOP>D</ABOP><AOTM>01DEC260811</AOTM></ABTM>', { ABTM: [{ ASNO: 1, ABDG: '212', ABOP: 'D', AOTM: t('2026-12-01 08:11') }] }],
      ['<ABTM/>', { ABTM: undefined }],
    ],
  },
  ROUT: {
    steps: [
      ['<ROUT RTNO="1"><APCD>XIY</APCD><SCAT>01DEC260710</SCAT></ROUT>', { ROUT: [{ RTNO: 1, APCD: 'XIY', SCAT: t('2026-12-01 07:10') }] }],
      [[1, 2, 3, 4, 5, 6].map((i) => `<ROUT RTNO="${i}"><APCD>A${i}</APCD></ROUT>`).join(''), { ROUT: [1, 2, 3, 4].map((i) => ({ RTNO: i, APCD: `A${i}` })) }],
    ],
  },
  ERUT: {
    steps: [
      [
        [1, 2, 3, 4, 5, 6, 7].map((i) => `<ERUT RTNO="${i}"><APCD>E${i}</APCD><SCDT>01DEC26080${i}</SCDT></ERUT>`).join(''),
        { ERUT: [1, 2, 3, 4].map((i) => ({ RTNO: i, APCD: `E${i}`, SCDT: t(`2026-12-01 08:0${i}`) })) },
      ],
    ],
  },
  PSHT: {
    steps: [
      ['<PSHT PSHN="1"><PSTM>01DEC260946</PSTM><PSID>IN</PSID><PUST>504</PUST></PSHT>', { PSHT: [{ PSHN: 1, PSTM: t('2026-12-01 09:46'), PSID: 'IN', PUST: '504' }] }],
      ['<PSHT></PSHT>', { PSHT: undefined }],
    ],
  },
  TIPT: {
    steps: [
      [
        '<TIPT><TRTM>01DEC260950</TRTM><TRST>503</TRST></TIPT><TIPT><TRTM>01DEC260944</TRTM><TRST>504</TRST></TIPT>',
        {
          TIPT: [
            { TRTM: t('2026-12-01 09:50'), TRST: '503' },
            { TRTM: t('2026-12-01 09:44'), TRST: '504' },
          ],
        },
      ],
      ['<TIPT/>', { TIPT: undefined }],
    ],
  },
  SRVT: {
    steps: [
      ['<SRVT>\n  <SRTC>ATN</SRTC> <SRQT>2</SRQT><SRPR></SRPR>\n</SRVT>', { SRVT: ['<SRVT><SRTC>ATN</SRTC><SRQT>2</SRQT><SRPR/></SRVT>'] }],
      ['<SRVT></SRVT>', { SRVT: undefined }],
    ],
  },
  VIPF: {
    steps: [
      ['<VIPF><VPCD>VC1</VPCD><VFES>3</VFES><VIPT><VNAM>张三</VNAM></VIPT></VIPF>', { VIPF: ['<VIPF><VPCD>VC1</VPCD><VFES>3</VFES><VIPT><VNAM>张三</VNAM></VIPT></VIPF>'] }],
      ['<VIPF/>', { VIPF: undefined }],
    ],
  },
};
// Legacy and A-CDM scalars: set, change, empty, self-closing, absent.
for (const tag of ['APPT', 'COBT', 'CTOT', 'EGSR', 'EGST', 'EOBT', 'IEST', 'NAAT', 'NEAT', 'PADT', 'PEDT', 'TOBT']) {
  CASES[tag] = {
    steps: [
      [`<${tag}>01DEC260810</${tag}>`, { [tag]: t('2026-12-01 08:10') }],
      [`<${tag}>01DEC260811</${tag}>`, { [tag]: t('2026-12-01 08:11') }],
      [`<${tag}></${tag}>`, { [tag]: undefined }],
      [`<${tag}>01DEC260811</${tag}>`, { [tag]: t('2026-12-01 08:11') }],
      [`<${tag}/>`, { [tag]: undefined }],
      [`<${tag}>01DEC260811</${tag}>`, { [tag]: t('2026-12-01 08:11') }],
      ['', { [tag]: undefined }],
    ],
  };
}
for (const tag of ['FTSS', 'REMC', 'RUNW', 'STND']) {
  CASES[tag] = {
    steps: [
      [`<${tag}>V1</${tag}>`, { [tag]: 'V1' }],
      [`<${tag}>V2</${tag}>`, { [tag]: 'V2' }],
      [`<${tag}/>`, { [tag]: undefined }],
      [`<${tag}>V2</${tag}>`, { [tag]: 'V2' }],
      ['', { [tag]: undefined }],
    ],
  };
}

describe('FLOP merge per STYP', () => {
  it('covers every STYP of the rule table except FDEL', () => {
    expect(Object.keys(CASES).sort()).toEqual(
      Object.keys(FLOP_STYPS)
        .filter((s) => s !== 'FDEL')
        .sort(),
    );
  });

  for (const [styp, c] of Object.entries(CASES)) {
    it(`${styp}: ${c.steps.length} steps, each idempotent`, () => {
      let s = baseState('15', c.start);
      let version = s.STATE_VERSION;
      for (const [body, expected] of c.steps) {
        const msg = decodeFlop(flopEnv(styp, body), { timeZone: TZ });
        expect(msg.notes.unknownTags).toEqual([]);
        const r = applyFlop(s, msg.patch, CTX);
        for (const [k, v] of Object.entries(expected)) expect(r.state.data[k], `${styp} ${body} → ${k}`).toEqual(v);
        expect(r.changed.length > 0, `${styp} ${body} changes something`).toBe(true);
        expect(r.state.STATE_VERSION).toBe(++version);
        expect(r.state.OPERATION_DAY).toBe('2026-12-01');
        // the same message again: nothing changed, same version
        const again = applyFlop(r.state, decodeFlop(flopEnv(styp, body), { timeZone: TZ }).patch, CTX);
        expect(again.changed).toEqual([]);
        expect(again.state).toBe(r.state);
        s = r.state;
      }
    });
  }
});

const protocolCases: [styp: string, body: string, detail: RegExp][] = [
  ['ACFT', '<ACFT></ACFT>', /ACFT is mandatory and empty/],
  ['ACFT', '', /required <ACFT> missing/],
  ['FLTY', '<FLTY/>', /FLTY is mandatory/],
  ['FLIN', '<FLIN> </FLIN>', /FLIN is mandatory/],
  ['GTDT', '', /required <GTDT> missing/],
  ['GTDT', '<GTDT GTNO="0"/><GTDT GTNO="1"><GATE>G1</GATE></GTDT>', /number-0 element mixed/],
  ['GTDT', '<GTDT GTNO="x"><GATE>G1</GATE></GTDT>', /@GTNO="x" is not an integer/],
  ['GTDT', Array.from({ length: 100 }, (_, i) => `<GTDT GTNO="${i + 1}"><GATE>G</GATE></GTDT>`).join(''), /100 elements exceed the capacity 99/],
  ['PSDT', Array.from({ length: 10 }, (_, i) => `<PSDT PSNO="${i + 1}"><PSST>S</PSST></PSDT>`).join(''), /capacity 9/],
  ['ROUT', Array.from({ length: 7 }, (_, i) => `<ROUT RTNO="${i + 1}"><APCD>A</APCD></ROUT>`).join(''), /7 elements exceed the capacity 6/],
  ['ERUT', Array.from({ length: 8 }, (_, i) => `<ERUT RTNO="${i + 1}"><APCD>A</APCD></ERUT>`).join(''), /capacity 7/],
  ['FDIV', '<FDIV DDES="HKG" DDIR="TOO">X</FDIV>', /DDIR="TOO" is not one of TO\/FROM/],
  ['FRET', '<FRET REID="X">r</FRET>', /REID="X"/],
  ['FRET', '<FRET>reason</FRET>', /has text but no REID/],
  ['FLAB', '<FLAB ARES="Z">r</FLAB>', /ARES="Z"/],
  ['FLAB', '<FLAB>reason</FLAB>', /has text but no ARES/],
  ['PORT', '<PORT><POTM>01DEC260855</POTM><POID>X</POID></PORT>', /POID="X"/],
  ['PORT', '<PORT><POTM>01DEC260855</POTM></PORT>', /POID missing/],
  ['ACTT', '<ACTT>32DEC260810</ACTT>', /ACTT="32DEC260810" is not a valid date/],
  ['ACTT', '<ACTT>2026-12-01</ACTT>', /ACTT="2026-12-01" is not DDMONYYHHMM/],
  ['MAXP', '<MAXP>many</MAXP>', /MAXP="many" is not an integer/],
  ['DELY', '<DELY CODE="A" DURA="2h">x</DELY>', /DURA="2h" is not HHMM/],
  ['HNAG', '<XXXX>1</XXXX>', /none of <FHAG> <PHAG> <MHAG> present/],
  ['TAOP', '<TAID>abc</TAID>', /TAID="abc" is not a flight id/],
];

describe('FLOP decode errors are PROTOCOL naming tag and value', () => {
  for (const [styp, body, detail] of protocolCases) {
    it(`${styp} ${body.slice(0, 60)}`, () => {
      try {
        decodeFlop(flopEnv(styp, body), { timeZone: TZ });
        expect.fail('no error');
      } catch (e) {
        expect(e).toBeInstanceOf(PipelineError);
        expect((e as PipelineError).failure.cls).toBe('PROTOCOL');
        expect((e as PipelineError).failure.detail).toMatch(detail);
      }
    });
  }

  it('a FLOP without FLID is PROTOCOL; without <FLOP> MALFORMED', () => {
    expect(() => decodeFlop(flopEnv('ACFT', '<ACFT>1</ACFT>', ''), { timeZone: TZ })).toThrow(/FLID is mandatory and empty/);
    const env = flopEnv('ACFT', '<ACFT>1</ACFT>');
    env.root.children = env.root.children.filter((c) => c.tag === 'META').concat([{ tag: 'OTHER', attrs: {}, text: '', children: [] }]);
    expect(() => decodeFlop(env, { timeZone: TZ })).toThrow(/MALFORMED: FLOP\/ACFT: no <FLOP> element/);
  });

  it('unknown tags are ignored and returned for counting, also tags of another STYP', () => {
    const m = decodeFlop(flopEnv('ACFT', '<ACFT>320</ACFT><WHAT>1</WHAT><STND>S1</STND>'), { timeZone: TZ });
    expect(m.patch).toEqual({ ACFT: '320' });
    expect(m.notes.unknownTags).toEqual(['WHAT', 'STND']);
    const g = decodeFlop(flopEnv('GTDT', '<GTDT GTNO="1"><GATE>G1</GATE><ZZZZ>1</ZZZZ></GTDT>'), { timeZone: TZ });
    expect(g.notes.unknownTags).toEqual(['GTDT/ZZZZ']);
  });

  it('route points beyond 4 are dropped and counted', () => {
    const m = decodeFlop(flopEnv('ERUT', Array.from({ length: 7 }, (_, i) => `<ERUT RTNO="${i + 1}"><APCD>A</APCD></ERUT>`).join('')), { timeZone: TZ });
    expect(m.notes.droppedRoutePoints).toBe(3);
    expect((m.patch.ERUT as unknown[]).length).toBe(4);
  });

  it('FDEL decodes to the delete path, FLID canonical', () => {
    const m = decodeFlop(flopEnv('FDEL', '<FDEL></FDEL>', '0015'), { timeZone: TZ });
    expect(m).toMatchObject({ delete: true, flid: '15', patch: {}, notes: { unknownTags: [] } });
  });
});
