// The pure flight planner (lib/flight/plan.ts): a batch of flight messages applied in memory, in
// order, to the flights as loaded — no database. Each case: what was loaded, the messages, and the
// outcomes / events / writes / change records / Redis scope expected.
import { describe, expect, it } from 'vitest';
import { testConfig } from '../../support/env.ts';
import { decodeFlightCommand } from '../../../lib/flight/handlers.ts';
import { isEmpty, need } from '../../../lib/flight/overlay.ts';
import { FlightPlan, Loaded, type FlightCommand, type MessagePlan, type Need, type PlanMessage } from '../../../lib/flight/plan.ts';
import type { FlightState } from '../../../lib/flight/state.ts';
import { baseState, flopEnv, fltr, schdEnv, TZ } from './helpers.ts';
import { slices } from '../../../lib/core/config.ts';

const config = testConfig();
const NOW = new Date('2026-12-01T02:00:00Z');
const cmd = (env: ReturnType<typeof flopEnv>) => ({ env, cmd: decodeFlightCommand(env, slices(config).airport) });

/** A world: flights (state), masters' shared lists derived from the states, absent FLIDs, floors, days. */
function world(states: FlightState[], o: { absent?: string[]; floors?: Record<string, number>; days?: Loaded['days'] extends Map<string, infer D> ? Record<string, D> : never } = {}): Loaded {
  const L = new Loaded();
  for (const s of states) L.states.set(s.FLID, s);
  for (const f of o.absent ?? []) L.absent.add(f);
  for (const [f, v] of Object.entries(o.floors ?? {})) L.floors.set(f, v);
  for (const [d, v] of Object.entries(o.days ?? {})) L.days.set(d, v);
  // every FLID known is a master key too (its ACTIVE shared flights)
  const keys = new Set([...L.states.keys(), ...L.absent, ...states.flatMap((s) => (s.data.MAID !== undefined ? [String(s.data.MAID)] : []))]);
  for (const k of keys)
    L.sharedByMaster.set(
      k,
      states.filter((s) => s.STATE === 'ACTIVE' && String(s.data.MAID ?? '') === k).map((s) => ({ flid: s.FLID, maid: k, ...(typeof s.data.FLNO === 'string' ? { flno: s.data.FLNO } : {}) })),
    );
  return L;
}

/** Apply a message whose needs are loaded: the planner must need nothing first (a Need fails the test). */
function applied(plan: FlightPlan, m: PlanMessage): MessagePlan {
  const n = plan.needs(m);
  if (!isEmpty(n)) throw new Error(`the planner asked for ${JSON.stringify(n)}`);
  return plan.apply(m);
}

function run(L: Loaded, msgs: { env: ReturnType<typeof flopEnv>; cmd: FlightCommand }[]) {
  const plan = new FlightPlan(L, { timeZone: TZ, cutover: '00:00' });
  const outs = msgs.map((m, i) => applied(plan, { msgId: 200 + i, kind: `${m.env.type}/${m.env.styp}`, type: m.env.type, styp: m.env.styp, now: NOW, cmd: m.cmd }));
  return { outs, result: plan.result(), plan };
}

const master = (flid: string, extra: FlightState['data'] = {}) => baseState(flid, { FLNO: `XX${flid}`, ...extra });
const shared = (flid: string, maid: string) => baseState(flid, { FLNO: `YY${flid}`, MAID: maid });

