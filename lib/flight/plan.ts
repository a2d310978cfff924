// The flight planner (pure): applies flight messages one by one, in inbox order, to the flights
// as loaded before the batch, in memory, and says what to write.
//
//   plan.apply(message) → { outcome, mirror, events }      one message; sees the earlier ones
//   plan.result()       → { writes, events, changes, days } the batch's net writes
//
// Covers FLOP (merge), FDEL (delete path, master → shared cascade, MAFL), ADFT (set-only
// upsert), snapshots (diff against the day's roster, INV-7 deletions, ledger version), version
// floors of purged FLIDs and the events (payloads built by lib/contract/kafka.ts). Every rule it uses is in merge.ts (pure) and
// rules.ts (data). No I/O: flights are looked up in one Overlay (the message's changes over the
// batch's over what was loaded); whatever was not loaded, apply answers as a Need instead of a
// plan — the caller (lib/flight/session.ts) loads it and calls apply again for the same
// message; a message's changes reach the batch only when its apply returns a plan (no partial
// effect).
import { msgDeleted, msgUpsert } from '../contract/kafka.ts';
import { protocol } from '../core/errors.ts';
import type { DecodeNotes, Patch, ScheduleRecord } from './decode.ts';
import type { DigestedRecord, Unchanged } from './digest.ts';
import { applyAdft, applyFlop, applyMafl, applySnapshotRecord, compareFlid, deleteFlight, deriveMafl, touchesMaster, type MergeContext, type MergeResult } from './merge.ts';
import { DATA_KEYS, type FlightState } from './state.ts';

// ---------------------------------------------------------------------------------------------
// input

/** A flight message, decoded (lib/flight/handlers.ts decodes; pure). */
export type FlightCommand = (
  | { kind: 'flop'; styp: string; flid: string; delete: boolean; patch: Patch }
  | { kind: 'adft'; styp: string; records: ScheduleRecord[] }
  /** `day` null: an empty RESP, whose day comes from the request it answers (set before apply). */
  | { kind: 'snapshot'; styp: 'DNLD' | 'RESP'; day: string | null; recs: number; records: DigestedRecord[] }
) & { /** What the decoder noted (counted once the message's business transaction committed). */ notes?: DecodeNotes };

/** An ACTIVE flight with a MAID, as persisted (the shared flights of that master). */
export interface SharedRow {
  flid: string;
  flno?: string;
  maid: string;
}

/** The snapshot ledger of one operation day, as persisted. */
export interface DayData {
  ledger: { version: number; lastMessageId: number } | null;
  /** FLIDs of the latest snapshot of that day (SCHD_GEN_FLID). */
  roster: string[];
  /** Every flight whose OPERATION_DAY is that day, any state. */
  flids: string[];
}

/** What the batch loaded, as persisted before the batch. Filled by the session's loader. */
export class Loaded {
  readonly states = new Map<string, FlightState>();
  /** Looked up and not found. */
  readonly absent = new Set<string>();
  /** Version floor of absent FLIDs that were purged before (lib/flight/floor.ts). */
  readonly floors = new Map<string, number>();
  /** master FLID → its ACTIVE shared flights (every master key looked up has an entry). */
  readonly sharedByMaster = new Map<string, SharedRow[]>();
  readonly days = new Map<string, DayData>();
  /** Snapshot records that would change nothing (digest.ts): their flights are not loaded, not merged, not written. */
  readonly unchanged = new Map<string, Unchanged>();

  knows(flid: string): boolean {
    return this.states.has(flid) || this.absent.has(flid);
  }
}

/** What the planner asks to be loaded before a message can be planned: states (and floors) of FLIDs, shared flights of masters, days. */
export interface Need {
  flids: string[];
  masters: string[];
  days: string[];
}

export const need = (n: Partial<Need>): Need => ({ flids: n.flids ?? [], masters: n.masters ?? [], days: n.days ?? [] });

