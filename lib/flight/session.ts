// The flight domain's batch inside the pump's business transaction (Postgres edge of plan.ts):
// loads what the batch addresses (states, shared flights, version floors, snapshot days) in a
// few statements; before each message, loads what the pure planner says it still needs
// (plan.needs, asked again after each load until nothing is missing), then lets the planner
// apply it; writes the net result in one statement (store.ts writePlan), plus the ledger for a
// snapshot. A snapshot record that says again what the flight's stored digest
// says (digest.ts) is neither loaded nor merged nor written; the digests of the records applied are
// stored with the versions they leave. A snapshot is first put to the requests domain's response guard
// (G-RESP-GUARD, through the ResponseGuard port), which decides whether it applies and to
// which operation day.
import type { Logger } from 'pino';
import type { AirportConfig } from '../core/config.ts';
import { DISPATCH_TASK } from '../core/tasks.ts';
import type { DomainBatch, DomainMessage, HandlerOutcome } from '../domain/handlers.ts';
import type { AfterCommitCounts } from '../runtime/labels.ts';
import * as Digest from '../sql/digest.ts';
import { digestsToStore, unchangedRecords, type StoredDigest } from './digest.ts';
import { loadVersionFloors } from './floor.ts';
import { loadDays, writeLedgers } from './ledger.ts';
import { unknownTagCounts } from './metrics.ts';
import { AtVersion, prepareMirrorValues } from './mirror.ts';
import { isEmpty, Loaded, need, type Need } from './overlay.ts';
import { FlightPlan, type FlightCommand, type FlightWrite, type PlanMessage, type SharedRow } from './plan.ts';
import type { FlightState } from './state.ts';
import type { Patch } from './decode.ts';
import { changedBy, loadSharedOf, loadStates, writePlan, type Executor } from './store.ts';
import { PUMP } from '../core/tuning.ts';

/** A snapshot record's patch decoded from its source (the flight domain's, with its rule override). */
export type RecordDecoder = (raw: string, type: string, styp: string) => Patch;

const noDecoder: RecordDecoder = () => {
  throw new Error('a snapshot record was left undecoded but the session has no record decoder');
};

/** What a batch that wrote outbox rows wakes. */
const DISPATCHERS = [DISPATCH_TASK.msg, DISPATCH_TASK.schd, DISPATCH_TASK.state];

const { maxLoadRounds: MAX_LOAD_ROUNDS, loadPerStatement: LOAD_PER_STATEMENT, cacheMax: CACHE_MAX } = PUMP;

/**
 * Committed flight states, and the shared-flight lists of masters, kept between batches of one
 * pump while it holds PIPELINE_LOCK without a break (the domain's reset clears it whenever the
 * lock is taken again, and after a failed business transaction). Only what this process
 * committed or read under the lock goes in; a master's list is dropped when a batch writes a
 * flight that was or becomes one of its shared flights (its MAID before or after).
 */
export class FlightStateCache {
  private readonly states = new Map<string, FlightState>();
  private readonly shared = new Map<string, SharedRow[]>();
  get(flid: string): FlightState | undefined {
    return this.states.get(flid);
  }
  sharedOf(master: string): SharedRow[] | undefined {
    return this.shared.get(master);
  }
  /** After a commit: the batch's states (null = no such flight: not kept, it is looked up again), the lists it read, the flights it wrote. */
  put(states: ReadonlyMap<string, FlightState | null>, shared: ReadonlyMap<string, SharedRow[]> = new Map(), written: readonly FlightWrite[] = []): void {
    if (this.states.size + states.size > CACHE_MAX) this.states.clear();
    if (this.shared.size + shared.size > CACHE_MAX) this.shared.clear();
    for (const [f, s] of states)
      if (s) this.states.set(f, s);
      else this.states.delete(f);
    for (const [m, rows] of shared) this.shared.set(m, rows);
    for (const w of written) for (const maid of [w.prev?.data.MAID, w.next.data.MAID]) if (maid !== undefined && maid !== null) this.shared.delete(String(maid));
  }
  clear(): void {
    this.states.clear();
    this.shared.clear();
  }
}

/**
 * The requests domain's decision on a snapshot (G-RESP-GUARD): apply it, to this operation day,
 * or skip it. The flight domain reaches request tracking only through this port
 * (lib/app/composition.ts wires lib/requests/schedule-guard.ts).
 */
