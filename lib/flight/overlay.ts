// What the flight planner (plan.ts) reads, and the one place each kind of it is looked up:
// flight states and the shared flights of a master in an `Overlay` (a message's changes over the
// batch's over what was loaded), operation days in `Days` (the batch's snapshots over what was
// loaded). The planner asks with `knows` / `knowsShared` what is at hand and states the rest as a
// `Need` (step.ts) before it reads; a read of something not loaded is a bug in those needs, and
// throws (`notLoaded`). Pure: the session (session.ts) fills `Loaded`.
import type { Unchanged } from './digest.ts';
import { compareFlid } from './merge.ts';
import type { FlightState } from './state.ts';

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

/** What the batch loaded, as persisted before the batch. Filled by the session's loader; only ever added to. */
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

/** What is to be loaded before a message can be applied: states (and floors) of FLIDs, shared flights of masters, days. */
export interface Need {
  flids: string[];
  masters: string[];
  days: string[];
}

export const need = (n: Partial<Need>): Need => ({ flids: n.flids ?? [], masters: n.masters ?? [], days: n.days ?? [] });

/** Nothing to load. */
export const isEmpty = (n: Need): boolean => n.flids.length === 0 && n.masters.length === 0 && n.days.length === 0;

/** A read of something not loaded: the planner's needs missed it (a bug, not data). */
export const notLoaded = (what: string): Error => new Error(`planner: ${what} not loaded (needs() missed it)`);

type Shared = Pick<FlightState, 'FLID' | 'STATE' | 'data'>;

/**
 * Flight states in layers, looked up in one place: a message's working states over the batch's
 * (messages applied so far) over what was loaded before the batch. `get` answers the state
 * (undefined: no such flight), `knows` whether it can; `sharedOf` / `knowsShared` the same for a
 * master's shared flights; `commit` moves a layer's states into the layer below.
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
    if (!this.loaded.knows(flid)) throw notLoaded(`flight ${flid}`);
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

  knowsShared(master: string): boolean {
    return this.loaded.sharedByMaster.has(master);
  }

  /** ACTIVE flights whose MAID is `master`, as this layer sees them, by FLID. */
  sharedOf(master: string): Shared[] {
    const persisted = this.loaded.sharedByMaster.get(master);
    if (!persisted) throw notLoaded(`shared flights of ${master}`);
    const out = new Map<string, Shared>();
    for (const r of persisted) if (!this.overlays(r.flid)) out.set(r.flid, { FLID: r.flid, STATE: 'ACTIVE', data: { MAID: r.maid, ...(r.flno ? { FLNO: r.flno } : {}) } });
    for (const f of this.candidatesOf(master)) {
      const s = this.get(f)!;
      if (s.STATE === 'ACTIVE' && String(s.data.MAID ?? '') === master) out.set(f, s);
    }
    return [...out.values()].sort((a, b) => compareFlid(a.FLID, b.FLID));
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
  private candidatesOf(master: string): Set<string> {
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

/** Operation days, looked up in one place: the batch's snapshots applied so far over what was loaded. */
export class Days {
  private readonly own = new Map<string, DayData>();
  private readonly loaded: Loaded;

  constructor(loaded: Loaded) {
    this.loaded = loaded;
  }

  knows(day: string): boolean {
    return this.own.has(day) || this.loaded.days.has(day);
  }

  get(day: string): DayData {
    const d = this.own.get(day) ?? this.loaded.days.get(day);
    if (!d) throw notLoaded(`operation day ${day}`);
    return d;
  }

  /** As persisted before the batch (undefined: not loaded). */
  persisted(day: string): DayData | undefined {
    return this.loaded.days.get(day);
  }

  set(day: string, d: DayData): void {
    this.own.set(day, d);
  }

  /** The days the batch changed, as it leaves them. */
  entries(): IterableIterator<[string, DayData]> {
    return this.own.entries();
  }
}
