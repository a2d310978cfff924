// One flight message worked out on top of the batch (pure; plan.ts drives it and commits it).
// The work runs in phases, each of which first states what it will read that is not loaded yet
// (its `needs`), then reads and merges (its `run`):
//
//   inputs    the flights the message carries; a snapshot's day, then its records' and old roster's flights
//   cascade   a deleted master's shared flights, then their states
//   rederive  the masters whose MAFL a change touches: their states and shared flights (G-MAFL)
//   scope     the Redis scope: shared flights of every flight addressed and of its master
//
// What a phase needs can depend on what the earlier phases merged (a FLOP that names a new MAID
// needs that master), so `workOut` stops at the first phase that needs something: the caller
// loads it and works the message out again on a fresh step.
import { protocol } from '../core/errors.ts';
import type { DecodeNotes, Patch, ScheduleRecord } from './decode.ts';
import { patchOf, type DigestedRecord } from './digest.ts';
import { applyAdft, applyFlop, applyMafl, applySnapshotRecord, deleteFlight, deriveMafl, touchesMaster, type MergeContext, type MergeResult } from './merge.ts';
import { isEmpty, need, Overlay, type DayData, type Days, type Loaded, type Need } from './overlay.ts';
import type { FlightState } from './state.ts';

/** A flight message, decoded (lib/flight/handlers.ts decodes; pure). */
export type FlightCommand = (
  | { kind: 'flop'; styp: string; flid: string; delete: boolean; patch: Patch }
  | { kind: 'adft'; styp: string; records: ScheduleRecord[] }
  /** `day` null: an empty RESP, whose day comes from the request it answers (set before apply). */
  | { kind: 'snapshot'; styp: 'DNLD' | 'RESP'; day: string | null; recs: number; records: DigestedRecord[] }
) & { /** What the decoder noted (counted once the message's business transaction committed). */ notes?: DecodeNotes };

type Snapshot = Extract<FlightCommand, { kind: 'snapshot' }>;

export interface PlanMessage {
  msgId: number;
  /** TYPE/STYP */
  kind: string;
  type: string;
  styp: string;
  now: Date;
  cmd: FlightCommand;
}

export type ChangeCause = 'MESSAGE' | 'CASCADE' | 'MAFL' | 'SNAPSHOT_DELETE';

/** Snapshot details of a message (log lines). */
export interface SnapshotSummary {
  day: string;
  version: number | null;
  replay: boolean;
  deleted: number;
}

/** The batch a step works on: its states and days so far, over what was loaded. */
export interface Batch {
  states: Overlay;
  days: Days;
  loaded: Loaded;
}

/** One message's working set on top of the batch's: committed by plan.ts, or dropped. */
export class Step {
  readonly cmd: FlightCommand;
  readonly msgId: number;
  readonly ctx: MergeContext;
  readonly batch: Batch;
  /** State before this message of every flight it touched (undefined: new). */
  readonly before = new Map<string, FlightState | undefined>();
  /** The states this message changed, over the batch's. */
  readonly working: Overlay;
  readonly keys = new Map<string, Set<string>>();
  readonly cause = new Map<string, ChangeCause>();
  readonly addressed = new Set<string>();
  readonly carriedLive = new Set<string>();
  skipped: string | null = null;
  snapshot: SnapshotSummary | undefined;
  /** A snapshot's day as it leaves it (committed by plan.ts). */
  day: { day: string; data: DayData; replay: boolean; roster: string[] } | null = null;
  /** Masters whose MAFL was derived again. */
  readonly masters: string[] = [];
  /** The Redis scope (the last phase). */
  mirror: string[] = [];

  constructor(batch: Batch, msgId: number, cmd: FlightCommand, ctx: MergeContext) {
    this.batch = batch;
    this.working = new Overlay(batch.loaded, batch.states);
    this.msgId = msgId;
    this.cmd = cmd;
    this.ctx = ctx;
  }

  /** Record a merge result: one version step per flight per message. */
  record(r: MergeResult, cause: ChangeCause): void {
    if (r.changed.length === 0) return;
    const flid = r.state.FLID;
    if (!this.before.has(flid)) this.before.set(flid, this.batch.states.get(flid));
    const orig = this.before.get(flid);
    const keys = this.keys.get(flid) ?? new Set<string>();
    for (const k of r.changed) keys.add(k);
    this.keys.set(flid, keys);
    if (!this.cause.has(flid)) this.cause.set(flid, cause);
    const base = orig?.STATE_VERSION ?? this.batch.loaded.floors.get(flid) ?? 0;
    this.working.set(flid, { ...r.state, STATE_VERSION: base + 1 });
  }
}