/** A lookup of something not loaded, inside the planner: caught by apply / addressed and answered as a Need (never leaves this file). */
class Missing {
  readonly need: Need;
  constructor(n: Partial<Need>) {
    this.need = need(n);
  }
}

/** The answer of apply / addressed: a result, or what to load first (then call again for the same message). */
export type Planned<T> = { need: Need } | { value: T };

function planned<T>(f: () => T): Planned<T> {
  try {
    return { value: f() };
  } catch (e) {
    if (e instanceof Missing) return { need: e.need };
    throw e;
  }
}

/**
 * Flight states in layers, looked up in one place: a message's working states over the batch's
 * (messages applied so far) over what was loaded before the batch. `get` answers the state
 * (undefined: no such flight) or asks for it to be loaded; `knows` says whether it can answer
 * without loading; `commit` moves a layer's states into the layer below.
 */
export class Overlay {
  private readonly own = new Map<string, FlightState>();
  /** master FLID → FLIDs of this layer whose MAID is (or was, in this layer) that master. */
  private readonly byMaster = new Map<string, Set<string>>();
  private readonly below: Overlay | null;
  private readonly loaded: Loaded;

  constructor(loaded: Loaded, below: Overlay | null = null) {
    this.loaded = loaded;
    this.below = below;
  }

  get(flid: string): FlightState | undefined {
    const s = this.own.get(flid);
    if (s) return s;
    if (this.below) return this.below.get(flid);
    if (!this.loaded.knows(flid)) throw new Missing({ flids: [flid] });
    return this.loaded.states.get(flid);
  }

  /** The state if it is at hand (a layer or loaded), without asking for anything. */
  peek(flid: string): FlightState | undefined {
    return this.own.get(flid) ?? (this.below ? this.below.peek(flid) : this.loaded.states.get(flid));
  }

  knows(flid: string): boolean {
    return this.own.has(flid) || (this.below ? this.below.knows(flid) : this.loaded.knows(flid));
  }

  /** Changed in this layer or a layer below (not as loaded). */
  overlays(flid: string): boolean {
    return this.own.has(flid) || (this.below?.overlays(flid) ?? false);
  }

  set(flid: string, s: FlightState): void {
    const old = this.own.get(flid);
    if (old?.data.MAID !== undefined) this.byMaster.get(String(old.data.MAID))?.delete(flid);
    this.own.set(flid, s);
    if (s.data.MAID !== undefined) {
      const m = String(s.data.MAID);
      if (!this.byMaster.has(m)) this.byMaster.set(m, new Set());
      this.byMaster.get(m)!.add(flid);
    }
  }

  /** FLIDs of the layers whose MAID may be `master` (check each state: a candidate may have moved on). */
  candidatesOf(master: string): Set<string> {
    const out = this.below ? this.below.candidatesOf(master) : new Set<string>();
    for (const f of this.byMaster.get(master) ?? []) out.add(f);
    return out;
  }

  /** This layer's states, in the order they were first set. */
  entries(): IterableIterator<[string, FlightState]> {
    return this.own.entries();
  }

  /** Move this layer's states into the layer below (a message's changes into the batch). */
  commit(): void {
    if (!this.below) throw new Error('the bottom layer has nothing to commit into');
    for (const [f, s] of this.own) this.below.set(f, s);
    this.own.clear();
    this.byMaster.clear();
  }
}

export interface PlanContext {
  timeZone: string;
  /** msgx.airport.day-cutover 'HH:MM'. */
  cutover: string;
}

export interface PlanMessage {
  msgId: number;
  /** TYPE/STYP */
  kind: string;
  type: string;
  styp: string;
  now: Date;
  cmd: FlightCommand;
}

// ---------------------------------------------------------------------------------------------
// output

/** An outbox row, in the order EVENT_IDs are taken (msg events and schd upserts interleaved as one-at-a-time processing would take them). */
export type PlannedEvent = { target: 'msg'; flid: string; stateVersion: number; payload: Record<string, unknown> } | { target: 'schd'; flid: string; stateVersion: number };

