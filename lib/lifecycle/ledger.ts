// Lifecycle job: the snapshot ledger (SCHD_GEN, SCHD_GEN_FLID) of old operation days. Index of the jobs: tasks.ts.
import * as Ledger from '../sql/ledger.ts';
import { batches, count, underPipelineLock, type PurgeOptions, type PurgeSession, type RetentionDeps } from './common.ts';
import { historyRule } from './flights.ts';

/**
 * Delete SCHD_GEN / SCHD_GEN_FLID of operation days older than purge-after none of whose roster
 * flights remain in FLIGHT_SCHD with that day: while one does, a later snapshot of the day still
 * needs the roster to diff against (INV-7). Under PIPELINE_LOCK (the pump's snapshot reads and
 * compare-and-sets SCHD_GEN). Returns the SCHD_GEN rows (days) deleted; roster rows are counted as
 * object schd_gen_flid.
 */
export async function purgeLedger(d: RetentionDeps, session: PurgeSession, o: PurgeOptions = {}): Promise<number> {
  const n = await batches(o, 100, async (batch) => {
    const rule = historyRule(d);
    return underPipelineLock(session, o, () =>
      session.db.transaction().execute(async (tx) => {
        const days = await Ledger.listPurgeableDays(tx, rule.dayBefore, batch);
        const list = days.map((x) => x.day);
        if (list.length === 0) return [0, 0] as [number, number];
        const roster = await Ledger.deleteRosters(tx, list);
        const gens = await Ledger.deleteGens(tx, list);
        count('schd_gen_flid', roster);
        count('schd_gen', gens);
        return [gens, list.length] as [number, number];
      }),
    );
  });
  if (n) d.log.info({ days: n }, 'retention: snapshot ledger of old operation days deleted');
  return n;
}