interface Phase {
  /** What `run` would read that is not loaded (empty: run may go). */
  needs(s: Step): Need;
  run(s: Step): void;
}

const unknownFlights = (at: Overlay, flids: string[]): Need => need({ flids: flids.filter((f) => !at.knows(f)) });

/** A snapshot record that says again what the flight's stored digest says (digest.ts): not read, not merged. */
const unchangedRecord = (s: Step, day: string, flid: string): boolean => s.batch.loaded.unchanged.get(flid)?.day === day && !s.working.overlays(flid);

const inputs: Phase = {
  needs(s) {
    const cmd = s.cmd;
    if (cmd.kind === 'flop') return unknownFlights(s.working, [cmd.flid]);
    if (cmd.kind === 'adft')
      return unknownFlights(
        s.working,
        cmd.records.map((r) => r.flid),
      );
    const day = cmd.day;
    if (day === null) return need({}); // refused by run
    if (!s.batch.days.knows(day)) return need({ days: [day] });
    const data = s.batch.days.get(day);
    if (data.ledger?.lastMessageId === s.msgId) return need({}); // a replay reads no flight
    const carried = new Set(cmd.records.map((r) => r.flid));
    const read = cmd.records.flatMap((r) => (unchangedRecord(s, day, r.flid) ? [] : [r.flid]));
    return unknownFlights(s.working, [...read, ...data.roster.filter((f) => !carried.has(f))]);
  },
  run(s) {
    const { cmd, working: at, ctx } = s;
    if (cmd.kind === 'flop') {
      s.addressed.add(cmd.flid);
      const st = at.get(cmd.flid);
      if (!st) s.skipped = 'no-flight';
      else if (st.STATE === 'DELETED') s.skipped = 'no-flight:deleted';
      else {
        if (!cmd.delete) s.carriedLive.add(cmd.flid);
        s.record(cmd.delete ? deleteFlight(st, ctx) : applyFlop(st, cmd.patch, ctx), 'MESSAGE');
      }
    } else if (cmd.kind === 'adft') {
      for (const r of cmd.records) {
        s.addressed.add(r.flid);
        s.carriedLive.add(r.flid);
        s.record(applyAdft(at.get(r.flid), r.flid, r.patch, ctx), 'MESSAGE');
      }
    } else snapshotInputs(s, cmd);
  },
};

function snapshotInputs(s: Step, cmd: Snapshot): void {
  if (cmd.day === null) throw protocol(`SCHD/${cmd.styp}: no operation day (RECS=0 and no open request to take it from)`);
  const at = s.working;
  const data = s.batch.days.get(cmd.day);
  if (data.ledger?.lastMessageId === s.msgId) {
    // the latest snapshot of D again (replayed): a no-op that brings Redis in line
    for (const f of data.flids) s.addressed.add(f);
    s.day = { day: cmd.day, data, replay: true, roster: data.roster };
    s.snapshot = { day: cmd.day, version: null, replay: true, deleted: 0 };
    return;
  }
  const inNew = new Set<string>();
  for (const r of cmd.records) {
    inNew.add(r.flid);
    s.addressed.add(r.flid);
    s.carriedLive.add(r.flid);
    if (unchangedRecord(s, cmd.day, r.flid)) continue; // the same record again (digest.ts)
    s.record(applySnapshotRecord(at.get(r.flid), r.flid, patchOf(r), cmd.day, s.ctx), 'MESSAGE');
  }
  // INV-7: (O − N) ∩ {OPERATION_DAY still D}
  let deleted = 0;
  for (const f of data.roster) {
    if (inNew.has(f)) continue;
    const st = at.get(f);
    if (!st || st.STATE !== 'ACTIVE' || st.OPERATION_DAY !== cmd.day) continue;
    s.addressed.add(f);
    s.record(deleteFlight(st, s.ctx), 'SNAPSHOT_DELETE');
    deleted++;
  }
  for (const f of data.flids) s.addressed.add(f);
  s.day = { day: cmd.day, data, replay: false, roster: cmd.records.map((r) => r.flid) };
  s.snapshot = { day: cmd.day, version: (data.ledger?.version ?? 0) + 1, replay: false, deleted };
}

/** Masters this message deleted. */
const deletedMasters = (s: Step): string[] =>
  [...s.keys.keys()].filter((f) => {
    const st = s.working.peek(f)!;
    return st.STATE === 'DELETED' && st.data.MAID === undefined;
  });