export type ChangeOp = 'CREATE' | 'UPDATE' | 'DELETE' | 'REVIVE';
export type ChangeCause = 'MESSAGE' | 'CASCADE' | 'MAFL' | 'SNAPSHOT_DELETE';

/** One message's change of one flight (the flight_change record: trace and timeline). */
export interface FlightChange {
  flid: string;
  stateVersion: number;
  msgId: number;
  kind: string;
  op: ChangeOp;
  cause: ChangeCause;
  /** key → [before, after]; null = absent. */
  changes: Record<string, [unknown, unknown]>;
  at: Date;
}

export interface SnapLogRow {
  msgId: number;
  styp: string;
  day: string;
  version: number | null;
  outcome: 'APPLIED' | 'REPLAY';
  recs: number;
  written: number;
  unchanged: number;
  deleted: number;
  at: Date;
}

export interface MessagePlan {
  outcome: { state: 'SUCCEEDED' } | { state: 'SKIPPED'; reason: string };
  /** Redis scope: every flight the message addresses, changed or not, with masters and shared flights. */
  mirror: string[];
  /** Outbox rows this message wrote. */
  events: number;
  /** FLIDs whose state it changed. */
  changed: string[];
  /** Snapshot details (log lines). */
  snapshot?: { day: string; version: number | null; replay: boolean; deleted: number };
}

/** A flight to write: as persisted before the batch (undefined: new) and as the batch leaves it. */
export interface FlightWrite {
  prev: FlightState | undefined;
  next: FlightState;
}

export interface LedgerWrite {
  day: string;
  /** The version persisted before the batch (null: no ledger row yet): compare-and-set. */
  fromVersion: number | null;
  version: number;
  lastMessageId: number;
  roster: string[];
  /** The roster persisted before the batch when it is the same list (the same object): not rewritten. */
  previousRoster: string[] | null;
  at: Date;
}

export interface PlanResult {
  flights: FlightWrite[];
  events: PlannedEvent[];
  /** FLIDs deleted by the batch whose pending schd rows are dropped. */
  schdRemovals: string[];
  changes: FlightChange[];
  ledgers: LedgerWrite[];
  snapLog: SnapLogRow[];
}

// ---------------------------------------------------------------------------------------------
// the planner

type Shared = Pick<FlightState, 'FLID' | 'STATE' | 'data'>;

/** One message's working set on top of the batch's: discarded when it needs data. */
class Step {
  /** State before this message of every flight it touched (undefined: new). */
  readonly before = new Map<string, FlightState | undefined>();
  /** The states this message changed, over the batch's. */
  readonly working: Overlay;
  readonly keys = new Map<string, Set<string>>();
  readonly cause = new Map<string, ChangeCause>();
  readonly addressed = new Set<string>();
  readonly carriedLive = new Set<string>();
  constructor(batch: Overlay, loaded: Loaded) {
    this.working = new Overlay(loaded, batch);
  }
}

export class FlightPlan {
  private readonly loaded: Loaded;
  private readonly ctx: PlanContext;
  /** The batch's states so far (messages applied), over what was loaded. */
  private readonly current: Overlay;
  private readonly dayState = new Map<string, DayData>();
  private readonly events: PlannedEvent[] = [];
  private readonly changes: FlightChange[] = [];
  private readonly snapLog: SnapLogRow[] = [];
  private readonly ledgerFirst = new Map<string, number | null>();

  constructor(loaded: Loaded, ctx: PlanContext) {
    this.loaded = loaded;
    this.ctx = ctx;
    this.current = new Overlay(loaded);
  }

  // --- reads (the step's layer, or the batch's; Missing when not loaded) -----------------------

  private dayOf(day: string): DayData {
    const d = this.dayState.get(day) ?? this.loaded.days.get(day);
    if (!d) throw new Missing({ days: [day] });
    return d;
  }

