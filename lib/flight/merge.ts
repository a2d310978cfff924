// Pure merge functions (docs/flight-state.md "Merge rules as implemented"): state × patch → next state + the keys that changed.
// No I/O; time, message id and zone are passed in. A result with `changed` empty is "nothing
// changed": same version, no event (G-FLOP-IDEMPOTENT).
import { protocol } from '../core/errors.ts';
import { operationDayOf } from '../sis/values.ts';
import type { Patch, ScheduleMessage } from './decode.ts';
import { diffKeys, emptyData, isoLocal, sameValue, type FlightData, type FlightState, type MaflEntry } from './state.ts';

export interface MergeContext {
  msgId: number;
  now: Date;
  timeZone: string;
  /** msgx.airport.day-cutover 'HH:MM'. */
  cutover: string;
}

export interface MergeResult {
  state: FlightState;
  /** Changed keys (business keys, plus STATE / OPERATION_DAY / MAFL); empty = nothing changed. */
  changed: string[];
}

/** Keys whose change on a shared flight re-derives its master(s). */
export const MASTER_RELEVANT = ['STATE', 'FLNO', 'MAID'] as const;

function withPatch(base: FlightData, patch: Patch): FlightData {
  const out: FlightData = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || (Array.isArray(v) && v.length === 0)) delete out[k];
    else out[k] = v;
  }
  for (const k of ['CANCELLED', 'BOARDING', 'LAST_CALL']) if (out[k] === undefined) out[k] = false;
  return out;
}

function bump(prev: FlightState | undefined, flid: string, next: Omit<FlightState, 'FLID' | 'STATE_VERSION' | 'UPDATED_AT' | 'LAST_MSG_ID'>, changed: string[], ctx: MergeContext): MergeResult {
  if (prev && changed.length === 0) return { state: prev, changed };
  return {
    state: {
      FLID: flid,
      ...next,
      STATE_VERSION: (prev?.STATE_VERSION ?? 0) + 1,
      UPDATED_AT: isoLocal(ctx.now, ctx.timeZone),
      LAST_MSG_ID: ctx.msgId,
    },
    changed,
  };
}

/** The operation day of a record: SODT's local date shifted by the cutover; null without SODT. */
export function operationDayOfPatch(patch: Patch, ctx: Pick<MergeContext, 'timeZone' | 'cutover'>): string | null {
  const sodt = patch.SODT;
  return typeof sodt === 'string' ? operationDayOf(new Date(sodt), ctx.timeZone, ctx.cutover) : null;
}

/**
 * INV-4 operation-day check of a snapshot: every record has a SODT and all derive the same day D.
 * Returns D, or null for an empty snapshot (RECS=0: the day comes from the request it answers).
 */
export function snapshotOperationDay(
  msg: Pick<ScheduleMessage, 'styp'> & { records: readonly { flid: string; patch?: Patch; day?: string }[] },
  ctx: Pick<MergeContext, 'timeZone' | 'cutover'>,
): string | null {
  let day: string | null = null;
  for (const r of msg.records) {
    // a record left undecoded (digest.ts) is on the day its digest was taken on: the same text, the same day
    const d = r.patch ? operationDayOfPatch(r.patch, ctx) : (r.day ?? null);
    if (d === null) throw protocol(`SCHD/${msg.styp} FLID=${r.flid}: no SODT, the operation day cannot be derived`);
    if (day !== null && d !== day) throw protocol(`SCHD/${msg.styp}: records span two operation days (${day} and ${d} at FLID=${r.flid})`);
    day = d;
  }
  return day;
}

/** FLOP on an ACTIVE flight: only what the patch carries changes; OPERATION_DAY never. */
export function applyFlop(state: FlightState, patch: Patch, ctx: MergeContext): MergeResult {
  if (state.STATE !== 'ACTIVE') throw new Error(`applyFlop on ${state.STATE} flight ${state.FLID}`);
  const data = withPatch(state.data, patch);
  const changed = diffKeys(state.data, data);
  return bump(state, state.FLID, { STATE: 'ACTIVE', OPERATION_DAY: state.OPERATION_DAY, data, MAFL: state.MAFL }, changed, ctx);
}

