// Every corpus FLOP and the corpus SCHD decode; the deliberately invalid samples fail as the spec
// says. The corpus is third-party data read in place (../shared/corpus); skipped visibly when absent.
import { describe, expect, it } from 'vitest';
import { decodeFlop, decodeSchedule, isHandledFlopStyp } from '../../../lib/flight/decode.ts';
import { snapshotOperationDay } from '../../../lib/flight/merge.ts';
import { PipelineError } from '../../../lib/core/errors.ts';
import { decodeEnvelope } from '../../../lib/sis/envelope.ts';
import { CORPUS_DIR, corpusMessages, corpusPresent, CTX, t, TZ } from './helpers.ts';

const messages = corpusMessages()
  .filter((m) => /<TYPE>\s*(FLOP|SCHD)\s*<\/TYPE>/.test(m.xml))
  .map((m) => ({ ...m, env: decodeEnvelope(m.xml) }));
// The invalid FLAB sample `<FLAB ARES=""></FLAB>` is NOT in this list: docs/flight-state.md names
// exactly that form as "clear" (see docs/flight-state.md, decisions).
const INVALID = [{ styp: 'FDIV', marker: 'DDIR="TOO"', detail: /DDIR="TOO" is not one of TO\/FROM/ }];

describe.runIf(corpusPresent)(`corpus ${CORPUS_DIR}`, () => {
  it('holds 71 FLOP messages of 48 STYPs and one SCHD', () => {
    const flop = messages.filter((m) => m.env.type === 'FLOP');
    expect(flop.length).toBe(71);
    expect(new Set(flop.map((m) => m.env.styp)).size).toBe(48);
    expect(flop.every((m) => isHandledFlopStyp(m.env.styp))).toBe(true);
    expect(messages.filter((m) => m.env.type === 'SCHD').length).toBe(1);
  });

  it('every FLOP decodes without unknown tags, except the deliberately invalid ones (PROTOCOL)', () => {
    let ok = 0;
    for (const m of messages.filter((x) => x.env.type === 'FLOP')) {
      const bad = INVALID.find((i) => i.styp === m.env.styp && m.xml.includes(i.marker));
      if (bad) {
        let err: unknown;
        try {
          decodeFlop(m.env, { timeZone: TZ });
        } catch (e) {
          err = e;
        }
        expect(err, m.xml).toBeInstanceOf(PipelineError);
        expect((err as PipelineError).failure).toMatchObject({ cls: 'PROTOCOL', detail: expect.stringMatching(bad.detail) });
        continue;
      }
      const d = decodeFlop(m.env, { timeZone: TZ });
      expect(d.notes.unknownTags, `${m.file} ${m.env.styp}`).toEqual([]);
      ok++;
    }
    expect(ok).toBe(70);
  });

  it('the FLAB sample ARES="" decodes as clear (docs/flight-state.md), FDEL as delete', () => {
    const flab = messages.find((m) => m.env.styp === 'FLAB' && m.xml.includes('ARES=""'))!;
    expect(decodeFlop(flab.env, { timeZone: TZ }).patch).toEqual({ ARES: null, FLAB: null });
    const fdel = messages.find((m) => m.env.styp === 'FDEL')!;
    expect(decodeFlop(fdel.env, { timeZone: TZ })).toMatchObject({ delete: true, flid: '15' });
  });

  it('the SCHD DNLD creates flights 15 and 16 of operation day 2021-01-23', () => {
    const schd = messages.find((m) => m.env.type === 'SCHD')!;
    const d = decodeSchedule(schd.env, { timeZone: TZ });
    expect(d.notes).toEqual({ unknownTags: [], droppedRoutePoints: 0 });
    expect(d.records.map((r) => r.flid)).toEqual(['15', '16']);
    expect(snapshotOperationDay(d, CTX)).toBe('2021-01-23');
    expect(d.records[0].patch).toMatchObject({
      FLNO: 'YG9028',
      SODT: t('2021-01-23 05:35'),
      TAOP: 'YG',
      TAFL: 'YG9061',
      TAID: '16',
      MAXP: 300,
      ROUT: [{ RTNO: 1, APCD: 'XIY', SCAT: t('2021-01-23 07:10') }],
      ERUT: [
        { RTNO: 1, APCD: 'CTU', SCDT: t('2021-01-23 05:35') },
        { RTNO: 2, APCD: 'XIY', SCAT: t('2021-01-23 07:10') },
      ],
      PSDT: [{ PSNO: 1, PSST: '504', STST: t('2021-01-23 02:37'), STET: t('2021-01-23 05:49') }],
    });
  });
});

if (!corpusPresent) console.warn(`SKIPPED(corpus-absent): ${CORPUS_DIR} does not exist; the corpus decode tests do not run`);