  /** ACTIVE flights whose MAID is `master`, as `layer` (the step's, or the batch's) sees them. */
  private sharedOf(layer: Overlay, master: string): Shared[] {
    const persisted = this.loaded.sharedByMaster.get(master);
    if (!persisted) throw new Missing({ masters: [master] });
    const out = new Map<string, Shared>();
    for (const r of persisted) if (!layer.overlays(r.flid)) out.set(r.flid, { FLID: r.flid, STATE: 'ACTIVE', data: { MAID: r.maid, ...(r.flno ? { FLNO: r.flno } : {}) } });
    for (const f of layer.candidatesOf(master)) {
      const s = layer.get(f)!;
      if (s.STATE === 'ACTIVE' && String(s.data.MAID ?? '') === master) out.set(f, s);
    }
    return [...out.values()].sort((a, b) => compareFlid(a.FLID, b.FLID));
  }

  // --- one message ---------------------------------------------------------------------------

  /** Apply one message: its plan, or what to load first (then call again). Throws a PipelineError for the message. */
  apply(m: PlanMessage): Planned<MessagePlan> {
    return planned(() => this.applyStep(m));
  }

  private applyStep(m: PlanMessage): MessagePlan {
    const step = new Step(this.current, this.loaded);
    const at = step.working;
    const mctx: MergeContext = { msgId: m.msgId, now: m.now, timeZone: this.ctx.timeZone, cutover: this.ctx.cutover };
    let skipped: string | null = null;
    let snapshot: MessagePlan['snapshot'];
    let day: { day: string; data: DayData; replay: boolean; roster: string[] } | null = null;
    const cmd = m.cmd;
    if (cmd.kind === 'flop') {
      step.addressed.add(cmd.flid);
      const s = at.get(cmd.flid);
      if (!s) skipped = 'no-flight';
      else if (s.STATE === 'DELETED') skipped = 'no-flight:deleted';
      else {
        if (!cmd.delete) step.carriedLive.add(cmd.flid);
        this.record(step, cmd.delete ? deleteFlight(s, mctx) : applyFlop(s, cmd.patch, mctx), 'MESSAGE');
      }
    } else if (cmd.kind === 'adft') {
      for (const r of cmd.records) {
        step.addressed.add(r.flid);
        step.carriedLive.add(r.flid);
        this.record(step, applyAdft(at.get(r.flid), r.flid, r.patch, mctx), 'MESSAGE');
      }
    } else {
      if (cmd.day === null) throw protocol(`SCHD/${cmd.styp}: no operation day (RECS=0 and no open request to take it from)`);
      const data = this.dayOf(cmd.day);
      if (data.ledger?.lastMessageId === m.msgId) {
        // the latest snapshot of D again (replayed): a no-op that brings Redis in line
        for (const f of data.flids) step.addressed.add(f);
        day = { day: cmd.day, data, replay: true, roster: data.roster };
        snapshot = { day: cmd.day, version: null, replay: true, deleted: 0 };
      } else {
        const inNew = new Set<string>();
        for (const r of cmd.records) {
          inNew.add(r.flid);
          step.addressed.add(r.flid);
          step.carriedLive.add(r.flid);
          if (this.loaded.unchanged.get(r.flid)?.day === cmd.day && !at.overlays(r.flid)) continue; // the same record again (digest.ts)
          this.record(step, applySnapshotRecord(at.get(r.flid), r.flid, r.patch, cmd.day, mctx), 'MESSAGE');
        }
        // INV-7: (O − N) ∩ {OPERATION_DAY still D}
        let deleted = 0;
        for (const f of data.roster) {
          if (inNew.has(f)) continue;
          const s = at.get(f);
          if (!s || s.STATE !== 'ACTIVE' || s.OPERATION_DAY !== cmd.day) continue;
          step.addressed.add(f);
          this.record(step, deleteFlight(s, mctx), 'SNAPSHOT_DELETE');
          deleted++;
        }
        for (const f of data.flids) step.addressed.add(f);
        day = { day: cmd.day, data, replay: false, roster: cmd.records.map((r) => r.flid) };
        snapshot = { day: cmd.day, version: (data.ledger?.version ?? 0) + 1, replay: false, deleted };
      }
    }
    this.cascadeMasterDeletions(step, mctx);
    const masters = this.rederiveMasters(step, mctx);
    const mirror = this.related(step, masters);
    // everything this message needs is known: commit the step into the batch
    const changed = [...step.keys.keys()];
    const before = this.events.length;
    this.commit(step, m);
    if (day) this.commitDay(step, m, cmd as Extract<FlightCommand, { kind: 'snapshot' }>, day);
    return {
      outcome: skipped ? { state: 'SKIPPED', reason: skipped } : { state: 'SUCCEEDED' },
      mirror,
      events: this.events.length - before,
      changed,
      ...(snapshot ? { snapshot } : {}),
    };
  }

