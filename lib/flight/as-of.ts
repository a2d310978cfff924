// A flight's complete state as of a past moment ("what did we publish for this flight at
// 14:05?"), rebuilt from what the gateway retains:
//   - anchors: complete states whose every key is known — the flight's current row (FLIGHT_SCHD)
//     and every archived state (FLIGHT_HISTORY, one per purge);
//   - the change records (FLIGHT_CHANGE, key → [before, after] per message and version, kept
//     msgx.pipeline.event-retention).
// From each anchor the versions before it are rebuilt by undoing its change records one by one,
// down to the first record that is missing (older ones purged: earlier moments are outside
// retention) or a CREATE (before it the flight did not exist). A version counts from its
// UPDATED_AT (the time it was published, whole seconds) until the next version, or until the
// purge that archived it. Versions made in one batch share a moment: the last one is the answer.
// Pure (versionsOf, stateAt) plus one loader (flightAsOf) reading in one snapshot.
import type { Db } from '../db/postgres.ts';
import * as Flight from '../sql/flight.ts';
import * as History from '../sql/history.ts';
import type { ChangeCause, ChangeOp } from './plan.ts';
import { loadStates } from './store.ts';
import { fromJson, isoLocal, type FlightData, type FlightJson, type FlightState, type MaflEntry } from './state.ts';
import { STATUS_KEYS } from './rules.ts';

/** A change record as the rebuild needs it (a FLIGHT_CHANGE row). */
export interface ChangeRecord {
  state_version: number;
  msg_id: number | string;
  kind: string;
  op: ChangeOp;
  cause: ChangeCause;
  changes: Record<string, [unknown, unknown]>;
  created_at: Date;
}

export interface ArchivedState {
  state_version: number;
  purge_rule: string;
  state: FlightJson;
  archived_at: Date;
}

/** Everything retained about one flight. */
export interface Retained {
  current: FlightState | null;
  /** In version order. */
  archived: ArchivedState[];
  /** In version order. */
  changes: ChangeRecord[];
}

/** Which message made a version (null fields: its change record is gone, only LAST_MSG_ID is known). */
export interface MadeBy {
  msgId: number | null;
  kind: string | null;
  op: ChangeOp | null;
  cause: ChangeCause | null;
}

/** One stretch of the flight's history, from `from` (ms, whole seconds) until the next stretch. */
export type Stretch =
  | { from: number; kind: 'state'; state: FlightState; madeBy: MadeBy; source: 'current' | 'archive' | 'change-records' }
  | { from: number; kind: 'purged'; stateVersion: number; purgeRule: string; archivedAt: string }
  /** After a purge, the flight came back, but when is no longer known (the records of its return are gone). */
  | { from: number; kind: 'unknown' };

export interface Versions {
  /** Before the first stretch: the flight did not exist yet ('created'), or that time is not retained. */
  start: 'created' | 'unknown';
  /** In time order. */
  stretches: Stretch[];
}

/** The answer for one moment. */
export type AsOf =
  | { kind: 'state'; state: FlightState; madeBy: MadeBy; source: 'current' | 'archive' | 'change-records'; validUntil: string | null }
  | { kind: 'not-yet-created'; createdAt: string }
  | { kind: 'purged'; stateVersion: number; purgeRule: string; archivedAt: string; returnedAt: string | null }
  | { kind: 'outside-retention'; earliest: string | null }
  | { kind: 'unknown-flight' };

const second = (ms: number) => Math.floor(ms / 1000) * 1000;
const timeOf = (iso: string) => second(Date.parse(iso));

/** The state before a change: each changed key set back to its `before` (null = absent). */
export function undo(s: FlightState, changes: Record<string, [unknown, unknown]>): Pick<FlightState, 'STATE' | 'OPERATION_DAY' | 'data' | 'MAFL'> {
  let STATE = s.STATE;
  let OPERATION_DAY = s.OPERATION_DAY;
  let MAFL = s.MAFL;
  const data: FlightData = { ...s.data };
  for (const [key, pair] of Object.entries(changes)) {
    const before = pair?.[0] ?? null;
    if (key === 'STATE') STATE = before === 'DELETED' ? 'DELETED' : 'ACTIVE';
    else if (key === 'OPERATION_DAY') OPERATION_DAY = typeof before === 'string' ? before : null;
    else if (key === 'MAFL') MAFL = Array.isArray(before) ? (before as MaflEntry[]) : [];
    else if ((STATUS_KEYS as readonly string[]).includes(key)) data[key] = before === true;
    else if (before === null) delete data[key];
    else data[key] = before as FlightData[string];
  }
  return { STATE, OPERATION_DAY, data, MAFL };
}