export type ResponseGuard = (
  tx: Executor,
  a: { styp: 'DNLD' | 'RESP'; operationDay: string | null; msgId: number; now: Date },
) => Promise<{ apply: true; operationDay: string } | { apply: false; reason: string }>;

const noGuard: ResponseGuard = () => {
  throw new Error('a snapshot met the response guard but the flight domain was given none');
};

export interface FlightDomainOptions {
  /** G-RESP-GUARD (the requests domain's; without it a snapshot that needs it throws). */
  responseGuard?: ResponseGuard;
  /** Write the per-message change records (flight_change; default true). False only to measure their cost (bench:pump). */
  changeRecords?: boolean;
  /** Test only: flight rules changed at start (lib/flight/override.ts, msgx.test.rule-override). */
  ruleOverride?: string;
}

export class FlightSession implements DomainBatch<FlightCommand> {
  private readonly tx: Executor;
  private readonly now: Date;
  private readonly timeZone: string;
  private readonly log: Logger;
  private readonly loaded = new Loaded();
  private readonly plan: FlightPlan;
  private readonly cache: FlightStateCache;
  private events = 0;
  private ledgers = false;
  private final: Map<string, FlightState | null> | null = null;
  private written: readonly FlightWrite[] = [];
  /** Snapshots applied by the batch (not replays): their digests are stored at write. */
  private readonly snapshots: Extract<FlightCommand, { kind: 'snapshot' }>[] = [];
  /** Flights changed by the batch's messages committed earlier (preload's `recovered`). */
  private readonly changedByMsg = new Map<number, string[]>();

  private readonly changeRecords: boolean;
  /** A snapshot record's patch from its source (handlers.ts: as the domain's decode makes it). */
  private readonly decodeRecord: RecordDecoder;
  private readonly responseGuard: ResponseGuard;

  constructor(ctx: { tx: Executor; now: Date; airport: AirportConfig; log: Logger }, cache = new FlightStateCache(), opts: FlightDomainOptions = {}, decodeRecord: RecordDecoder = noDecoder) {
    this.cache = cache;
    this.decodeRecord = decodeRecord;
    this.responseGuard = opts.responseGuard ?? noGuard;
    this.changeRecords = opts.changeRecords ?? true;
    this.tx = ctx.tx;
    this.now = ctx.now;
    this.log = ctx.log;
    this.timeZone = ctx.airport.timezone;
    this.plan = new FlightPlan(this.loaded, { timeZone: this.timeZone, cutover: ctx.airport.dayCutover });
  }

  async preload(cmds: readonly FlightCommand[], recovered: readonly number[] = []): Promise<void> {
    // messages committed before (crash recovery): the flights they changed, in one query
    if (recovered.length) for (const [id, flids] of await changedBy(this.tx, recovered)) this.changedByMsg.set(id, flids);
    const flids = [...cmds.flatMap((c) => (c.kind === 'flop' ? [c.flid] : c.records.map((r) => r.flid))), ...[...this.changedByMsg.values()].flat()];
    const days = cmds.flatMap((c) => (c.kind === 'snapshot' && c.day !== null ? [c.day] : []));
    await this.load(need({ days }));
    await this.findUnchanged(cmds);
    this.decodeTheRest(cmds);
    const skip = this.loaded.unchanged;
    // a snapshot's old roster is addressed too (INV-7 deletions)
    const roster = days.flatMap((d) => this.loaded.days.get(d)!.roster);
    await this.load(need({ flids: [...flids, ...roster].filter((f) => !skip.has(f)) }));
    // the unchanged flights' shared flights and masters: the mirror scope (step.ts scope)
    if (skip.size) await this.load(need({ masters: [...skip].flatMap(([f, u]) => (u.maid === undefined ? [f] : [f, u.maid])) }));
  }

  /** Snapshot records that would change nothing (digest.ts): one lookup of their stored digests. */
  private async findUnchanged(cmds: readonly FlightCommand[]): Promise<void> {
    const snaps = cmds.flatMap((c) => (c.kind === 'snapshot' && c.day !== null ? [{ day: c.day, records: c.records }] : []));
    const flids = snaps.flatMap((c) => c.records.flatMap((r) => (r.digest !== undefined ? [r.flid] : [])));
    if (flids.length === 0) return;
    const stored = new Map<string, StoredDigest>();
    for (let i = 0; i < flids.length; i += LOAD_PER_STATEMENT)
      for (const r of await Digest.loadDigests(this.tx, flids.slice(i, i + LOAD_PER_STATEMENT)))
        stored.set(r.flid, { digest: r.digest, digestVersion: Number(r.digest_version), stateVersion: Number(r.state_version), state: r.state, operationDay: r.operation_day, maid: r.maid });
    for (const c of snaps) for (const [f, u] of unchangedRecords(c.records, c.day, stored)) this.loaded.unchanged.set(f, u);
  }