  /**
   * Redis scope of a message whose business transaction committed before (its effect is in the
   * loaded state): the flights it carries and the ones it changed (`changed`, from its change
   * records), their masters and shared flights; for a snapshot every flight of its day.
   * Changes nothing.
   */
  addressed(cmd: FlightCommand, changed: readonly string[] = []): Planned<string[]> {
    return planned(() => this.addressedStep(cmd, changed));
  }

  private addressedStep(cmd: FlightCommand, changed: readonly string[]): string[] {
    const step = new Step(this.current, this.loaded);
    if (cmd.kind === 'flop') step.addressed.add(cmd.flid);
    else for (const r of cmd.records) step.addressed.add(r.flid);
    // the flights it changed as a consequence (cascade, MAFL of a former master, INV-7 deletions)
    for (const f of changed) step.addressed.add(f);
    if (cmd.kind === 'snapshot' && cmd.day !== null) for (const f of this.dayOf(cmd.day).flids) step.addressed.add(f);
    return this.related(step, []);
  }

  /** Record a merge result in the step: one version step per flight per message. */
  private record(step: Step, r: MergeResult, cause: ChangeCause): void {
    if (r.changed.length === 0) return;
    const flid = r.state.FLID;
    if (!step.before.has(flid)) step.before.set(flid, this.current.get(flid));
    const orig = step.before.get(flid);
    const keys = step.keys.get(flid) ?? new Set<string>();
    for (const k of r.changed) keys.add(k);
    step.keys.set(flid, keys);
    if (!step.cause.has(flid)) step.cause.set(flid, cause);
    const base = orig?.STATE_VERSION ?? this.loaded.floors.get(flid) ?? 0;
    step.working.set(flid, { ...r.state, STATE_VERSION: base + 1 });
  }

  /** Deleting a master deletes its ACTIVE shared flights, except those this message carries as live. */
  private cascadeMasterDeletions(step: Step, ctx: MergeContext): void {
    const deletedMasters = [...step.keys.keys()].filter((f) => {
      const s = step.working.peek(f)!;
      return s.STATE === 'DELETED' && s.data.MAID === undefined;
    });
    const missingMasters = deletedMasters.filter((m) => !this.loaded.sharedByMaster.has(m));
    if (missingMasters.length) throw new Missing({ masters: missingMasters });
    const kids = deletedMasters.flatMap((m) => this.sharedOf(this.current, m).map((k) => ({ m, flid: k.FLID }))).filter((k) => !step.carriedLive.has(k.flid));
    const unknown = kids.map((k) => k.flid).filter((f) => !step.working.knows(f));
    if (unknown.length) throw new Missing({ flids: unknown });
    for (const { m, flid } of kids) {
      const s = step.working.get(flid);
      if (s && s.STATE === 'ACTIVE' && String(s.data.MAID ?? '') === m) this.record(step, deleteFlight(s, ctx), 'CASCADE');
    }
  }

