// The test-only flight rule override (lib/flight/override.ts): grammar and effect on commands.
import { describe, expect, it } from 'vitest';
import { applyRuleOverride, parseRuleOverride } from '../../../lib/flight/override.ts';
import type { FlightCommand } from '../../../lib/flight/plan.ts';

describe('parseRuleOverride', () => {
  it.each([
    ['', []],
    ['ignore REMC in FLOP/REMC', [{ type: 'FLOP', styp: 'REMC', ignoreKeys: ['REMC'] }]],
    ['ignore CNCL in FLOP/*', [{ type: 'FLOP', styp: '*', ignoreKeys: ['CNCL', 'CANCELLED'] }]],
    [
      'ignore TAOP in SCHD/ADFT; ignore MAXP in FLOP/MAXP',
      [
        { type: 'SCHD', styp: 'ADFT', ignoreKeys: ['TAOP', 'TAFL', 'TAID'] },
        { type: 'FLOP', styp: 'MAXP', ignoreKeys: ['MAXP'] },
      ],
    ],
  ])('%j', (spec, want) => {
    expect(parseRuleOverride(spec).map(({ text: _, ...o }) => o)).toEqual(want);
  });
  it.each([
    ['drop REMC', /expected "ignore <TAG> in <TYPE>\/<STYP>"/],
    ['ignore NOPE in FLOP/REMC', /NOPE is not a flight tag/],
  ])('%j is refused', (spec, why) => expect(() => parseRuleOverride(spec)).toThrow(why));
});

describe('applyRuleOverride', () => {
  const o = parseRuleOverride('ignore REMC in FLOP/REMC; ignore MAXP in SCHD/*');
  const flop: FlightCommand = { kind: 'flop', styp: 'REMC', flid: '1', delete: false, patch: { REMC: 'x' } };
  const snapshot: FlightCommand = { kind: 'snapshot', styp: 'DNLD', day: '2026-12-01', recs: 1, records: [{ flid: '1', patch: { MAXP: 100, REMC: 'y' } }] } as FlightCommand;
  it.each([
    ['the matching FLOP loses the key', 'FLOP', 'REMC', flop, { ...flop, patch: {} }],
    ['another STYP is untouched', 'FLOP', 'ESTT', { ...flop, styp: 'ESTT' }, { ...flop, styp: 'ESTT' }],
    ['every record of a snapshot', 'SCHD', 'DNLD', snapshot, { ...snapshot, records: [{ flid: '1', patch: { REMC: 'y' } }] }],
  ])('%s', (_, type, styp, cmd, want) => {
    expect(applyRuleOverride(o, type, styp, cmd as FlightCommand)).toEqual(want);
  });
});