describe('flight planner (pure)', () => {
  it('FLOP for an unknown flight: SKIPPED(no-flight), nothing written, the FLID still in the Redis scope', () => {
    const { outs, result } = run(world([], { absent: ['15'] }), [cmd(flopEnv('STND', '<STND>S1</STND>'))]);
    expect(outs[0]).toMatchObject({ outcome: { state: 'SKIPPED', reason: 'no-flight' }, mirror: ['15'], events: 0 });
    expect(result).toMatchObject({ flights: [], events: [], changes: [] });
  });

  it('FDEL of a flight already deleted: SKIPPED(no-flight:deleted) but its flight is in the Redis scope (a lost Redis write is repaired)', () => {
    const gone = { ...baseState('15'), STATE: 'DELETED' as const };
    const { outs } = run(world([gone]), [cmd(flopEnv('FDEL', '<FDEL></FDEL>'))]);
    expect(outs[0]).toMatchObject({ outcome: { state: 'SKIPPED', reason: 'no-flight:deleted' }, mirror: ['15'] });
  });

  it('two messages on one flight: message 2 sees message 1; one version step and one msg event each; the net write is the last state; schd row once, at its last upsert', () => {
    const { outs, result } = run(world([baseState('15')]), [cmd(flopEnv('STND', '<STND>S1</STND>')), cmd(flopEnv('STND', '<STND>S2</STND>')), cmd(flopEnv('STND', '<STND>S2</STND>'))]);
    expect(outs.map((o) => o.changed)).toEqual([['15'], ['15'], []]); // the third changes nothing
    expect(result.flights).toHaveLength(1);
    expect(result.flights[0].prev!.STATE_VERSION).toBe(3);
    expect(result.flights[0].next).toMatchObject({ STATE_VERSION: 5, LAST_MSG_ID: 201, data: { STND: 'S2' } });
    expect(result.events.map((e) => [e.target, e.stateVersion, e.target === 'msg' ? e.payload.MSG_ID : null])).toEqual([
      ['msg', 4, 200],
      ['msg', 5, 201],
      ['schd', 5, null],
    ]);
    expect(result.changes.map((c) => [c.stateVersion, c.msgId, c.op, c.cause, c.changes])).toEqual([
      [4, 200, 'UPDATE', 'MESSAGE', { STND: [null, 'S1'] }],
      [5, 201, 'UPDATE', 'MESSAGE', { STND: ['S1', 'S2'] }],
    ]);
  });

  it('FDEL of a master deletes its ACTIVE shared flights (cascade) and the Redis scope holds all of them', () => {
    const { outs, result } = run(world([master('1'), shared('2', '1'), shared('3', '1')]), [cmd(flopEnv('FDEL', '<FDEL></FDEL>', '1'))]);
    expect(new Set(outs[0].changed)).toEqual(new Set(['1', '2', '3']));
    expect(new Set(outs[0].mirror)).toEqual(new Set(['1', '2', '3']));
    expect(result.changes.map((c) => [c.flid, c.op, c.cause])).toEqual([
      ['1', 'DELETE', 'MESSAGE'],
      ['2', 'DELETE', 'CASCADE'],
      ['3', 'DELETE', 'CASCADE'],
    ]);
    expect(result.events.filter((e) => e.target === 'schd')).toEqual([]);
    expect(new Set(result.schdRemovals)).toEqual(new Set(['1', '2', '3']));
  });

  it('a shared flight moved to another master by ADFT: both masters re-derive MAFL in the same message', () => {
    const L = world([{ ...master('1'), MAFL: [{ FLID: '3', FLNO: 'YY3' }] }, master('4'), shared('3', '1')]);
    const { outs, result } = run(L, [cmd(schdEnv('ADFT', [fltr('3', '<MAID>4</MAID>')]))]);
    const next = new Map(result.flights.map((w) => [w.next.FLID, w.next]));
    expect(next.get('1')!.MAFL).toEqual([]);
    expect(next.get('4')!.MAFL).toEqual([{ FLID: '3', FLNO: 'YY3' }]);
    expect(new Set(outs[0].mirror)).toEqual(new Set(['1', '3', '4']));
    expect(
      result.changes
        .filter((c) => c.cause === 'MAFL')
        .map((c) => c.flid)
        .sort(),
    ).toEqual(['1', '4']);
  });

  it('a FLID purged before starts above its version floor', () => {
    const { result } = run(world([], { absent: ['77'], floors: { '77': 12 } }), [cmd(schdEnv('ADFT', [fltr('77', '<FLNO>ZZ7</FLNO><SODT>01DEC260900</SODT>')]))]);
    expect(result.flights[0].next.STATE_VERSION).toBe(13);
    expect(result.changes[0].op).toBe('CREATE');
  });

  it('snapshot: records written, the old roster minus the new one deleted (INV-7, only if still of that day), ledger version + 1; the latest snapshot again is a no-op', () => {
    const day = '2026-12-01';
    const otherDay = { ...baseState('9'), OPERATION_DAY: '2026-12-02' };
    const L = world([baseState('5'), baseState('6'), otherDay], { absent: ['7'], days: { [day]: { ledger: { version: 4, lastMessageId: 150 }, roster: ['5', '6', '9'], flids: ['5', '6'] } } });
    const snap = cmd(schdEnv('DNLD', [fltr('5', '<FLNO>XX101</FLNO><SODT>01DEC260800</SODT><ACFT>320</ACFT>'), fltr('7', '<FLNO>XX107</FLNO><SODT>01DEC260900</SODT>')]));
    const { outs, result } = run(L, [snap]);
    expect(outs[0].snapshot).toEqual({ day, version: 5, replay: false, deleted: 1 });
    expect(result.changes.map((c) => [c.flid, c.op, c.cause])).toEqual([
      ['5', 'UPDATE', 'MESSAGE'],
      ['7', 'CREATE', 'MESSAGE'],
      ['6', 'DELETE', 'SNAPSHOT_DELETE'],
    ]);
    expect(result.ledgers).toMatchObject([{ day, fromVersion: 4, version: 5, lastMessageId: 200, roster: ['5', '7'] }]);
    expect(new Set(outs[0].mirror)).toEqual(new Set(['5', '6', '7']));
    // the same message id again, as the day's latest: a replay changes nothing
    const L2 = world([baseState('5'), baseState('7')], { days: { [day]: { ledger: { version: 5, lastMessageId: 200 }, roster: ['5', '7'], flids: ['5', '7'] } } });
    const plan = new FlightPlan(L2, { timeZone: TZ, cutover: '00:00' });
    const again = applied(plan, { msgId: 200, kind: 'SCHD/DNLD', type: 'SCHD', styp: 'DNLD', now: NOW, cmd: snap.cmd });
    expect(again).toMatchObject({ outcome: { state: 'SUCCEEDED' }, events: 0, snapshot: { replay: true } });
    expect(plan.result()).toMatchObject({ flights: [], events: [], ledgers: [], snapLog: [{ outcome: 'REPLAY' }] });
  });

  it('states what it lacks (a Need) before applying, and the question leaves no trace: after loading, the message applies once', () => {
    const L = world([master('1')]);
    L.sharedByMaster.delete('1'); // the master's shared flights are not loaded
    const plan = new FlightPlan(L, { timeZone: TZ, cutover: '00:00' });
    const m = { msgId: 300, kind: 'FLOP/FDEL', type: 'FLOP', styp: 'FDEL', now: NOW, cmd: cmd(flopEnv('FDEL', '<FDEL></FDEL>', '1')).cmd };
    expect(plan.needs(m)).toEqual({ flids: [], masters: ['1'], days: [] });
    expect(plan.result()).toMatchObject({ flights: [], events: [], changes: [] });
    L.sharedByMaster.set('1', []);
    expect(applied(plan, m).changed).toEqual(['1']);
    expect(plan.result().events.filter((e) => e.target === 'msg')).toHaveLength(1);
  });

  it('Redis scope of a message committed before (crash recovery): its flights, those it changed, their masters and shared flights', () => {
    const L = world([master('1'), shared('2', '1'), baseState('5')], { absent: ['9'] });
    const plan = new FlightPlan(L, { timeZone: TZ, cutover: '00:00' });
    const stnd = cmd(flopEnv('STND', '<STND>S1</STND>', '2')).cmd;
    const fdel = cmd(flopEnv('FDEL', '<FDEL></FDEL>', '5')).cmd;
    expect(plan.addressedNeeds(stnd)).toEqual(need({}));
    expect(new Set(plan.addressed(stnd))).toEqual(new Set(['1', '2']));
    expect(plan.addressedNeeds(fdel, ['5', '9'])).toEqual(need({}));
    expect(new Set(plan.addressed(fdel, ['5', '9']))).toEqual(new Set(['5', '9']));
    // a snapshot's day not loaded, then a master whose shared flights are not
    const L2 = world([shared('2', '1')], { absent: ['1'] });
    L2.sharedByMaster.delete('1');
    const plan2 = new FlightPlan(L2, { timeZone: TZ, cutover: '00:00' });
    const snap = cmd(schdEnv('DNLD', [fltr('2', '<FLNO>YY2</FLNO><SODT>01DEC260800</SODT><MAID>1</MAID>')])).cmd;
    expect(plan2.addressedNeeds(snap)).toEqual(need({ days: ['2026-12-01'] }));
    L2.days.set('2026-12-01', { ledger: null, roster: ['2'], flids: ['2'] });
    expect(plan2.addressedNeeds(snap)).toEqual(need({ masters: ['1'] }));
    L2.sharedByMaster.set('1', [{ flid: '2', maid: '1' }]);
    expect(new Set(plan2.addressed(snap))).toEqual(new Set(['1', '2']));
  });
});

