// The snapshot ledger (flight-domain.md "Snapshot"; current-state-design.md §4–5):
// SCHD_GEN (version + latest message per operation day) and SCHD_GEN_FLID (roster of the
// latest snapshot). Validation happens before any write (INV-4); deletion set per INV-7;
// version bump by compare-and-set; the latest snapshot replayed = no-op.
import { sql } from 'kysely';
import { protocol } from '../pipeline/errors.ts';
import type { ScheduleMessage } from './decode.ts';
import { FlightBatch } from './batch.ts';
import { applySnapshotRecord, deleteFlight, snapshotOperationDay, type MergeContext } from './merge.ts';
import { flidsOfDay, type Executor } from './store.ts';

export interface LedgerRow {
  operationDay: string;
  version: number;
  lastMessageId: number;
}

export async function readLedger(tx: Executor, day: string): Promise<LedgerRow | undefined> {
  const r = await sql<{ version: number; last_message_id: number }>`
    select version, last_message_id from schd_gen where operation_day = ${day}::date for update`.execute(tx);
  const row = r.rows[0];
  return row ? { operationDay: day, version: Number(row.version), lastMessageId: Number(row.last_message_id) } : undefined;
}

export async function readRoster(tx: Executor, day: string): Promise<string[]> {
  const r = await sql<{ flid: string }>`select flid from schd_gen_flid where operation_day = ${day}::date order by length(flid), flid`.execute(tx);
  return r.rows.map((x) => x.flid);
}

/** Replace D's roster by N and bump the snapshot version by compare-and-set; records M. */
async function advanceLedger(tx: Executor, day: string, old: LedgerRow | undefined, roster: string[], msgId: number, now: Date): Promise<number> {
  if (old) {
    const r = await sql`update schd_gen set version = version + 1, last_message_id = ${msgId}, updated_at = ${now}
                        where operation_day = ${day}::date and version = ${old.version}`.execute(tx);
    if (Number(r.numAffectedRows ?? 0) !== 1) throw new Error(`SCHD_GEN ${day}: version ${old.version} changed concurrently (CAS conflict)`);
  } else {
    const r = await sql`insert into schd_gen (operation_day, version, last_message_id, updated_at)
                        values (${day}::date, 1, ${msgId}, ${now}) on conflict do nothing`.execute(tx);
    if (Number(r.numAffectedRows ?? 0) !== 1) throw new Error(`SCHD_GEN ${day}: created concurrently (CAS conflict)`);
  }
  await sql`delete from schd_gen_flid where operation_day = ${day}::date`.execute(tx);
  if (roster.length > 0) {
    await sql`insert into schd_gen_flid (operation_day, flid) select ${day}::date, f from unnest(${roster}::text[]) as f`.execute(tx);
  }
  return (old?.version ?? 0) + 1;
}

async function appendSnapLog(
  tx: Executor,
  e: { msgId: number; styp: string; day: string | null; version: number | null; outcome: 'APPLIED' | 'REPLAY'; recs: number; written: number; unchanged: number; deleted: number; now: Date },
): Promise<void> {
  await sql`insert into schd_snap_log (msg_id, styp, operation_day, version, outcome, recs, written, unchanged, deleted, created_at)
            values (${e.msgId}, ${e.styp}, ${e.day}::date, ${e.version}, ${e.outcome}, ${e.recs}, ${e.written}, ${e.unchanged}, ${e.deleted}, ${e.now})`.execute(tx);
}

/**
 * INV-4: everything that can be checked without writing. RECS / FLID / capacity were checked by
 * the decoder; here: one operation day for all records; an empty DNLD cannot tell its day.
 * Returns D, or null for an empty RESP (its day comes from the request it answers).
 */
export function validateSnapshot(msg: ScheduleMessage, ctx: MergeContext): string | null {
  const day = snapshotOperationDay(msg, ctx);
  if (day === null && msg.styp === 'DNLD') throw protocol('SCHD/DNLD: RECS=0, an empty DNLD cannot tell its operation day');
  return day;
}

export interface SnapshotOutcome {
  replay: boolean;
  day: string;
  version: number | null;
  changed: string[];
  deleted: string[];
  /** Redis scope: every flight of D (all states), the records, and related masters/shared flights. */
  mirror: string[];
  events: number;
}

/** Is M the latest snapshot of D? (checked before the request guard, so a re-application converges.) */
export async function isLatestSnapshot(tx: Executor, day: string, msgId: number): Promise<boolean> {
  const l = await readLedger(tx, day);
  return l !== undefined && l.lastMessageId === msgId;
}

/** Apply a validated snapshot of day D in the caller's transaction. */
export async function applySnapshot(tx: Executor, msg: ScheduleMessage, day: string, ctx: MergeContext): Promise<SnapshotOutcome> {
  const ledger = await readLedger(tx, day);
  if (ledger && ledger.lastMessageId === ctx.msgId) {
    const mirror = await flidsOfDay(tx, day, true);
    await appendSnapLog(tx, { msgId: ctx.msgId, styp: msg.styp, day, version: null, outcome: 'REPLAY', recs: msg.recs, written: 0, unchanged: msg.recs, deleted: 0, now: ctx.now });
    return { replay: true, day, version: ledger.version, changed: [], deleted: [], mirror, events: 0 };
  }
  const oldRoster = await readRoster(tx, day);
  const newRoster = msg.records.map((r) => r.flid);
  const inNew = new Set(newRoster);
  const batch = new FlightBatch(tx, ctx);
  await batch.load([...newRoster, ...oldRoster]);
  for (const r of msg.records) {
    batch.address(r.flid, true);
    batch.record(applySnapshotRecord(batch.get(r.flid), r.flid, r.patch, day, ctx));
  }
  // INV-7: (O − N) ∩ {OPERATION_DAY still D}
  const deleted: string[] = [];
  for (const f of oldRoster) {
    if (inNew.has(f)) continue;
    const s = batch.get(f);
    if (!s || s.STATE !== 'ACTIVE' || s.OPERATION_DAY !== day) continue;
    batch.address(f, false);
    batch.record(deleteFlight(s, ctx));
    deleted.push(f);
  }
  const res = await batch.finish({ type: 'SCHD', styp: msg.styp });
  const version = await advanceLedger(tx, day, ledger, newRoster, ctx.msgId, ctx.now);
  const changedSet = new Set(res.changed);
  const written = msg.records.filter((r) => changedSet.has(r.flid)).length;
  await appendSnapLog(tx, { msgId: ctx.msgId, styp: msg.styp, day, version, outcome: 'APPLIED', recs: msg.recs, written, unchanged: msg.recs - written, deleted: deleted.length, now: ctx.now });
  const mirror = [...new Set([...(await flidsOfDay(tx, day, true)), ...res.related])];
  return { replay: false, day, version, changed: res.changed, deleted, mirror, events: res.events };
}