const madeBy = (r: ChangeRecord | undefined, s: FlightState): MadeBy =>
  r ? { msgId: Number(r.msg_id), kind: r.kind, op: r.op, cause: r.cause } : { msgId: s.LAST_MSG_ID, kind: null, op: null, cause: null };

/** Every version that can be rebuilt, as stretches of time. */
export function versionsOf(r: Retained, tz: string): Versions {
  const anchors: { state: FlightState; archive: ArchivedState | null }[] = [
    ...r.archived.map((a) => ({ state: fromJson(a.state), archive: a })),
    ...(r.current ? [{ state: r.current, archive: null }] : []),
  ];
  const byVersion = new Map(r.changes.map((c) => [Number(c.state_version), c]));
  const stretches: Stretch[] = [];
  let start: Versions['start'] = 'unknown';
  let below = 0; // the previous anchor's version: the records above it belong to this anchor
  anchors.forEach(({ state, archive }, i) => {
    const source = archive ? 'archive' : 'current';
    const built: Stretch[] = [];
    let s = state;
    let rec = byVersion.get(s.STATE_VERSION);
    // dated by its change record when there is one (the same second as UPDATED_AT)
    const from = rec ? second(rec.created_at.getTime()) : timeOf(s.UPDATED_AT);
    if (!Number.isNaN(from)) built.push({ from, kind: 'state', state: s, madeBy: madeBy(rec, s), source });
    // undo the records down to a CREATE, a missing record or the previous anchor
    while (rec && rec.op !== 'CREATE' && s.STATE_VERSION - 1 > below) {
      const prev = byVersion.get(s.STATE_VERSION - 1);
      if (!prev) break; // the version before is known but not when it was made: stop at this one
      s = { ...s, ...undo(s, rec.changes), STATE_VERSION: s.STATE_VERSION - 1, UPDATED_AT: isoLocal(prev.created_at, tz), LAST_MSG_ID: Number(prev.msg_id) };
      rec = prev;
      built.push({ from: timeOf(s.UPDATED_AT), kind: 'state', state: s, madeBy: madeBy(rec, s), source: 'change-records' });
    }
    const created = rec?.op === 'CREATE';
    if (i === 0) start = created ? 'created' : 'unknown';
    // after a purge the flight came back: when, only its CREATE record says
    else if (!created) stretches.push({ from: stretches[stretches.length - 1].from, kind: 'unknown' });
    stretches.push(...built.reverse());
    if (archive) {
      const at = archive.archived_at.getTime();
      stretches.push({ from: second(at), kind: 'purged', stateVersion: archive.state_version, purgeRule: archive.purge_rule, archivedAt: isoLocal(archive.archived_at, tz) });
    }
    below = state.STATE_VERSION;
  });
  return { start, stretches };
}

/** The answer for moment `at` (compared at whole seconds, the precision of UPDATED_AT). */
export function stateAt(v: Versions, at: Date, tz: string): AsOf {
  const t = second(at.getTime());
  const list = v.stretches;
  if (list.length === 0) return { kind: 'unknown-flight' };
  let i = -1;
  while (i + 1 < list.length && list[i + 1].from <= t) i++;
  const nextState = (from: number) => list.slice(from).find((x) => x.kind === 'state');
  const iso = (ms: number) => isoLocal(new Date(ms), tz);
  if (i < 0) {
    if (v.start === 'created') return { kind: 'not-yet-created', createdAt: iso(list[0].from) };
    const first = nextState(0);
    return { kind: 'outside-retention', earliest: first ? iso(first.from) : null };
  }
  const x = list[i];
  if (x.kind === 'unknown') {
    const next = nextState(i);
    return { kind: 'outside-retention', earliest: next ? iso(next.from) : null };
  }
  if (x.kind === 'purged') {
    const back = list[i + 1];
    return { kind: 'purged', stateVersion: x.stateVersion, purgeRule: x.purgeRule, archivedAt: x.archivedAt, returnedAt: back?.kind === 'state' ? iso(back.from) : null };
  }
  const after = list[i + 1];
  return { kind: 'state', state: x.state, madeBy: x.madeBy, source: x.source, validUntil: after ? iso(after.from) : null };
}

/** Everything retained about flight `flid`, read in one snapshot (a repeatable-read transaction). */
export async function loadRetained(db: Db, flid: string, tz: string): Promise<Retained> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (tx) => {
      const current = (await loadStates(tx, [flid], tz)).get(flid) ?? null;
      const archived = await History.readAsOfArchived(tx, flid);
      const changes = await Flight.readTimelineChanges(tx, flid);
      return { current, archived: archived.map((a) => ({ ...a, state_version: Number(a.state_version) })), changes };
    });
}

/** Flight `flid` as of `at`. */
export async function flightAsOf(db: Db, flid: string, at: Date, tz: string): Promise<AsOf> {
  return stateAt(versionsOf(await loadRetained(db, flid, tz), tz), at, tz);
}
