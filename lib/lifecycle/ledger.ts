// Lifecycle job: the snapshot ledger (SCHD_GEN, SCHD_GEN_FLID) of old operation days. Index of the jobs: tasks.ts.
import { sql } from 'kysely';
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
        const days = await sql<{ day: string }>`
          select g.operation_day::text as day from schd_gen g
          where g.operation_day < ${rule.dayBefore}::date
            and not exists (select 1 from schd_gen_flid r join flight_schd f on f.flid = r.flid and f.operation_day = r.operation_day
                            where r.operation_day = g.operation_day)
          order by g.operation_day limit ${batch}
          for update of g`.execute(tx);
        const list = days.rows.map((x) => x.day);
        if (list.length === 0) return [0, 0] as [number, number];
        const roster = await sql`delete from schd_gen_flid where operation_day = any(${list}::date[])`.execute(tx);
        const gens = await sql`delete from schd_gen where operation_day = any(${list}::date[])`.execute(tx);
        count('schd_gen_flid', Number(roster.numAffectedRows ?? 0));
        count('schd_gen', Number(gens.numAffectedRows ?? 0));
        return [Number(gens.numAffectedRows ?? 0), list.length] as [number, number];
      }),
    );
  });
  if (n) d.log.info({ days: n }, 'retention: snapshot ledger of old operation days deleted');
  return n;
}
