// The pump's ports on SQL (PumpPorts): PIPELINE_LOCK on its session, savepoints in its business
// transaction, and the probes of the services it waits for (lib/pipeline/pump/choose.ts).
import { LOCKS } from '../../db/postgres.ts';
import { myRows, pgOne, pgRun } from '../../db/statement.ts';
import * as Locks from '../../sql/locks.ts';
import * as Probe from '../../sql/probe.ts';
import * as Tx from '../../sql/tx.ts';
import type { PumpDeps, PumpPorts } from './deps.ts';

/** The ports of a pump on its own session, inbox and mirror. */
export function sqlPorts(deps: Pick<PumpDeps, 'session' | 'inbox' | 'mirror'>): PumpPorts {
  return {
    lock: async () => {
      await pgRun(deps.session, Locks.lock, LOCKS.PIPELINE);
    },
    unlock: async () => {
      await pgRun(deps.session, Locks.unlock, LOCKS.PIPELINE).catch(() => {});
    },
    lockWanted: async () => (await pgOne(deps.session, Locks.lockWanted, LOCKS.PIPELINE))?.w ?? false,
    inSavepoint: async (tx, step, keep) => {
      await pgRun(tx, Tx.savepoint);
      const r = await step();
      await pgRun(tx, keep(r) ? Tx.releaseSavepoint : Tx.rollbackToSavepoint);
      return r;
    },
    probe: (service) => {
      const probe = deps.mirror.probe?.bind(deps.mirror);
      switch (service) {
        case 'mariadb':
          return () => myRows(deps.inbox, Probe.mySelect1);
        case 'redis':
          return probe ?? null;
        case 'postgres':
          return () => pgRun(deps.session, Probe.select1);
        case null:
          return null;
      }
    },
  };
}

/** PumpDeps with the ports on SQL (workers/pump.ts, tests and benchmarks). */
export const withSqlPorts = (deps: Omit<PumpDeps, 'ports'>): PumpDeps => ({ ...deps, ports: sqlPorts(deps) });
