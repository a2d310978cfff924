// "Why does flight CA1234 show gate 21?": every version of a flight still retained, in
// order, with the message that made it (id, TYPE/STYP, time) and the fields it changed, before ->
// after. Read from FLIGHT_CHANGE (kept msgx.pipeline.event-retention); a version whose change row
// is gone or was never written (an age-purge tombstone) is still shown from its msg outbox event,
// with the changed keys only. A purged flight answers from FLIGHT_HISTORY (the archived state).
// Read-only; times are ISO-8601 in the airport zone with its offset.
import type { Executor } from '../db/statement.ts';
import { fromWallClock } from '../sis/values.ts';
import * as Flight from '../sql/flight.ts';
import * as History from '../sql/history.ts';
import * as Outbox from '../sql/outbox/events.ts';
import * as ProcState from '../sql/proc-state.ts';
import { isoLocal } from './state.ts';

/** A field of a flight change: JSON values as in the flight state JSON, null = absent. */
export interface FieldChange {
  key: string;
  before: unknown;
  after: unknown;
}

export type { ChangeOp, ChangeCause } from './plan.ts';
import type { ChangeCause, ChangeOf } from './plan.ts';

export interface FlightChangeView extends ChangeOf {
  at: string;
  changes: FieldChange[];
}

/** An instant in the airport zone with offset; null stays null. */
export const iso = (at: Date | string | null | undefined, tz: string): string | null => (at === null || at === undefined ? null : isoLocal(new Date(at), tz));

/** {"KEY": [before, after]} → list sorted by key. */
export function changeList(changes: Record<string, [unknown, unknown]>): FieldChange[] {
  return Object.keys(changes)
    .sort()
    .map((key) => ({ key, before: changes[key]?.[0] ?? null, after: changes[key]?.[1] ?? null }));
}

/** A FLIGHT_CHANGE row as the trace and the timeline show it. */
export function changeView(r: Flight.FlightChangeRow, tz: string): FlightChangeView {
  return {
    flid: r.flid,
    stateVersion: Number(r.state_version),
    msgId: Number(r.msg_id),
    kind: r.kind,
    op: r.op,
    cause: r.cause,
    at: iso(r.created_at, tz)!,
    changes: changeList(r.changes ?? {}),
  };
}

export interface TimelineVersion {
  stateVersion: number;
  /** CREATE/UPDATE/DELETE/REVIVE from the change record; UPSERT/DELETE/PURGE when only the event is left. */
  op: string;
  cause: ChangeCause | null;
  /** The message that made this version (null: the age purge's tombstone). */
  message: { id: number; kind: string | null; received: string | null; state: string | null } | null;
  at: string | null;
  /** 'change' = before -> after known; 'event' = only the changed keys (from the outbox event). */
  source: 'change' | 'event';
  changes: FieldChange[];
  changedKeys: string[];
}

export interface FlightTimeline {
  flid: string;
  timeZone: string;
  /** ACTIVE / DELETED (in FLIGHT_SCHD), ARCHIVED (purged, in FLIGHT_HISTORY). */
  status: 'ACTIVE' | 'DELETED' | 'ARCHIVED';
  current: { stateVersion: number; operationDay: string | null; createdAt: string | null; updatedAt: string | null; deletedAt: string | null; lastMsgId: number | null } | null;
  archived: { stateVersion: number; operationDay: string | null; flightState: string; purgeRule: string; archivedAt: string | null }[];
  versions: TimelineVersion[];
}

/** The timeline of one flight, or null when nothing about this FLID is retained. */
export async function flightTimeline(db: Executor, flid: string, tz: string): Promise<FlightTimeline | null> {
  const [cur, hist, changes, events] = await Promise.all([
    Flight.readTimelineCurrent(db, flid),
    History.readTimelineArchived(db, flid),
    Flight.readTimelineChanges(db, flid),
    Outbox.readTimelineEvents(db, flid),
  ]);
  const c = cur[0];
  if (!c && hist.length === 0 && changes.length === 0 && events.length === 0) return null;

  const msgIds = [...new Set([...changes.map((r) => Number(r.msg_id)), ...events.map((e) => Number(e.payload.MSG_ID)).filter((n) => Number.isFinite(n))])];
  const procs = msgIds.length ? await ProcState.readTimelineMessages(db, msgIds) : [];
  const proc = new Map(procs.map((p) => [Number(p.msg_id), p]));
  const message = (id: number, kind: string | null) => {
    const p = proc.get(id);
    return { id, kind: kind ?? p?.kind ?? null, received: p?.received ? localWall(p.received, tz) : null, state: p?.state ?? null };
  };

  const versions = new Map<number, TimelineVersion>();
  for (const r of changes) {
    const v = changeView(r, tz);
    versions.set(v.stateVersion, {
      stateVersion: v.stateVersion,
      op: v.op,
      cause: v.cause,
      message: message(v.msgId, v.kind),
      at: v.at,
      source: 'change',
      changes: v.changes,
      changedKeys: v.changes.map((x) => x.key),
    });
  }
  for (const e of events) {
    const ver = Number(e.state_version);
    if (versions.has(ver)) continue;
    const p = e.payload as Record<string, unknown>;
    const id = Number(p.MSG_ID);
    const kind = p.TYPE ? `${p.TYPE}/${p.STYP ?? ''}` : null;
    versions.set(ver, {
      stateVersion: ver,
      op: p.DELETED ? (p.PURGED ? 'PURGE' : 'DELETE') : String(p.OP ?? 'UPSERT'),
      cause: null,
      message: Number.isFinite(id) ? message(id, kind) : null,
      at: iso(e.created_at, tz),
      source: 'event',
      changes: [],
      changedKeys: Array.isArray(p.CHANGED) ? p.CHANGED.map(String) : [],
    });
  }
  const archived = hist.map((h) => ({
    stateVersion: Number(h.state_version),
    operationDay: h.operation_day ?? null,
    flightState: h.flight_state as string,
    purgeRule: h.purge_rule as string,
    archivedAt: iso(h.archived_at, tz),
  }));
  return {
    flid,
    timeZone: tz,
    status: c ? (c.state as 'ACTIVE' | 'DELETED') : 'ARCHIVED',
    current: c
      ? {
          stateVersion: Number(c.state_version),
          operationDay: c.operation_day ?? null,
          createdAt: iso(c.created_at, tz),
          updatedAt: iso(c.updated_at, tz),
          deletedAt: iso(c.deleted_at, tz),
          lastMsgId: c.last_msg_id === null ? null : Number(c.last_msg_id),
        }
      : null,
    archived,
    versions: [...versions.values()].sort((a, b) => a.stateVersion - b.stateVersion),
  };
}

/** A zone-less local DATETIME ('YYYY-MM-DD HH:MM:SS', airport time) as ISO-8601 with the zone's offset. */
export function localWall(v: string | null | undefined, tz: string): string | null {
  if (!v) return null;
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})/.exec(v);
  if (!m) return v;
  const n = m.slice(1).map(Number);
  return isoLocal(fromWallClock(n[0], n[1], n[2], n[3], n[4], n[5], tz), tz);
}
