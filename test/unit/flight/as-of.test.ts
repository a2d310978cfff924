// The as-of rebuild (pure): JSON ↔ state, undoing change records, the stretches of time and what
// each moment answers — including the cases the integration test cannot reach in one scenario
// (a purged flight that came back without its CREATE record, a flight with no retained rows).
import { describe, expect, it } from 'vitest';
import { stateAt, versionsOf, type ChangeRecord, type Retained } from '../../../lib/flight/as-of.ts';
import { fromJson, toJson } from '../../../lib/flight/state.ts';
import { baseState, TZ } from './helpers.ts';

const rec = (v: number, at: string, op: ChangeRecord['op'], changes: ChangeRecord['changes']): ChangeRecord => ({
  state_version: v,
  msg_id: 100 + v,
  kind: 'FLOP/STND',
  op,
  cause: 'MESSAGE',
  changes,
  created_at: new Date(at),
});
const answer = (r: Retained, at: string) => stateAt(versionsOf(r, TZ), new Date(at), TZ);

describe('fromJson', () => {
  it('is the inverse of toJson', () => {
    const s = { ...baseState('15', { STND: '21', CANCELLED: true, GTDT: [{ GTNO: 1, GATE: 'G1' }] }), MAFL: [{ FLID: '16', FLNO: 'XX102' }] };
    expect(toJson(fromJson(toJson(s)))).toEqual(toJson(s));
    expect(fromJson(toJson(s))).toMatchObject({ STATE: 'ACTIVE', STATE_VERSION: 3, LAST_MSG_ID: 1, MAFL: [{ FLID: '16' }] });
  });
});

describe('versionsOf / stateAt', () => {
  // v1 created 08:00 (Shanghai), v2 stand 21 at 09:00, v3 stand cleared at 10:00 (current)
  const current = { ...baseState('15'), STATE_VERSION: 3, UPDATED_AT: '2026-12-01T10:00:00+08:00', LAST_MSG_ID: 103 };
  const all: ChangeRecord[] = [
    rec(1, '2026-12-01T00:00:00.250Z', 'CREATE', { STATE: [null, 'ACTIVE'], FLNO: [null, 'XX101'], ACFT: [null, '320'], OPERATION_DAY: [null, '2026-12-01'] }),
    rec(2, '2026-12-01T01:00:00.500Z', 'UPDATE', { STND: [null, '21'], CANCELLED: [false, true] }),
    rec(3, '2026-12-01T02:00:00.750Z', 'UPDATE', { STND: ['21', null], CANCELLED: [true, false] }),
  ];

  it('undoes the records back to the CREATE; before it: not yet created; times at whole seconds', () => {
    const r: Retained = { current, archived: [], changes: all };
    expect(answer(r, '2026-12-01T07:59:59+08:00')).toEqual({ kind: 'not-yet-created', createdAt: '2026-12-01T08:00:00+08:00' });
    const v2 = answer(r, '2026-12-01T09:00:00+08:00');
    expect(v2).toMatchObject({ kind: 'state', source: 'change-records', validUntil: '2026-12-01T10:00:00+08:00', madeBy: { msgId: 102, op: 'UPDATE' } });
    if (v2.kind !== 'state') throw new Error('state expected');
    expect(toJson(v2.state)).toEqual({ ...toJson(current), STATE_VERSION: 2, UPDATED_AT: '2026-12-01T09:00:00+08:00', LAST_MSG_ID: 102, STND: '21', CANCELLED: true });
    const v1 = answer(r, '2026-12-01T08:59:59.999+08:00');
    expect(v1.kind === 'state' && toJson(v1.state)).toEqual({ ...toJson(current), STATE_VERSION: 1, UPDATED_AT: '2026-12-01T08:00:00+08:00', LAST_MSG_ID: 101 });
    expect(answer(r, '2026-12-01T12:00:00+08:00')).toMatchObject({ kind: 'state', source: 'current', validUntil: null, state: { STATE_VERSION: 3 } });
  });

  it('a missing record ends what can be answered: earlier moments are outside retention', () => {
    const r: Retained = { current, archived: [], changes: all.slice(1) }; // v1's record purged
    expect(answer(r, '2026-12-01T08:30:00+08:00')).toEqual({ kind: 'outside-retention', earliest: '2026-12-01T09:00:00+08:00' });
    expect(answer(r, '2026-12-01T09:00:00+08:00')).toMatchObject({ kind: 'state', state: { STATE_VERSION: 2 } });
    // only the current row: from its UPDATED_AT on
    expect(answer({ current, archived: [], changes: [] }, '2026-12-01T09:59:59+08:00')).toEqual({ kind: 'outside-retention', earliest: '2026-12-01T10:00:00+08:00' });
  });

  it('after a purge: purged until the flight came back; a return whose CREATE record is gone is outside retention', () => {
    const archived = [{ state_version: 3, purge_rule: 'AGE', state: toJson(current), archived_at: new Date('2026-12-08T00:00:00Z') }];
    const back = { ...baseState('15'), STATE_VERSION: 6, UPDATED_AT: '2026-12-09T08:00:00+08:00', LAST_MSG_ID: 106 };
    const create5 = rec(5, '2026-12-09T00:00:00Z', 'CREATE', { STATE: [null, 'ACTIVE'] });
    const update6 = { ...rec(6, '2026-12-09T00:00:00Z', 'UPDATE', {}), msg_id: 106 };
    const withCreate: Retained = { current: back, archived, changes: [create5, update6] };
    expect(answer(withCreate, '2026-12-08T12:00:00+08:00')).toEqual({
      kind: 'purged',
      stateVersion: 3,
      purgeRule: 'AGE',
      archivedAt: '2026-12-08T08:00:00+08:00',
      returnedAt: '2026-12-09T08:00:00+08:00',
    });
    expect(answer(withCreate, '2026-12-08T07:59:59+08:00')).toMatchObject({ kind: 'state', source: 'archive', validUntil: '2026-12-08T08:00:00+08:00' });
    // two versions in one moment: the later one
    expect(answer(withCreate, '2026-12-09T08:00:00+08:00')).toMatchObject({ kind: 'state', state: { STATE_VERSION: 6 } });
    const withoutCreate: Retained = { current: back, archived, changes: [update6] };
    expect(answer(withoutCreate, '2026-12-08T12:00:00+08:00')).toEqual({ kind: 'outside-retention', earliest: '2026-12-09T08:00:00+08:00' });
    expect(answer(withoutCreate, '2026-12-08T07:00:00+08:00')).toMatchObject({ kind: 'state', state: { STATE_VERSION: 3 } });
  });

  it('nothing retained: unknown flight', () => {
    expect(answer({ current: null, archived: [], changes: [] }, '2026-12-01T00:00:00Z')).toEqual({ kind: 'unknown-flight' });
  });
});
