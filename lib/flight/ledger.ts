// The snapshot ledger (docs/flight-state.md "Snapshot ledger"), Postgres edge:
// SCHD_GEN (version + latest message per operation day), SCHD_GEN_FLID (roster of the latest
// snapshot) and SCHD_SNAP_LOG. The decisions (deletion set per INV-7, version, replay = no-op)
// are the planner's (plan.ts); validation happens before any write (INV-4, validateSnapshot).
import { protocol } from '../core/errors.ts';
import type { Executor } from '../db/statement.ts';
import * as Ledger from '../sql/ledger.ts';
import * as SnapLog from '../sql/snap-log.ts';
import { snapshotOperationDay, type MergeContext } from './merge.ts';
import type { DayData, LedgerWrite, SnapLogRow } from './plan.ts';

/** Ledger, roster and every flight of these operation days, as persisted (the ledger rows locked). */
export async function loadDays(tx: Executor, days: readonly string[]): Promise<Map<string, DayData>> {
  const out = new Map<string, DayData>();
  if (days.length === 0) return out;
  const list = [...new Set(days)];
  for (const row of await Ledger.loadDays(tx, list)) {
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
      const n = await Ledger.casVersion(tx, l.day, l.fromVersion, l.version, l.lastMessageId, l.at);
      if (n !== 1) throw new Error(`SCHD_GEN ${l.day}: version ${l.fromVersion} changed concurrently (CAS conflict)`);
    } else {
      const n = await Ledger.createGen(tx, l.day, l.version, l.lastMessageId, l.at);
      if (n !== 1) throw new Error(`SCHD_GEN ${l.day}: created concurrently (CAS conflict)`);
    }
    if (l.roster === l.previousRoster) continue; // the same roster (the same snapshot content again): nothing to rewrite
    await Ledger.deleteRoster(tx, l.day);
    if (l.roster.length > 0) await Ledger.insertRoster(tx, l.day, l.roster);
  }
  for (const e of log) {
    await SnapLog.insert(tx, e.msgId, e.styp, e.day, e.version, e.outcome, e.recs, e.written, e.unchanged, e.deleted, e.at);
  }
}

/**
 * INV-4: everything that can be checked without writing. RECS / FLID / capacity were checked by
 * the decoder; here: one operation day for all records; an empty DNLD cannot tell its day.
 * Returns D, or null for an empty RESP (its day comes from the request it answers).
 */
export function validateSnapshot(msg: Parameters<typeof snapshotOperationDay>[0], ctx: Pick<MergeContext, 'timeZone' | 'cutover'>): string | null {
  const day = snapshotOperationDay(msg, ctx);
  if (day === null && msg.styp === 'DNLD') throw protocol('SCHD/DNLD: RECS=0, an empty DNLD cannot tell its operation day');
  return day;
}