/** The ACTIVE shared flights of deleted masters (as the batch has them), except those this message carries as live. */
const cascadeOf = (s: Step, masters: string[]): { m: string; flid: string }[] =>
  masters.flatMap((m) => s.batch.states.sharedOf(m).map((k) => ({ m, flid: k.FLID }))).filter((k) => !s.carriedLive.has(k.flid));

/** Deleting a master deletes its ACTIVE shared flights, except those this message carries as live. */
const cascade: Phase = {
  needs(s) {
    const masters = deletedMasters(s);
    if (masters.length === 0) return need({});
    const unloaded = masters.filter((m) => !s.working.knowsShared(m));
    if (unloaded.length) return need({ masters: unloaded });
    return unknownFlights(
      s.working,
      cascadeOf(s, masters).map((k) => k.flid),
    );
  },
  run(s) {
    for (const { m, flid } of cascadeOf(s, deletedMasters(s))) {
      const st = s.working.get(flid);
      if (st && st.STATE === 'ACTIVE' && String(st.data.MAID ?? '') === m) s.record(deleteFlight(st, s.ctx), 'CASCADE');
    }
  },
};

/** Every master touched by a change of a shared flight's existence, FLNO or MAID. */
function touchedMasters(s: Step): string[] {
  const out = new Set<string>();
  for (const [f, keys] of s.keys) {
    if (!touchesMaster([...keys])) continue;
    const prev = s.before.get(f);
    const cur = s.working.peek(f)!;
    if (prev?.data.MAID !== undefined) out.add(String(prev.data.MAID));
    if (cur.data.MAID !== undefined) out.add(String(cur.data.MAID));
    out.add(f); // created / revived master, or a master that became shared
  }
  return [...out];
}

/** G-MAFL: re-derive every master touched (asked for at once: one load). */
const rederive: Phase = {
  needs(s) {
    const list = touchedMasters(s);
    return need({ flids: list.filter((m) => !s.working.knows(m)), masters: list.filter((m) => !s.working.knowsShared(m)) });
  },
  run(s) {
    for (const m of touchedMasters(s)) {
      const st = s.working.get(m);
      if (!st) continue;
      s.masters.push(m);
      s.record(applyMafl(st, deriveMafl(m, s.working.sharedOf(m)), s.ctx), 'MAFL');
    }
  },
};

/** `flids` and the master of every one whose state is at hand (a snapshot's day may hold flights not loaded). */
function withMasters(at: Overlay, flids: Iterable<string>, loaded: Loaded): Set<string> {
  const out = new Set<string>(flids);
  for (const f of [...out]) {
    const maid = at.peek(f)?.data.MAID ?? loaded.unchanged.get(f)?.maid;
    if (maid !== undefined) out.add(String(maid));
  }
  return out;
}

/** What `scopeOf` reads: the shared flights of the flights and their masters. */
export const scopeNeeds = (at: Overlay, flids: Iterable<string>, loaded: Loaded): Need => need({ masters: [...withMasters(at, flids, loaded)].filter((k) => !at.knowsShared(k)) });

/** Redis scope: the flights, their masters and the shared flights of each. */
export function scopeOf(at: Overlay, flids: Iterable<string>, loaded: Loaded): string[] {
  const keys = withMasters(at, flids, loaded);
  const out = new Set(keys);
  for (const k of keys) for (const sh of at.sharedOf(k)) out.add(sh.FLID);
  return [...out];
}

/** Addressed flights, flights changed as a consequence, their masters and their shared flights. */
const scoped = (s: Step): string[] => [...s.addressed, ...s.keys.keys(), ...s.masters];

const scope: Phase = {
  needs: (s) => scopeNeeds(s.working, scoped(s), s.batch.loaded),
  run(s) {
    s.mirror = scopeOf(s.working, scoped(s), s.batch.loaded);
  },
};

const PHASES: readonly Phase[] = [inputs, cascade, rederive, scope];

/** Work the message out, phase by phase; at the first phase that needs something not loaded, stop and answer it (drop the step then). */
export function workOut(s: Step): Need {
  for (const p of PHASES) {
    const n = p.needs(s);
    if (!isEmpty(n)) return n;
    p.run(s);
  }
  return need({});
}

/** Work the message out without asking: everything it reads must be loaded (a read of something not loaded throws). */
export function runAll(s: Step): void {
  for (const p of PHASES) p.run(s);
}