  /** G-MAFL: re-derive every master touched by a change of a shared flight's existence, FLNO or MAID. */
  private rederiveMasters(step: Step, ctx: MergeContext): string[] {
    const candidates = new Set<string>();
    for (const [f, keys] of step.keys) {
      if (!touchesMaster([...keys])) continue;
      const prev = step.before.get(f);
      const cur = step.working.peek(f)!;
      if (prev?.data.MAID !== undefined) candidates.add(String(prev.data.MAID));
      if (cur.data.MAID !== undefined) candidates.add(String(cur.data.MAID));
      candidates.add(f); // created / revived master, or a master that became shared
    }
    const list = [...candidates];
    // ask for everything at once (one load), then derive
    const missing = { flids: list.filter((m) => !step.working.knows(m)), masters: list.filter((m) => !this.loaded.sharedByMaster.has(m)) };
    if (missing.flids.length || missing.masters.length) throw new Missing(missing);
    const out: string[] = [];
    for (const m of list) {
      const s = step.working.get(m);
      if (!s) continue;
      out.push(m);
      this.record(step, applyMafl(s, deriveMafl(m, this.sharedOf(step.working, m)), ctx), 'MAFL');
    }
    return out;
  }

  /** Addressed flights, flights changed as a consequence, their masters and their shared flights. */
  private related(step: Step, masters: string[]): string[] {
    const out = new Set<string>([...step.addressed, ...step.keys.keys(), ...masters]);
    for (const f of [...out]) {
      // the master of every flight whose state is at hand (a snapshot's day may hold flights not loaded)
      const maid = step.working.peek(f)?.data.MAID ?? this.loaded.unchanged.get(f)?.maid;
      if (maid !== undefined) out.add(String(maid));
    }
    const keys = [...out];
    const missingMasters = keys.filter((k) => !this.loaded.sharedByMaster.has(k));
    if (missingMasters.length) throw new Missing({ masters: missingMasters });
    for (const k of keys) for (const s of this.sharedOf(step.working, k)) out.add(s.FLID);
    return [...out];
  }

  // --- committing a message into the batch ----------------------------------------------------

  private commit(step: Step, m: PlanMessage): void {
    const schd: PlannedEvent[] = [];
    for (const [flid, keys] of step.keys) {
      const s = step.working.peek(flid)!;
      const prev = step.before.get(flid);
      // events: one msg event per changed flight; schd: the latest complete state (live) or none (deleted)
      const changed = [...keys];
      if (s.STATE === 'DELETED') {
        this.events.push({ target: 'msg', flid, stateVersion: s.STATE_VERSION, payload: msgDeleted({ flid, stateVersion: s.STATE_VERSION, updatedAt: s.UPDATED_AT, msgId: m.msgId }) });
      } else {
        this.events.push({
          target: 'msg',
          flid,
          stateVersion: s.STATE_VERSION,
          payload: msgUpsert({ flid, stateVersion: s.STATE_VERSION, updatedAt: s.UPDATED_AT, msgId: m.msgId, type: m.type, styp: m.styp, changed }),
        });
        schd.push({ target: 'schd', flid, stateVersion: s.STATE_VERSION });
      }
      this.changes.push({ flid, stateVersion: s.STATE_VERSION, msgId: m.msgId, kind: m.kind, op: changeOp(prev, s), cause: step.cause.get(flid)!, changes: fieldChanges(prev, s, changed), at: m.now });
    }
    // one-at-a-time processing writes a message's msg events, then its schd upserts
    this.events.push(...schd);
    step.working.commit();
  }

  private commitDay(step: Step, m: PlanMessage, cmd: Extract<FlightCommand, { kind: 'snapshot' }>, d: { day: string; data: DayData; replay: boolean; roster: string[] }): void {
    if (d.replay) {
      this.snapLog.push({ msgId: m.msgId, styp: cmd.styp, day: d.day, version: null, outcome: 'REPLAY', recs: cmd.recs, written: 0, unchanged: cmd.recs, deleted: 0, at: m.now });
      return;
    }
    if (!this.ledgerFirst.has(d.day)) this.ledgerFirst.set(d.day, d.data.ledger?.version ?? null);
    const version = (d.data.ledger?.version ?? 0) + 1;
    const flids = new Set(d.data.flids);
    for (const f of step.keys.keys()) if (this.current.peek(f)!.OPERATION_DAY === d.day) flids.add(f);
    this.dayState.set(d.day, { ledger: { version, lastMessageId: m.msgId }, roster: d.roster, flids: [...flids] });
    const written = cmd.records.filter((r) => step.keys.has(r.flid)).length;
    const deleted = [...step.cause.values()].filter((c) => c === 'SNAPSHOT_DELETE').length;
    this.snapLog.push({ msgId: m.msgId, styp: cmd.styp, day: d.day, version, outcome: 'APPLIED', recs: cmd.recs, written, unchanged: cmd.recs - written, deleted, at: m.now });
  }

