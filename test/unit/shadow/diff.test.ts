// The state diff of two installations (lib/shadow/diff.ts), pure: tables of fixtures.
import { describe, expect, it } from 'vitest';
import { type ChangeRef, diff, differingFields, formatReport, type HistoryStart, type Json, lastSetter, type SideData } from '../../../lib/shadow/diff.ts';

const flight = (flid: string, o: Json = {}): Json => ({ FLID: flid, STATE: 'ACTIVE', STATE_VERSION: 1, UPDATED_AT: '2026-12-01T08:00:00+08:00', LAST_MSG_ID: 10, CANCELLED: false, ...o });
const created = (msg: number): HistoryStart => ({ firstMsg: msg, firstVersion: 1 });

function side(name: string, o: Partial<Omit<SideData, 'flights' | 'history'>> & { flights?: [string, Json][]; history?: [string, HistoryStart][] } = {}): SideData {
  return {
    name,
    startedAfter: o.startedAfter ?? 0,
    position: o.position ?? 100,
    lost: o.lost ?? [],
    flights: new Map(o.flights ?? []),
    history: new Map(o.history ?? []),
    outcomes: o.outcomes ?? new Map(),
    reference: o.reference ?? new Map(),
  };
}
const none = { here: new Map<string, ChangeRef[]>(), other: new Map<string, ChangeRef[]>() };

describe('differingFields', () => {
  it.each([
    ['equal', flight('1'), flight('1'), []],
    ['clock and installation keys are not differences', flight('1'), flight('1', { UPDATED_AT: 'x', EVENT_ID: 9 }), []],
    ['a changed scalar', flight('1', { REMC: 'a' }), flight('1', { REMC: 'b' }), ['REMC']],
    ['a field one side has not', flight('1', { REMC: 'a' }), flight('1'), ['REMC']],
    ['collections by value, key order ignored', flight('1', { GTDT: [{ GTNO: 1, GATE: 'G1' }] }), flight('1', { GTDT: [{ GATE: 'G1', GTNO: 1 }] }), []],
    ['version bookkeeping is a difference', flight('1', { STATE_VERSION: 2 }), flight('1'), ['STATE_VERSION']],
    ['a flight only one side has: every field', flight('1'), undefined, ['CANCELLED', 'FLID', 'LAST_MSG_ID', 'STATE', 'STATE_VERSION']],
  ] as const)('%s', (_, a, b, want) => {
    expect(differingFields(a as Json, b as Json | undefined)).toEqual(want);
  });
});

describe('lastSetter', () => {
  const changes: ChangeRef[] = [
    { stateVersion: 3, msgId: 30, kind: 'FLOP/ESTT', keys: ['ESTT'] },
    { stateVersion: 2, msgId: 20, kind: 'FLOP/REMC', keys: ['REMC'] },
    { stateVersion: 1, msgId: 10, kind: 'SCHD/DNLD', keys: ['STATE', 'REMC', 'ESTT'] },
  ];
  it.each([
    ['REMC', { msgId: 20, kind: 'FLOP/REMC' }],
    ['ESTT', { msgId: 30, kind: 'FLOP/ESTT' }],
    ['STATE_VERSION', { msgId: 30, kind: 'FLOP/ESTT' }],
    ['MAXP', null],
  ])('%s', (field, want) => expect(lastSetter(changes, field)).toEqual(want));
  it('no change records (purged): unknown', () => expect(lastSetter(undefined, 'REMC')).toBeNull());
});