describe('what a message needs before it is applied (plan.needs)', () => {
  const day = '2026-12-01';
  const msg = (msgId: number, m: { env: ReturnType<typeof flopEnv>; cmd: FlightCommand }): PlanMessage => ({
    msgId,
    kind: `${m.env.type}/${m.env.styp}`,
    type: m.env.type,
    styp: m.env.styp,
    now: NOW,
    cmd: m.cmd,
  });
  const without = (L: Loaded, masters: string[]) => {
    for (const m of masters) L.sharedByMaster.delete(m);
    return L;
  };
  const snapshot = () => cmd(schdEnv('DNLD', [fltr('5', '<FLNO>XX105</FLNO><SODT>01DEC260800</SODT>'), fltr('7', '<FLNO>XX107</FLNO><SODT>01DEC260900</SODT>')]));
  const cases: { name: string; loaded: () => Loaded; m: PlanMessage; needs: Partial<Need> }[] = [
    { name: 'FLOP on a flight not looked up', loaded: () => world([]), m: msg(200, cmd(flopEnv('STND', '<STND>S1</STND>'))), needs: { flids: ['15'] } },
    { name: 'FLOP on a flight looked up and absent', loaded: () => world([], { absent: ['15'] }), m: msg(200, cmd(flopEnv('STND', '<STND>S1</STND>'))), needs: {} },
    {
      name: 'FLOP on a shared flight whose MAID names a master with shared flights not loaded',
      loaded: () => without(world([shared('2', '1')]), ['1']),
      m: msg(200, cmd(flopEnv('STND', '<STND>S1</STND>', '2'))),
      needs: { masters: ['1'] },
    },
    {
      name: 'FDEL of a shared flight whose master is not loaded (its MAFL is derived again)',
      loaded: () => world([shared('2', '1')]),
      m: msg(200, cmd(flopEnv('FDEL', '<FDEL></FDEL>', '2'))),
      needs: { flids: ['1'] },
    },
    {
      name: 'ADFT naming a new master not loaded',
      loaded: () => world([master('1'), shared('3', '1')]),
      m: msg(200, cmd(schdEnv('ADFT', [fltr('3', '<MAID>4</MAID>')]))),
      needs: { flids: ['4'], masters: ['4'] },
    },
    {
      name: 'FDEL of a master whose shared flights are not loaded',
      loaded: () => without(world([master('1')]), ['1']),
      m: msg(200, cmd(flopEnv('FDEL', '<FDEL></FDEL>', '1'))),
      needs: { masters: ['1'] },
    },
    {
      name: 'FDEL of a master: its shared flights (the cascade)',
      loaded: () => {
        const L = world([master('1')]);
        L.sharedByMaster.set('1', [
          { flid: '2', maid: '1' },
          { flid: '3', maid: '1' },
        ]);
        return L;
      },
      m: msg(200, cmd(flopEnv('FDEL', '<FDEL></FDEL>', '1'))),
      needs: { flids: ['2', '3'] },
    },
    { name: 'snapshot on a day not loaded', loaded: () => world([]), m: msg(200, snapshot()), needs: { days: [day] } },
    {
      name: 'snapshot on a loaded day: its records and the old roster',
      loaded: () => world([], { days: { [day]: { ledger: { version: 1, lastMessageId: 10 }, roster: ['5', '6'], flids: ['5', '6'] } } }),
      m: msg(200, snapshot()),
      needs: { flids: ['5', '7', '6'] },
    },
    { name: 'everything loaded: FLOP', loaded: () => world([baseState('15')]), m: msg(200, cmd(flopEnv('STND', '<STND>S1</STND>'))), needs: {} },
    { name: 'everything loaded: FDEL of a master', loaded: () => world([master('1'), shared('2', '1'), shared('3', '1')]), m: msg(200, cmd(flopEnv('FDEL', '<FDEL></FDEL>', '1'))), needs: {} },
    {
      name: 'everything loaded: snapshot',
      loaded: () => world([baseState('5'), baseState('6')], { absent: ['7'], days: { [day]: { ledger: null, roster: ['5', '6'], flids: ['5', '6'] } } }),
      m: msg(200, snapshot()),
      needs: {},
    },
  ];
  for (const c of cases)
    it(`${c.name} → ${JSON.stringify(c.needs)}`, () => {
      const plan = new FlightPlan(c.loaded(), { timeZone: TZ, cutover: '00:00' });
      expect(plan.needs(c.m)).toEqual(need(c.needs));
      expect(plan.result()).toMatchObject({ flights: [], events: [], changes: [], ledgers: [] }); // asking changes nothing
    });

  it('apply of a message whose needs were not loaded: a programming error, not a Need', () => {
    const plan = new FlightPlan(world([]), { timeZone: TZ, cutover: '00:00' });
    expect(() => plan.apply(msg(200, cmd(flopEnv('STND', '<STND>S1</STND>'))))).toThrow('planner: flight 15 not loaded (needs() missed it)');
    const L = without(world([master('1')]), ['1']);
    expect(() => new FlightPlan(L, { timeZone: TZ, cutover: '00:00' }).apply(msg(200, cmd(flopEnv('FDEL', '<FDEL></FDEL>', '1'))))).toThrow(
      'planner: shared flights of 1 not loaded (needs() missed it)',
    );
    expect(() => new FlightPlan(world([]), { timeZone: TZ, cutover: '00:00' }).apply(msg(200, snapshot()))).toThrow(`planner: operation day ${day} not loaded (needs() missed it)`);
  });

  it('the step needs() worked out is applied only if no other message was applied in between', () => {
    const plan = new FlightPlan(world([baseState('15')]), { timeZone: TZ, cutover: '00:00' });
    const m1 = msg(201, cmd(flopEnv('STND', '<STND>S2</STND>')));
    expect(plan.needs(m1)).toEqual(need({}));
    plan.apply(msg(200, cmd(flopEnv('STND', '<STND>S1</STND>')))); // everything loaded: apply without asking
    expect(plan.apply(m1).changed).toEqual(['15']);
    expect(plan.result().changes.map((c) => [c.stateVersion, c.changes])).toEqual([
      [4, { STND: [null, 'S1'] }],
      [5, { STND: ['S1', 'S2'] }],
    ]);
  });
});
