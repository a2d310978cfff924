// Snapshot records (C-6: absent = cleared), ADFT (set-only), operation day, delete/revive, MAFL,
// and the complete-state JSON form.
import { describe, expect, it } from 'vitest';
import { decodeSchedule } from '../../../lib/flight/decode.ts';
import { applyAdft, applyFlop, applyMafl, applySnapshotRecord, deleteFlight, deriveMafl, snapshotOperationDay } from '../../../lib/flight/merge.ts';
import { toJson, type FlightState } from '../../../lib/flight/state.ts';
import { PipelineError } from '../../../lib/core/errors.ts';
import { baseState, CTX, fltr, schdEnv, t, TZ } from './helpers.ts';

const rec = (flid: string, inner: string) => decodeSchedule(schdEnv('DNLD', [fltr(flid, inner)]), { timeZone: TZ }).records[0];
const FULL = '<FLNO>XX101</FLNO><SODT>01DEC260805</SODT><ACFT>320</ACFT><STND>S1</STND><CNCL>01DEC260700</CNCL><BOTM>01DEC260730</BOTM><GTDT GTNO="1"><GATE>G1</GATE></GTDT>';

describe('snapshot record (C-6)', () => {
  it('builds the complete state from the record alone and clears what it lacks', () => {
    const prev = applySnapshotRecord(undefined, '15', rec('15', FULL).patch, '2026-12-01', CTX).state;
    expect(prev.data).toMatchObject({ STND: 'S1', CANCELLED: true, BOARDING: true, GTDT: [{ GTNO: 1, GATE: 'G1' }] });
    const r = applySnapshotRecord(prev, '15', rec('15', '<FLNO>XX101</FLNO><SODT>01DEC260805</SODT><ACFT>320</ACFT>').patch, '2026-12-01', CTX);
    expect(r.changed.sort()).toEqual(['BOARDING', 'BOTM', 'CANCELLED', 'CNCL', 'GTDT', 'STND']);
    expect(r.state.data).toEqual({ FLNO: 'XX101', SODT: t('2026-12-01 08:05'), ACFT: '320', CANCELLED: false, BOARDING: false, LAST_CALL: false });
    expect(r.state.STATE_VERSION).toBe(prev.STATE_VERSION + 1);
  });

  it('the same record again changes nothing; a new day alone is a change', () => {
    const a = applySnapshotRecord(undefined, '15', rec('15', FULL).patch, '2026-12-01', CTX);
    expect(a.changed).toContain('STATE');
    expect(applySnapshotRecord(a.state, '15', rec('15', FULL).patch, '2026-12-01', CTX).changed).toEqual([]);
    expect(applySnapshotRecord(a.state, '15', rec('15', FULL).patch, '2026-12-02', CTX).changed).toEqual(['OPERATION_DAY']);
  });

  it('revives a DELETED flight from an empty state, version continues', () => {
    const live = applyFlop(baseState('15', { STND: 'OLD', RENO: 'B1' }), {}, CTX).state;
    const del = deleteFlight(live, CTX);
    expect(del).toMatchObject({ changed: ['STATE'], state: { STATE: 'DELETED', STATE_VERSION: 4 } });
    const rev = applySnapshotRecord(del.state, '15', rec('15', '<SODT>01DEC260805</SODT><FLNO>XX101</FLNO>').patch, '2026-12-01', CTX);
    expect(rev.state).toMatchObject({ STATE: 'ACTIVE', STATE_VERSION: 5 });
    expect(rev.state.data.STND).toBeUndefined();
    expect(rev.changed).toContain('STATE');
  });

  it('operation day = SODT local date shifted by the cutover; one day per snapshot; SODT required', () => {
    const two = decodeSchedule(schdEnv('DNLD', [fltr('1', '<SODT>01DEC262330</SODT>'), fltr('2', '<SODT>02DEC260030</SODT>')]), { timeZone: TZ });
    expect(() => snapshotOperationDay(two, CTX)).toThrow(/two operation days \(2026-12-01 and 2026-12-02/);
    expect(snapshotOperationDay(two, { ...CTX, cutover: '03:00' })).toBe('2026-12-01');
    const none = decodeSchedule(schdEnv('DNLD', [fltr('1', '<FLNO>X</FLNO>')]), { timeZone: TZ });
    expect(() => snapshotOperationDay(none, CTX)).toThrow(PipelineError);
  });

  it('INV-4 decode checks: RECS mismatch / range, record without FLID, FLID twice', () => {
    expect(() => decodeSchedule(schdEnv('DNLD', [fltr('1', '')], 2), { timeZone: TZ })).toThrow(/RECS=2 but 1 FLTR/);
    expect(() => decodeSchedule(schdEnv('DNLD', [], 10000), { timeZone: TZ })).toThrow(/RECS="10000"/);
    expect(() => decodeSchedule(schdEnv('DNLD', ['<FLTR><FLNO>X</FLNO></FLTR>']), { timeZone: TZ })).toThrow(/FLTR\[1\]: FLID is mandatory and missing/);
    expect(() => decodeSchedule(schdEnv('DNLD', [fltr('1', ''), fltr('01', '')]), { timeZone: TZ })).toThrow(/FLID=1 occurs in more than one/);
    expect(() => decodeSchedule(schdEnv('DNLD', [fltr('1', '<PSDT PSNO="1"/>'.repeat(10))]), { timeZone: TZ })).toThrow(/capacity 9/);
  });
});

describe('ADFT (set-only)', () => {
  it('keeps absent tags, sets present ones, sets OPERATION_DAY only from SODT', () => {
    const prev = baseState('15', { STND: 'S1', GTDT: [{ GTNO: 1, GATE: 'G1' }] });
    const r = applyAdft(prev, '15', rec('15', '<RENO>B5</RENO>').patch, CTX);
    expect(r.changed).toEqual(['RENO']);
    expect(r.state.data).toMatchObject({ STND: 'S1', RENO: 'B5', GTDT: [{ GTNO: 1, GATE: 'G1' }] });
    expect(r.state.OPERATION_DAY).toBe('2026-12-01');
    const moved = applyAdft(prev, '15', rec('15', '<SODT>03DEC260805</SODT>').patch, CTX);
    expect(moved.state.OPERATION_DAY).toBe('2026-12-03');
    expect(moved.changed).toEqual(['OPERATION_DAY', 'SODT']);
  });

  it('creates an unknown flight (OPERATION_DAY null without SODT)', () => {
    const r = applyAdft(undefined, '77', rec('77', '<FLNO>ZZ1</FLNO>').patch, CTX);
    expect(r.state).toMatchObject({ FLID: '77', STATE: 'ACTIVE', STATE_VERSION: 1, OPERATION_DAY: null, LAST_MSG_ID: 100 });
  });
});

describe('MAFL', () => {
  it('= ACTIVE shared flights ordered by FLID (numeric), never on a shared flight', () => {
    const kids: Pick<FlightState, 'FLID' | 'STATE' | 'data'>[] = [
      { FLID: '100', STATE: 'ACTIVE' as const, data: { MAID: '1', FLNO: 'B100' } },
      { FLID: '20', STATE: 'ACTIVE' as const, data: { MAID: '1', FLNO: 'B20' } },
      { FLID: '30', STATE: 'DELETED' as const, data: { MAID: '1', FLNO: 'B30' } },
      { FLID: '40', STATE: 'ACTIVE' as const, data: { MAID: '2' } },
    ];
    const mafl = deriveMafl('1', kids);
    expect(mafl).toEqual([
      { FLID: '20', FLNO: 'B20' },
      { FLID: '100', FLNO: 'B100' },
    ]);
    const master = baseState('1');
    const r = applyMafl(master, mafl, CTX);
    expect(r.changed).toEqual(['MAFL']);
    expect(applyMafl(r.state, mafl, CTX).changed).toEqual([]);
    expect(applyMafl(baseState('3', { MAID: '1' }), mafl, CTX).changed).toEqual([]);
  });
});

describe('complete-state JSON', () => {
  it('status keys always present, cleared keys absent, collections arrays, MAFL when non-empty', () => {
    const s = applySnapshotRecord(undefined, '15', rec('15', FULL + '<DELY CODE="YY">x</DELY>').patch, '2026-12-01', CTX).state;
    const j = toJson({ ...s, MAFL: [{ FLID: '16', FLNO: 'XX102' }] });
    expect(j).toMatchObject({
      FLID: '15',
      STATE: 'ACTIVE',
      STATE_VERSION: 1,
      OPERATION_DAY: '2026-12-01',
      LAST_MSG_ID: 100,
      CANCELLED: true,
      BOARDING: true,
      LAST_CALL: false,
      DELY: [{ CODE: 'YY', TEXT: 'x' }],
      MAFL: [{ FLID: '16', FLNO: 'XX102' }],
    });
    expect(j.UPDATED_AT).toBe('2026-12-01T08:00:00+08:00');
    expect('RENO' in j).toBe(false);
    expect(Object.values(j).includes(null)).toBe(false);
  });
});