/** Starting point of a write that (re)creates a flight: a DELETED one revives from an empty state. */
const liveData = (prev: FlightState | undefined) => (prev && prev.STATE === 'ACTIVE' ? prev.data : emptyData());

function lifecycleChanges(prev: FlightState | undefined, day: string | null): string[] {
  const out: string[] = [];
  if (!prev || prev.STATE !== 'ACTIVE') out.push('STATE');
  if ((prev?.OPERATION_DAY ?? null) !== day) out.push('OPERATION_DAY');
  return out;
}

/** Snapshot record (C-6): the complete state from the record alone; OPERATION_DAY = D; ACTIVE. */
export function applySnapshotRecord(prev: FlightState | undefined, flid: string, patch: Patch, day: string, ctx: MergeContext): MergeResult {
  const data = withPatch(emptyData(), patch);
  const changed = [...lifecycleChanges(prev, day), ...diffKeys(liveData(prev), data)];
  return bump(prev, flid, { STATE: 'ACTIVE', OPERATION_DAY: day, data, MAFL: prev?.MAFL ?? [] }, changed, ctx);
}

/** ADFT: set-only; creates or revives; OPERATION_DAY from SODT when present. */
export function applyAdft(prev: FlightState | undefined, flid: string, patch: Patch, ctx: MergeContext): MergeResult {
  const base = liveData(prev);
  const data = withPatch(base, patch);
  const revived = !prev || prev.STATE !== 'ACTIVE';
  const day = operationDayOfPatch(patch, ctx) ?? (revived ? null : prev.OPERATION_DAY);
  const changed = [...lifecycleChanges(prev, day), ...diffKeys(base, data)];
  return bump(prev, flid, { STATE: 'ACTIVE', OPERATION_DAY: day, data, MAFL: prev?.MAFL ?? [] }, changed, ctx);
}

/** FDEL / snapshot absence / cascade: ACTIVE → DELETED, data kept for history. */
export function deleteFlight(state: FlightState, ctx: MergeContext): MergeResult {
  if (state.STATE === 'DELETED') return { state, changed: [] };
  return bump(state, state.FLID, { STATE: 'DELETED', OPERATION_DAY: state.OPERATION_DAY, data: state.data, MAFL: state.MAFL }, ['STATE'], ctx);
}

/** G-MAFL: ACTIVE shared flights of a master, ordered by FLID (numeric order of the decimal ids). */
export function deriveMafl(masterFlid: string, flights: Iterable<Pick<FlightState, 'FLID' | 'STATE' | 'data'>>): MaflEntry[] {
  const out: MaflEntry[] = [];
  for (const f of flights) {
    if (f.STATE !== 'ACTIVE' || f.data.MAID !== masterFlid || f.FLID === masterFlid) continue;
    out.push(typeof f.data.FLNO === 'string' ? { FLID: f.FLID, FLNO: f.data.FLNO } : { FLID: f.FLID });
  }
  return out.sort((a, b) => compareFlid(a.FLID, b.FLID));
}

export const compareFlid = (a: string, b: string) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);

/** Set a master's derived MAFL (a shared flight — one with MAID — carries none). */
export function applyMafl(state: FlightState, mafl: MaflEntry[], ctx: MergeContext): MergeResult {
  const next = state.data.MAID === undefined ? mafl : [];
  if (state.STATE !== 'ACTIVE' || sameValue(state.MAFL as never, next as never)) return { state, changed: [] };
  return bump(state, state.FLID, { STATE: state.STATE, OPERATION_DAY: state.OPERATION_DAY, data: state.data, MAFL: next }, ['MAFL'], ctx);
}

/** Whether a change of this flight concerns its master(s). */
export const touchesMaster = (changed: string[]) => changed.some((k) => (MASTER_RELEVANT as readonly string[]).includes(k));