describe('diff', () => {
  it('classifies: compared, equal, different; not comparable by history, position and purge', () => {
    const here = side('shadow', {
      startedAfter: 50,
      flights: [
        ['1', flight('1', { LAST_MSG_ID: 60 })],
        ['2', flight('2', { LAST_MSG_ID: 60, REMC: 'x' })],
        ['3', flight('3', { LAST_MSG_ID: 60 })], // history began before the start on the other side
        ['4', flight('4', { LAST_MSG_ID: 120 })], // changed after the position
        ['6', flight('6', { LAST_MSG_ID: 70, STATE: 'DELETED' })], // purged on the other side
      ],
      history: [
        ['1', created(55)],
        ['2', created(55)],
        ['3', created(60)],
        ['4', created(55)],
        ['6', created(55)],
      ],
    });
    const other = side('live', {
      position: 130,
      flights: [
        ['1', flight('1', { LAST_MSG_ID: 60 })],
        ['2', flight('2', { LAST_MSG_ID: 60 })],
        ['3', flight('3', { LAST_MSG_ID: 60 })],
        ['4', flight('4', { LAST_MSG_ID: 60 })],
        ['5', flight('5', { LAST_MSG_ID: 40 })], // created before the shadow started: the shadow never saw it
      ],
      history: [
        ['1', created(55)],
        ['2', created(55)],
        ['3', created(20)],
        ['4', created(55)],
        ['5', created(40)],
      ],
    });
    const r = diff(here, other, { here: new Map([['2', [{ stateVersion: 2, msgId: 60, kind: 'FLOP/REMC', keys: ['REMC'] }]]]), other: new Map() });
    expect(r.position).toBe(100);
    expect(r.startedAfter).toBe(50);
    expect(r.flights).toEqual({
      compared: 2,
      equal: 1,
      different: 1,
      notComparable: 4,
      notComparableBy: { 'history-before-start': 2, 'changed-after-position': 1, 'purged-on-one-side': 1 },
    });
    expect(r.flightDiffs).toEqual([{ flid: '2', fields: [{ field: 'REMC', here: 'x', other: null, setHere: { msgId: 60, kind: 'FLOP/REMC' }, setOther: null }] }]);
    expect(formatReport(r)).toContain('positions differ: live is 30 inbox ID(s) ahead; compared at the lower one');
    expect(r.equal).toBe(false);
  });

  it.each([
    ['a record at or before the start', { firstMsg: 5, firstVersion: 2 }, 3, 3, false],
    ['creation retained after the start', created(30), 3, 3, true],
    ['creation purged, the same number of versions', { firstMsg: 30, firstVersion: 4 }, 6, 6, true],
    ['creation purged, versions differ (versions before the start)', { firstMsg: 30, firstVersion: 4 }, 9, 6, false],
    ['no change record at all, versions differ', undefined, 9, 6, false],
  ] as const)('history: %s → comparable %s', (_, h, va, vb, comparable) => {
    const here = side('a', { startedAfter: 10, flights: [['1', flight('1', { STATE_VERSION: va })]], history: h ? [['1', h]] : [] });
    const other = side('b', { flights: [['1', flight('1', { STATE_VERSION: vb })]], history: [['1', created(20)]] });
    const r = diff(here, other, none);
    expect(r.flights.compared).toBe(comparable ? 1 : 0);
    expect(r.flights.notComparableBy['history-before-start']).toBe(comparable ? 0 : 1);
  });

  it('message outcomes in (start, position]: different states or reasons, and messages a side never took in', () => {
    const here = side('shadow', {
      startedAfter: 10,
      position: 14,
      lost: [{ lo: 13, hi: 13 }],
      outcomes: new Map([
        [10, { state: 'DEAD', reason: 'x', kind: null }],
        [11, { state: 'SUCCEEDED', reason: null, kind: 'FLOP/ESTT' }],
        [12, { state: 'SKIPPED', reason: 'no-flight', kind: 'FLOP/ESTT' }],
        [14, { state: 'SUCCEEDED', reason: null, kind: 'FLOP/ESTT' }],
      ]),
    });
    const other = side('live', {
      position: 20,
      outcomes: new Map([
        [10, { state: 'SUCCEEDED', reason: null, kind: null }],
        [11, { state: 'SUCCEEDED', reason: null, kind: 'FLOP/ESTT' }],
        [12, { state: 'SUCCEEDED', reason: null, kind: 'FLOP/ESTT' }],
        [13, { state: 'SUCCEEDED', reason: null, kind: 'FLOP/REMC' }],
        [14, { state: 'SUCCEEDED', reason: null, kind: 'FLOP/ESTT' }],
        [15, { state: 'DEAD', reason: 'y', kind: null }],
      ]),
    });
    const r = diff(here, other, none);
    expect(r.outcomes).toEqual({ compared: 4, different: 2 });
    expect(r.outcomeDiffs.map((d) => [d.msgId, d.here?.state ?? null, d.other?.state ?? null])).toEqual([
      [12, 'SKIPPED', 'SUCCEEDED'],
      [13, null, 'SUCCEEDED'],
    ]);
    expect(r.lost.here).toEqual({ count: 1, ranges: ['13'] });
    const text = formatReport(r);
    expect(text).toContain('message 12: shadow SKIPPED (no-flight) | live SUCCEEDED');
    expect(text).toContain('message 13: shadow not taken in | live SUCCEEDED');
    expect(text).toContain('shadow: 1 inbox ID(s) deleted by retention before it read them: 13');
  });

  it('reference data: records compared by value, not comparable outside (start, position]', () => {
    const ref = (v: unknown, m: number) => ({ value: v, lastMsgId: m });
    const here = side('a', {
      startedAfter: 10,
      reference: new Map([
        ['ref_master/GLST/G1', ref({ n: 'Gate 1' }, 20)],
        ['ref_master/GLST/G2', ref({ n: 'Gate 2' }, 20)],
        ['res_status/GATE/G1', ref({ stat: 'D' }, 5)],
      ]),
    });
    const other = side('b', {
      reference: new Map([
        ['ref_master/GLST/G1', ref({ n: 'Gate 1' }, 20)],
        ['ref_master/GLST/G2', ref({ n: 'Gate two' }, 21)],
        ['res_status/GATE/G1', ref({ stat: 'D' }, 5)],
      ]),
    });
    const r = diff(here, other, none);
    expect(r.reference).toEqual({ tables: 2, tablesDifferent: 1, records: 2, recordsDifferent: 1, notComparable: 1 });
    expect(r.referenceDiffs).toEqual([{ table: 'ref_master', key: 'GLST/G2', here: { n: 'Gate 2' }, other: { n: 'Gate two' }, setHere: 20, setOther: 21 }]);
  });

  it('equal installations: equal, exit 0 in the CLIs', () => {
    const f: [string, Json][] = [['1', flight('1')]];
    const h: [string, HistoryStart][] = [['1', created(10)]];
    const r = diff(side('a', { flights: f, history: h }), side('b', { flights: f, history: h }), none);
    expect(r.equal).toBe(true);
    expect(formatReport(r).split('\n').at(-1)).toBe('equal');
  });
});
