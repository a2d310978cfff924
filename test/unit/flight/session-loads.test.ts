// The flight session's loads (lib/flight/session.ts), counted: the Postgres edge is replaced by
// an in-memory table of flights, and every load statement the session would run is recorded.
// What the planner needs is loaded before a message is applied, and nothing more: a batch of
// FLOPs on flights preload loaded runs no statement after preload; the next batch of the same
// PIPELINE_LOCK hold reads nothing it committed (FlightStateCache).
import pino from 'pino';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { slices } from '../../../lib/core/config.ts';
import { decodeFlightCommand } from '../../../lib/flight/handlers.ts';
import { FlightSession, FlightStateCache } from '../../../lib/flight/session.ts';
import type { FlightState } from '../../../lib/flight/state.ts';
import type { Executor } from '../../../lib/flight/store.ts';
import { testConfig } from '../../support/env.ts';
import { baseState, flopEnv } from './helpers.ts';

const db = vi.hoisted(() => ({ flights: new Map<string, FlightState>(), statements: [] as string[] }));

vi.mock('../../../lib/flight/store.ts', async (original) => ({
  ...(await original<typeof import('../../../lib/flight/store.ts')>()),
  loadStates: async (_tx: unknown, flids: readonly string[]) => {
    if (flids.length) db.statements.push(`states ${[...flids].join(',')}`);
    return new Map(flids.flatMap((f) => (db.flights.has(f) ? [[f, db.flights.get(f)!] as const] : [])));
  },
  writePlan: async () => {},
  loadSharedOf: async (_tx: unknown, masters: readonly string[]) => {
    if (masters.length) db.statements.push(`shared ${[...masters].join(',')}`);
    return [...db.flights.values()]
      .filter((s) => s.STATE === 'ACTIVE' && s.data.MAID !== undefined && masters.includes(String(s.data.MAID)))
      .map((s) => ({ flid: s.FLID, flno: typeof s.data.FLNO === 'string' ? s.data.FLNO : null, maid: String(s.data.MAID) }));
  },
}));
vi.mock('../../../lib/flight/floor.ts', async (original) => ({
  ...(await original<typeof import('../../../lib/flight/floor.ts')>()),
  loadVersionFloors: async (_tx: unknown, flids: readonly string[]) => {
    if (flids.length) db.statements.push(`floors ${[...flids].join(',')}`);
    return new Map<string, number>();
  },
}));

const airport = slices(testConfig()).airport;
const log = pino({ level: 'silent' });
const NOW = new Date('2026-12-01T02:00:00Z');

function session() {
  return new FlightSession({ tx: {} as Executor, now: NOW, airport, log });
}

const message = (msgId: number, env: ReturnType<typeof flopEnv>) => ({ msgId, env, cmd: decodeFlightCommand(env, airport), log });

beforeEach(() => {
  db.flights.clear();
  db.statements.length = 0;
  for (const s of [baseState('1', { FLNO: 'XX1' }), baseState('2', { FLNO: 'YY2', MAID: '1' }), baseState('15'), baseState('16')]) db.flights.set(s.FLID, s);
});

describe('flight session loads', () => {
  it('a batch of FLOPs on flights preload loaded: no load after preload', async () => {
    const msgs = [
      message(1, flopEnv('STND', '<STND>S1</STND>', '15')),
      message(2, flopEnv('STND', '<STND>S2</STND>', '16')),
      message(3, flopEnv('STND', '<STND>S3</STND>', '15')),
      message(4, flopEnv('STND', '<STND>S4</STND>', '2')),
    ];
    const s = session();
    await s.preload(msgs.map((m) => m.cmd));
    expect(db.statements).toEqual(['states 15,16,2', 'shared 15,16,2,1']);
    db.statements.length = 0;
    for (const m of msgs) expect(await s.apply(m)).toMatchObject({ outcome: 'applied' });
    expect(db.statements).toEqual([]);
  });

  it('what preload could not foresee is loaded once, before the message is applied: the master of a deleted shared flight', async () => {
    const s = session();
    const fdel = message(1, flopEnv('FDEL', '<FDEL></FDEL>', '2'));
    await s.preload([fdel.cmd]);
    db.statements.length = 0;
    expect(await s.apply(fdel)).toMatchObject({ outcome: 'applied', mirror: expect.arrayContaining(['1', '2']) });
    expect(db.statements).toEqual(['states 1']); // its shared flights came with preload (the MAID of 2)
  });

  it('a FLOP on an unknown flight, not announced to preload: loaded once, then skipped', async () => {
    const s = session();
    await s.preload([]);
    expect(await s.apply(message(1, flopEnv('STND', '<STND>S1</STND>', '99')))).toMatchObject({ outcome: 'skipped', reason: 'no-flight', mirror: ['99'] });
    expect(db.statements).toEqual(['states 99', 'floors 99', 'shared 99']);
  });

  it("the next batch of the same lock hold reads neither the states nor the shared lists it committed; a flight written drops its master's list", async () => {
    const cache = new FlightStateCache();
    const batch = async (msgs: ReturnType<typeof message>[]) => {
      const s = new FlightSession({ tx: {} as Executor, now: NOW, airport, log }, cache);
      await s.preload(msgs.map((m) => m.cmd));
      for (const m of msgs) await s.apply(m);
      await s.write();
      s.committed();
    };
    await batch([message(1, flopEnv('STND', '<STND>S1</STND>', '15'))]);
    expect(db.statements).toEqual(['states 15', 'shared 15']);
    db.statements.length = 0;
    await batch([message(2, flopEnv('STND', '<STND>S2</STND>', '15'))]);
    expect(db.statements).toEqual([]);
    // flight 2 is a shared flight of 1: deleting it changes 1's list
    await batch([message(3, flopEnv('STND', '<STND>S3</STND>', '1'))]);
    db.statements.length = 0;
    await batch([message(4, flopEnv('FDEL', '<FDEL></FDEL>', '2'))]);
    db.statements.length = 0;
    await batch([message(5, flopEnv('STND', '<STND>S5</STND>', '1'))]);
    expect(db.statements).toEqual(['shared 1']);
  });
});
