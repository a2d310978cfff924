// The pump's ports on SQL (PumpPorts): PIPELINE_LOCK on its session, savepoints in its business
// transaction, and the probes of the services it waits for (lib/pipeline/pump/choose.ts).
import { LOCKS } from '../../db/postgres.ts';
import * as Locks from '../../sql/locks.ts';
import * as Probe from '../../sql/probe.ts';
import * as Tx from '../../sql/tx.ts';
import type { PumpDeps, PumpPorts } from './deps.ts';

/** The ports of a pump on its own session, inbox and mirror. */
export function sqlPorts(deps: Pick<PumpDeps, 'session' | 'inbox' | 'mirror'>): PumpPorts {
  return {
    lock: async () => {
      await Locks.lock(deps.session, LOCKS.PIPELINE);
    },
    unlock: async () => {
      await Locks.unlock(deps.session, LOCKS.PIPELINE).catch(() => {});
    },
    lockWanted: async () => (await Locks.isLockWanted(deps.session, LOCKS.PIPELINE))?.w ?? false,
    inSavepoint: async (tx, step, keep) => {
      await Tx.savepoint(tx);
      const r = await step();
      await (keep(r) ? Tx.releaseSavepoint(tx) : Tx.rollbackToSavepoint(tx));
      return r;
    },
    probe: (service) => {
      const probe = deps.mirror.probe?.bind(deps.mirror);
      switch (service) {
        case 'mariadb':
          return () => Probe.mySelect1(deps.inbox);
        case 'redis':
          return probe ?? null;
        case 'postgres':
          return () => Probe.select1(deps.session);
        case null:
          return null;
      }
    },
  };
}

/** PumpDeps with the ports on SQL (workers/pump.ts, tests and benchmarks). */
export const withSqlPorts = (deps: Omit<PumpDeps, 'ports'>): PumpDeps => ({ ...deps, ports: sqlPorts(deps) });
