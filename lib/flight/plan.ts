// The flight planner (pure): applies flight messages one by one, in inbox order, to the flights
// as loaded before the batch, in memory, and says what to write.
//
//   plan.needs(message) → Need                           what to load first (empty: nothing)
//   plan.apply(message) → { outcome, mirror, events }    one message; sees the earlier ones
//   plan.result()       → { writes, events, changes, days } the batch's net writes
//
// Covers FLOP (merge), FDEL (delete path, master → shared cascade, MAFL), ADFT (set-only
// upsert), snapshots (diff against the day's roster, INV-7 deletions, ledger version), version
// floors of purged FLIDs and the events (payloads built by lib/contract/kafka.ts). Every rule it uses is in merge.ts (pure) and
// rules.ts (data). No I/O: a message is worked out in phases (step.ts), each stating what it
// reads that is not loaded; flights and shared flights are looked up in one Overlay, days in one
// Days (overlay.ts). The caller (lib/flight/session.ts) asks needs, loads, asks again until the
// answer is empty, then applies: apply never meets something not loaded (if it does, that is a
// bug and throws). A message's changes reach the batch only at apply (no partial effect).
import { msgDeleted, msgUpsert } from '../contract/kafka.ts';
import { Days, isEmpty, need, Overlay, type DayData, type Loaded, type Need } from './overlay.ts';
import { runAll, scopeNeeds, scopeOf, Step, workOut, type Batch, type ChangeCause, type FlightCommand, type PlanMessage, type SnapshotSummary } from './step.ts';
import { DATA_KEYS, type FlightState } from './state.ts';

export { Loaded, need, type DayData, type Need, type SharedRow } from './overlay.ts';
export type { ChangeCause, FlightCommand, PlanMessage } from './step.ts';

export interface PlanContext {
  timeZone: string;
  /** msgx.airport.day-cutover 'HH:MM'. */
  cutover: string;
}

// ---------------------------------------------------------------------------------------------
// output

/** An outbox row, in the order EVENT_IDs are taken (msg events and schd upserts interleaved as one-at-a-time processing would take them). */
export type PlannedEvent = { target: 'msg'; flid: string; stateVersion: number; payload: Record<string, unknown> } | { target: 'schd'; flid: string; stateVersion: number };

export type ChangeOp = 'CREATE' | 'UPDATE' | 'DELETE' | 'REVIVE';

/** Which change of which flight: the flight_change record's key, as stored and as read back (lib/flight/timeline.ts). */
export interface ChangeOf {
  flid: string;
  stateVersion: number;
  msgId: number;
  kind: string;
  op: ChangeOp;
  cause: ChangeCause;
}

/** One message's change of one flight (the flight_change record: trace and timeline). */
export interface FlightChange extends ChangeOf {
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
  snapshot?: SnapshotSummary;
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

export class FlightPlan {
  private readonly loaded: Loaded;
  private readonly ctx: PlanContext;
  /** The batch's states so far (messages applied), over what was loaded. */
  private readonly current: Overlay;
  private readonly days: Days;
  private readonly batch: Batch;
  private readonly events: PlannedEvent[] = [];
  private readonly changes: FlightChange[] = [];
  private readonly snapLog: SnapLogRow[] = [];
  private readonly ledgerFirst = new Map<string, number | null>();
  /** The step `needs` worked out for a message with everything at hand: `apply` of that message commits it (unless another message was applied in between). */
  private prepared: { m: PlanMessage; step: Step } | null = null;

  constructor(loaded: Loaded, ctx: PlanContext) {
    this.loaded = loaded;
    this.ctx = ctx;
    this.current = new Overlay(loaded);
    this.days = new Days(loaded);
    this.batch = { states: this.current, days: this.days, loaded };
  }

  private step(m: PlanMessage): Step {
    return new Step(this.batch, m.msgId, m.cmd, { msgId: m.msgId, now: m.now, timeZone: this.ctx.timeZone, cutover: this.ctx.cutover });
  }

  // --- one message ---------------------------------------------------------------------------

  /**
   * What to load before `m` can be applied (empty: everything is at hand). Depends on what is
   * loaded: ask again after loading. Changes nothing. Throws a PipelineError for the message.
   */
  needs(m: PlanMessage): Need {
    this.prepared = null;
    const step = this.step(m);
    const n = workOut(step);
    if (isEmpty(n)) this.prepared = { m, step };
    return n;
  }

  /** Apply one message (its needs loaded). Throws a PipelineError for the message. */
  apply(m: PlanMessage): MessagePlan {
    let step = this.prepared?.m === m ? this.prepared.step : null;
    this.prepared = null;
    if (!step) runAll((step = this.step(m)));
    const changed = [...step.keys.keys()];
    const before = this.events.length;
    this.commit(step, m);
    if (step.day) this.commitDay(step, m, m.cmd as Extract<FlightCommand, { kind: 'snapshot' }>, step.day);
    return {
      outcome: step.skipped ? { state: 'SKIPPED', reason: step.skipped } : { state: 'SUCCEEDED' },
      mirror: step.mirror,
      events: this.events.length - before,
      changed,
      ...(step.snapshot ? { snapshot: step.snapshot } : {}),
    };
  }

  /** What to load before `addressed(cmd, changed)` can answer (empty: everything is at hand). */
  addressedNeeds(cmd: FlightCommand, changed: readonly string[] = []): Need {
    if (cmd.kind === 'snapshot' && cmd.day !== null && !this.days.knows(cmd.day)) return need({ days: [cmd.day] });
    return scopeNeeds(this.current, this.addressedFlids(cmd, changed), this.loaded);
  }

  /**
   * Redis scope of a message whose business transaction committed before (its effect is in the
   * loaded state): the flights it carries and the ones it changed (`changed`, from its change
   * records), their masters and shared flights; for a snapshot every flight of its day.
   * Changes nothing.
   */
  addressed(cmd: FlightCommand, changed: readonly string[] = []): string[] {
    return scopeOf(this.current, this.addressedFlids(cmd, changed), this.loaded);
  }

  /** The flights it carries, the ones it changed as a consequence (cascade, MAFL of a former master, INV-7 deletions), a snapshot's day. */
  private addressedFlids(cmd: FlightCommand, changed: readonly string[]): string[] {
    const out = cmd.kind === 'flop' ? [cmd.flid] : cmd.records.map((r) => r.flid);
    out.push(...changed);
    if (cmd.kind === 'snapshot' && cmd.day !== null) out.push(...this.days.get(cmd.day).flids);
    return out;
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
    this.days.set(d.day, { ledger: { version, lastMessageId: m.msgId }, roster: d.roster, flids: [...flids] });
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
    for (const [day, data] of this.days.entries()) {
      const before = this.days.persisted(day)?.roster ?? null;
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