  /**
   * Every snapshot record left undecoded (digest.ts) that the planner may apply after all: not
   * found unchanged, or its flight carried by another command of the batch. Decoded in place.
   */
  private decodeTheRest(cmds: readonly FlightCommand[]): void {
    const carried = new Map<string, number>();
    for (const c of cmds) for (const f of c.kind === 'flop' ? [c.flid] : c.records.map((r) => r.flid)) carried.set(f, (carried.get(f) ?? 0) + 1);
    for (const c of cmds) {
      if (c.kind !== 'snapshot') continue;
      for (const r of c.records) {
        if (r.patch || r.raw === undefined) continue;
        const u = this.loaded.unchanged.get(r.flid);
        if (u && u.day === c.day && carried.get(r.flid) === 1) continue;
        this.loaded.unchanged.delete(r.flid);
        r.patch = this.decodeRecord(r.raw, 'SCHD', c.styp);
      }
    }
  }

  /** Load what the planner asked for: states (+ floors of the absent), shared flights of each FLID and its master, days. */
  private async load(need: Need): Promise<void> {
    const L = this.loaded;
    if (need.days.length)
      for (const [d, data] of await loadDays(
        this.tx,
        need.days.filter((d) => !L.days.has(d)),
      ))
        L.days.set(d, data);
    const flids = [...new Set(need.flids)].filter((f) => !L.knows(f));
    // committed by this pump in an earlier batch of this PIPELINE_LOCK hold: current
    const toRead: string[] = [];
    for (const f of flids) {
      const c = this.cache.get(f);
      if (c) L.states.set(f, c);
      else toRead.push(f);
    }
    if (toRead.length) {
      // in slices: a snapshot's 9,999 stored states are never all in transit as driver rows at once
      const states = new Map<string, FlightState>();
      for (let i = 0; i < toRead.length; i += LOAD_PER_STATEMENT) for (const [f, s] of await loadStates(this.tx, toRead.slice(i, i + LOAD_PER_STATEMENT), this.timeZone)) states.set(f, s);
      const absent = toRead.filter((f) => !states.has(f));
      for (const [f, s] of states) L.states.set(f, s);
      for (const f of absent) L.absent.add(f);
      for (const [f, v] of await loadVersionFloors(this.tx, absent)) L.floors.set(f, v);
    }
    // shared flights of every FLID loaded and of its master: the planner's usual next question
    const masters = new Set(need.masters);
    for (const f of flids) {
      masters.add(f);
      const maid = L.states.get(f)?.data.MAID;
      if (maid !== undefined) masters.add(String(maid));
    }
    const wanted: string[] = [];
    for (const m of masters) {
      if (L.sharedByMaster.has(m)) continue;
      const c = this.cache.sharedOf(m);
      if (c) L.sharedByMaster.set(m, c);
      else wanted.push(m);
    }
    if (wanted.length) {
      for (const m of wanted) L.sharedByMaster.set(m, []);
      for (const r of await loadSharedOf(this.tx, wanted)) L.sharedByMaster.get(r.maid)!.push(r.flno ? { flid: r.flid, flno: r.flno, maid: r.maid } : { flid: r.flid, maid: r.maid });
    }
  }

  /** Load what the planner says a message needs, and ask again, until it needs nothing. */
  private async loadNeeds(needs: () => Need): Promise<void> {
    for (let round = 0; ; round++) {
      const n = needs();
      if (isEmpty(n)) return;
      if (round >= MAX_LOAD_ROUNDS) throw new Error(`flight planner still needs data after ${MAX_LOAD_ROUNDS} loads: ${JSON.stringify(n).slice(0, 500)}`);
      await this.load(n);
    }
  }

