// The snapshot ledger (flight-domain.md "Snapshot"; current-state-design.md §4–5), Postgres edge:
// SCHD_GEN (version + latest message per operation day), SCHD_GEN_FLID (roster of the latest
// snapshot) and SCHD_SNAP_LOG. The decisions (deletion set per INV-7, version, replay = no-op)
// are the planner's (plan.ts); validation happens before any write (INV-4, validateSnapshot).
import { sql } from 'kysely';
import { protocol } from '../core/errors.ts';
import type { ScheduleMessage } from './decode.ts';
import { snapshotOperationDay, type MergeContext } from './merge.ts';
import type { DayData, LedgerWrite, SnapLogRow } from './plan.ts';
import type { Executor } from './store.ts';

/** Ledger, roster and every flight of these operation days, as persisted (the ledger rows locked). */
export async function loadDays(tx: Executor, days: readonly string[]): Promise<Map<string, DayData>> {
  const out = new Map<string, DayData>();
  if (days.length === 0) return out;
  const list = [...new Set(days)];
  const r = await sql<{ day: string; version: number | null; last_message_id: number | null; roster: string[]; flids: string[] }>`
    select d::text as day, g.version, g.last_message_id,
           coalesce((select array_agg(flid order by length(flid), flid) from schd_gen_flid r where r.operation_day = d), '{}') as roster,
           coalesce((select array_agg(flid) from flight_schd f where f.operation_day = d), '{}') as flids
    from unnest(${list}::date[]) as d left join lateral (select version, last_message_id from schd_gen where operation_day = d for update) g on true`.execute(tx);
  for (const row of r.rows) {
    out.set(row.day, {
      ledger: row.version === null ? null : { version: Number(row.version), lastMessageId: Number(row.last_message_id) },
      roster: row.roster,
      flids: row.flids,
    });
  }
  return out;
}

/** Replace each day's roster and bump its version by compare-and-set; append the snapshot log. */
export async function writeLedgers(tx: Executor, ledgers: readonly LedgerWrite[], log: readonly SnapLogRow[]): Promise<void> {
  for (const l of ledgers) {
    if (l.fromVersion !== null) {
      const r = await sql`update schd_gen set version = ${l.version}, last_message_id = ${l.lastMessageId}, updated_at = ${l.at}
                          where operation_day = ${l.day}::date and version = ${l.fromVersion}`.execute(tx);
      if (Number(r.numAffectedRows ?? 0) !== 1) throw new Error(`SCHD_GEN ${l.day}: version ${l.fromVersion} changed concurrently (CAS conflict)`);
    } else {
      const r = await sql`insert into schd_gen (operation_day, version, last_message_id, updated_at)
                          values (${l.day}::date, ${l.version}, ${l.lastMessageId}, ${l.at}) on conflict do nothing`.execute(tx);
      if (Number(r.numAffectedRows ?? 0) !== 1) throw new Error(`SCHD_GEN ${l.day}: created concurrently (CAS conflict)`);
    }
    if (l.roster === l.previousRoster) continue; // the same roster (the same snapshot content again): nothing to rewrite
    await sql`delete from schd_gen_flid where operation_day = ${l.day}::date`.execute(tx);
    if (l.roster.length > 0) await sql`insert into schd_gen_flid (operation_day, flid) select ${l.day}::date, f from unnest(${l.roster}::text[]) as f`.execute(tx);
  }
  for (const e of log) {
    await sql`insert into schd_snap_log (msg_id, styp, operation_day, version, outcome, recs, written, unchanged, deleted, created_at)
              values (${e.msgId}, ${e.styp}, ${e.day}::date, ${e.version}, ${e.outcome}, ${e.recs}, ${e.written}, ${e.unchanged}, ${e.deleted}, ${e.at})`.execute(tx);
  }
}

/**
 * INV-4: everything that can be checked without writing. RECS / FLID / capacity were checked by
 * the decoder; here: one operation day for all records; an empty DNLD cannot tell its day.
 * Returns D, or null for an empty RESP (its day comes from the request it answers).
 */
export function validateSnapshot(msg: ScheduleMessage, ctx: Pick<MergeContext, 'timeZone' | 'cutover'>): string | null {
  const day = snapshotOperationDay(msg, ctx);
  if (day === null && msg.styp === 'DNLD') throw protocol('SCHD/DNLD: RECS=0, an empty DNLD cannot tell its operation day');
  return day;
}