  /** Every flight the batch knows, as it leaves it (null = no such flight). */
  states(): Map<string, FlightState | null> {
    const out = new Map<string, FlightState | null>();
    for (const f of this.loaded.absent) out.set(f, null);
    for (const [f, st] of this.loaded.states) out.set(f, st);
    for (const [f, st] of this.current.entries()) out.set(f, st);
    return out;
  }

  // --- the batch's net writes ----------------------------------------------------------------

  result(): PlanResult {
    const flights: FlightWrite[] = [];
    for (const [flid, next] of this.current.entries()) flights.push({ prev: this.loaded.states.get(flid), next });
    // schd: one row per FLID, the latest upsert wins (at its place in the EVENT_ID order); a flight
    // the batch leaves DELETED has no schd row (its pending one is dropped)
    const lastSchd = new Map<string, number>();
    this.events.forEach((e, i) => e.target === 'schd' && lastSchd.set(e.flid, i));
    const events = this.events.filter((e, i) => e.target === 'msg' || (lastSchd.get(e.flid) === i && this.current.peek(e.flid)!.STATE === 'ACTIVE'));
    const schdRemovals = [...this.current.entries()].filter(([, s]) => s.STATE === 'DELETED').map(([f]) => f);
    const ledgers: LedgerWrite[] = [];
    for (const [day, data] of this.dayState) {
      const before = this.loaded.days.get(day)?.roster ?? null;
      const same = before !== null && before.length === data.roster.length && [...before].sort().join('\n') === [...data.roster].sort().join('\n');
      ledgers.push({
        day,
        fromVersion: this.ledgerFirst.get(day) ?? null,
        version: data.ledger!.version,
        lastMessageId: data.ledger!.lastMessageId,
        roster: same ? before : data.roster,
        previousRoster: same ? before : null,
        at: this.snapLog.findLast((l) => l.day === day)!.at,
      });
    }
    return { flights, events, schdRemovals, changes: this.changes, ledgers, snapLog: this.snapLog };
  }
}

function changeOp(prev: FlightState | undefined, next: FlightState): ChangeOp {
  if (!prev) return 'CREATE';
  if (prev.STATE === 'DELETED' && next.STATE === 'ACTIVE') return 'REVIVE';
  if (prev.STATE === 'ACTIVE' && next.STATE === 'DELETED') return 'DELETE';
  return 'UPDATE';
}

const LIFECYCLE_KEYS = new Set(['STATE', 'OPERATION_DAY', 'MAFL']);
const DATA_KEY_SET = new Set(DATA_KEYS);

function valueOf(s: FlightState | undefined, key: string): unknown {
  if (!s) return null;
  if (key === 'STATE') return s.STATE;
  if (key === 'OPERATION_DAY') return s.OPERATION_DAY;
  if (key === 'MAFL') return s.MAFL.length ? s.MAFL : null;
  const v = s.data[key];
  return v === undefined || v === '' || (Array.isArray(v) && v.length === 0) ? null : v;
}

/** key → [before, after] of the keys a message changed. */
function fieldChanges(prev: FlightState | undefined, next: FlightState, keys: string[]): Record<string, [unknown, unknown]> {
  const out: Record<string, [unknown, unknown]> = {};
  for (const k of keys) if (LIFECYCLE_KEYS.has(k) || DATA_KEY_SET.has(k)) out[k] = [valueOf(prev, k), valueOf(next, k)];
  return out;
}
