// One message's flight changes (G-FLOP-SEMANTICS): states are loaded once, merged in memory by
// the pure functions of merge.ts, then master/shared consequences (cascade, MAFL) are derived and
// everything is persisted with its outbox rows in the caller's transaction. One STATE_VERSION
// step per changed flight per message, one msg event per changed flight.
import type { MergeContext, MergeResult } from './merge.ts';
import { applyMafl, deleteFlight, deriveMafl, touchesMaster } from './merge.ts';
import type { FlightState } from './state.ts';
import { loadVersionFloors } from '../lifecycle/floor.ts';
import { sql } from 'kysely';
import { loadSharedFlids, loadStatesWithShared, writeBatch, type Executor, type MsgEvent, type SharedFlid } from './store.ts';

export interface BatchMeta {
  type: string;
  styp: string;
}

export interface BatchResult {
  /** FLIDs whose state changed (new version, events written). */
  changed: string[];
  /** Every flight the message concerns: addressed, cascaded, masters and shared flights. */
  related: string[];
  /** Outbox rows written (msg + schd). */
  events: number;
}

export class FlightBatch {
  /** As persisted before this message (absent = unknown FLID). */
  private readonly loaded = new Map<string, FlightState>();
  /** Version floor of FLIDs purged before (lib/lifecycle/floor.ts): a reappearing FLID continues above it. */
  private readonly floors = new Map<string, number>();
  private readonly current = new Map<string, FlightState>();
  private readonly changedKeys = new Map<string, Set<string>>();
  /** Flights this message carries as live (snapshot/ADFT records, FLOP target). */
  private readonly carriedLive = new Set<string>();
  private readonly addressed = new Set<string>();
  /**
   * ACTIVE shared flights by master FLID, as persisted before this message, for every master
   * key the loader covered (each loaded flight's FLID and MAID): relatedFlids uses them instead
   * of a query when this message changed no flight's ACTIVE-ness or MAID.
   */
  private readonly sharedByMaster = new Map<string, SharedFlid[]>();
  private readonly tx: Executor;
  private readonly ctx: MergeContext;

  constructor(tx: Executor, ctx: MergeContext) {
    this.tx = tx;
    this.ctx = ctx;
  }

  /** Load (once) the persisted states of these FLIDs. */
  async load(flids: Iterable<string>): Promise<void> {
    const missing = [...new Set(flids)].filter((f) => !this.loaded.has(f) && !this.current.has(f));
    if (missing.length === 0) return;
    const { states, shared } = await loadStatesWithShared(this.tx, missing, this.ctx.timeZone);
    for (const [flid, v] of await loadVersionFloors(this.tx, missing.filter((f) => !states.has(f)))) this.floors.set(flid, v);
    for (const [flid, s] of states) {
      this.loaded.set(flid, s);
      this.current.set(flid, s);
      const list = shared.get(flid) ?? [];
      for (const m of [flid, ...(s.data.MAID !== undefined ? [String(s.data.MAID)] : [])]) this.sharedByMaster.set(m, list.filter((x) => x.maid === m));
    }
  }

  get(flid: string): FlightState | undefined {
    return this.current.get(flid);
  }

  /** Remember that the message addresses this flight (Redis scope), live or not. */
  address(flid: string, live: boolean): void {
    this.addressed.add(flid);
    if (live) this.carriedLive.add(flid);
  }

  /** Record a merge result; a second change of the same flight stays within one version step. */
  record(r: MergeResult): void {
    const flid = r.state.FLID;
    if (r.changed.length === 0) return;
    const keys = this.changedKeys.get(flid) ?? new Set<string>();
    for (const k of r.changed) keys.add(k);
    this.changedKeys.set(flid, keys);
    const orig = this.loaded.get(flid);
    this.current.set(flid, { ...r.state, STATE_VERSION: (orig?.STATE_VERSION ?? this.floors.get(flid) ?? 0) + 1 });
  }

  get changedCount(): number {
    return this.changedKeys.size;
  }

  /** Cascade, MAFL, persistence and outbox. */
  async finish(meta: BatchMeta): Promise<BatchResult> {
    await this.cascadeMasterDeletions();
    const masters = await this.rederiveMasters();
    const changed = [...this.changedKeys.keys()];
    // flights + outbox rows: one statement (store.ts writeBatch)
    const outbox = this.outboxRows(changed, meta);
    await writeBatch(this.tx, { flights: changed.map((f) => ({ prev: this.loaded.get(f), next: this.current.get(f)! })), ...outbox, now: this.ctx.now });
    const related = await this.relatedFlids(masters);
    return { changed, related, events: outbox.msg.length + outbox.schd.length };
  }

  /** Deleting a master deletes its ACTIVE shared flights, except those this message carries as live. */
  private async cascadeMasterDeletions(): Promise<void> {
    const deletedMasters = [...this.changedKeys.keys()].filter((f) => {
      const s = this.current.get(f)!;
      return s.STATE === 'DELETED' && s.data.MAID === undefined;
    });
    if (deletedMasters.length === 0) return;
    const kids = (await loadSharedFlids(this.tx, deletedMasters)).map((k) => k.flid).filter((f) => !this.carriedLive.has(f));
    await this.load(kids);
    for (const f of kids) {
      const s = this.current.get(f);
      if (s && s.STATE === 'ACTIVE' && s.data.MAID !== undefined && deletedMasters.includes(String(s.data.MAID))) this.record(deleteFlight(s, this.ctx));
    }
  }