  async apply(m: DomainMessage<FlightCommand>): Promise<HandlerOutcome> {
    let cmd = m.cmd;
    const kind = `${m.env.type}/${m.env.styp}`;
    if (cmd.kind === 'snapshot') {
      // G-RESP-GUARD, unless M is already the latest snapshot of D (a replay converges)
      const day = cmd.day;
      if (day !== null && !this.loaded.days.has(day)) await this.load(need({ days: [day] }));
      const latest = day !== null && this.loaded.days.get(day)!.ledger?.lastMessageId === m.msgId;
      if (!latest) {
        const guard = await this.responseGuard(this.tx, { styp: cmd.styp, operationDay: day, msgId: m.msgId, now: this.now });
        if (!guard.apply) return { outcome: 'skipped', reason: guard.reason };
        cmd = { ...cmd, day: guard.operationDay };
        if (!this.loaded.days.has(guard.operationDay)) await this.preload([cmd]);
        else this.decodeTheRest([cmd]);
      }
    }
    const c = cmd;
    const pm: PlanMessage = { msgId: m.msgId, kind, type: m.env.type, styp: m.env.styp, now: this.now, cmd: c };
    await this.loadNeeds(() => this.plan.needs(pm));
    const p = this.plan.apply(pm);
    this.events += p.events;
    if (p.snapshot) {
      this.ledgers = true;
      if (!p.snapshot.replay && c.kind === 'snapshot') this.snapshots.push(c);
      m.log.info({ operationDay: p.snapshot.day, replay: p.snapshot.replay, version: p.snapshot.version, changed: p.changed.length, deleted: p.snapshot.deleted }, 'snapshot applied');
    }
    if (p.outcome.state === 'SKIPPED') return { outcome: 'skipped', reason: p.outcome.reason, mirror: p.mirror };
    // counted by the pump once the business transaction committed (countAfterCommit)
    const counts: AfterCommitCounts = {};
    const unknownTags = c.notes ? unknownTagCounts(m.env.type, m.env.styp, c.notes) : [];
    if (unknownTags.length) counts.unknownTags = unknownTags;
    if (c.notes?.droppedRoutePoints) counts.routePointsDropped = c.notes.droppedRoutePoints;
    // the dispatchers are woken with the outcomes (the pump records them before the write)
    return { outcome: 'applied', mirror: p.mirror, ...(p.events > 0 ? { wake: DISPATCHERS } : {}), ...(counts.unknownTags || counts.routePointsDropped ? { counts } : {}) };
  }

  async addressed(m: { msgId: number; cmd: FlightCommand }): Promise<string[]> {
    let changed = this.changedByMsg.get(m.msgId);
    if (!changed) this.changedByMsg.set(m.msgId, (changed = (await changedBy(this.tx, [m.msgId])).get(m.msgId)!)); // not announced to preload
    await this.loadNeeds(() => this.plan.addressedNeeds(m.cmd, changed));
    return this.plan.addressed(m.cmd, changed);
  }

  async write(): Promise<{ wake: string[]; states: ReadonlyMap<string, unknown> }> {
    const r = this.plan.result();
    this.written = r.flights;
    // the mirror step's Redis values of the flights written, serialized while Postgres runs the write
    const next = r.flights.map((w) => w.next);
    const meanwhile = (slice: number, of: number) => prepareMirrorValues(next.slice(Math.floor((slice * next.length) / of), Math.floor(((slice + 1) * next.length) / of)));
    await writePlan(this.tx, this.changeRecords ? r : { ...r, changes: [] }, this.now, meanwhile);
    if (this.ledgers) await writeLedgers(this.tx, r.ledgers, r.snapLog);
    this.log.debug({ flights: r.flights.length, events: r.events.length }, 'flight batch written');
    this.final = this.plan.states();
    const final = this.final;
    const digests = this.snapshots.flatMap((c) => digestsToStore(c.records, c.day!, final, this.loaded.unchanged));
    if (digests.length)
      await Digest.storeDigests(
        this.tx,
        digests.map((d) => d.flid),
        digests.map((d) => d.digest),
        digests.map((d) => d.version),
      );
    // the unchanged flights, by version (the mirror asks Redis before it reads or writes them)
    const states = new Map<string, FlightState | AtVersion | null>(final);
    for (const [f, u] of this.loaded.unchanged) if (!states.has(f)) states.set(f, new AtVersion(u.version));
    return { wake: this.events > 0 ? DISPATCHERS : [], states };
  }

  committed(): void {
    if (this.final) this.cache.put(this.final, this.loaded.sharedByMaster, this.written);
  }
}