  /** G-MAFL: re-derive every master touched by a change of a shared flight's existence, FLNO or MAID. */
  private async rederiveMasters(): Promise<string[]> {
    const candidates = new Set<string>();
    for (const [f, keys] of this.changedKeys) {
      const cur = this.current.get(f)!;
      const prev = this.loaded.get(f);
      const k = [...keys];
      if (touchesMaster(k)) {
        if (prev?.data.MAID !== undefined) candidates.add(String(prev.data.MAID));
        if (cur.data.MAID !== undefined) candidates.add(String(cur.data.MAID));
        candidates.add(f); // created / revived master, or a master that became shared
      }
    }
    if (candidates.size === 0) return [];
    const list = [...candidates];
    // Shared flights as persisted, overlaid with this message's working states.
    const rows = await sql<{ flid: string; flno: string | null; maid: string; state: FlightState['STATE'] }>`
      select flid, flno, maid, state from flight_schd where maid = any(${list}::text[])`.execute(this.tx);
    const view = new Map<string, Pick<FlightState, 'FLID' | 'STATE' | 'data'>>();
    for (const r of rows.rows) view.set(r.flid, { FLID: r.flid, STATE: r.state, data: { MAID: r.maid, ...(r.flno ? { FLNO: r.flno } : {}) } });
    for (const [f, s] of this.current) view.set(f, s);
    await this.load(list);
    // Index the shared flights by master once (a snapshot can make every flight a candidate).
    const byMaster = new Map<string, Pick<FlightState, 'FLID' | 'STATE' | 'data'>[]>();
    for (const f of view.values()) {
      if (f.data.MAID === undefined) continue;
      const k = String(f.data.MAID);
      byMaster.set(k, [...(byMaster.get(k) ?? []), f]);
    }
    for (const m of list) {
      const s = this.current.get(m);
      if (s) this.record(applyMafl(s, deriveMafl(m, byMaster.get(m) ?? []), this.ctx));
    }
    return list.filter((m) => this.current.has(m));
  }

  /** Outbox rows of the changed flights: one msg event each; schd upserts (live) or removals (deleted). */
  private outboxRows(changed: string[], meta: BatchMeta): { msg: MsgEvent[]; schd: { flid: string; stateVersion: number }[]; deleted: string[] } {
    const msg: MsgEvent[] = [];
    const upserts: { flid: string; stateVersion: number }[] = [];
    const deleted: string[] = [];
    for (const f of changed) {
      const s = this.current.get(f)!;
      if (s.STATE === 'DELETED') {
        deleted.push(f);
        msg.push({ flid: f, stateVersion: s.STATE_VERSION, payload: { FLID: f, DELETED: true, STATE_VERSION: s.STATE_VERSION, UPDATED_AT: s.UPDATED_AT, MSG_ID: this.ctx.msgId } });
      } else {
        upserts.push({ flid: f, stateVersion: s.STATE_VERSION });
        msg.push({
          flid: f,
          stateVersion: s.STATE_VERSION,
          payload: { FLID: f, STATE_VERSION: s.STATE_VERSION, UPDATED_AT: s.UPDATED_AT, OP: 'UPSERT', MSG_ID: this.ctx.msgId, TYPE: meta.type, STYP: meta.styp, CHANGED: [...this.changedKeys.get(f)!] },
        });
      }
    }
    return { msg, schd: upserts, deleted };
  }

  /** Addressed flights, flights changed as a consequence, their masters and their shared flights. */
  private async relatedFlids(masters: string[]): Promise<string[]> {
    const out = new Set<string>([...this.addressed, ...this.changedKeys.keys(), ...masters]);
    for (const f of [...out]) {
      const maid = this.current.get(f)?.data.MAID;
      if (maid !== undefined) out.add(String(maid));
    }
    for (const k of await this.sharedFlidsOf([...out])) out.add(k.flid);
    return [...out];
  }

  /**
   * ACTIVE shared flights of these masters after this message's writes: from the loader's
   * snapshot when every master was covered by it and no changed flight changed its ACTIVE-ness
   * or MAID (then the rows that query reads are as loaded — the pump is the only writer), else
   * one query.
   */
  private async sharedFlidsOf(masters: string[]): Promise<SharedFlid[]> {
    const unchanged = [...this.changedKeys.keys()].every((f) => {
      const prev = this.loaded.get(f);
      const cur = this.current.get(f)!;
      return prev !== undefined && (prev.STATE === 'ACTIVE') === (cur.STATE === 'ACTIVE') && String(prev.data.MAID ?? '') === String(cur.data.MAID ?? '');
    });
    if (!unchanged || !masters.every((m) => this.sharedByMaster.has(m))) return loadSharedFlids(this.tx, masters);
    const seen = new Set<string>();
    const out: SharedFlid[] = [];
    for (const m of masters) for (const x of this.sharedByMaster.get(m)!) if (!seen.has(x.flid)) (seen.add(x.flid), out.push(x));
    return out;
  }
}
