// The reads of the state diff (docs/operations.md "Trying a rule change"): checks that two
// databases are two msgexchange installations of one schema version, waits for them to reach the
// same inbox position, and reads each side (lib/shadow/diff.ts compares). Read-only: nothing is
// written to either database. Every read has a deadline (msgx.io.timeout per statement batch).
import { systemClock, type Clock } from '../core/clock.ts';
import { withTimeout } from '../core/timeout.ts';
import type { Db } from '../db/postgres.ts';
import { type FlightPage, listFlights } from '../flight/read.ts';
import { toJson } from '../flight/state.ts';
import * as Shadow from '../sql/shadow.ts';
import { type ChangeRef, diff, type DiffReport, type HistoryStart, type Json, type Outcome, type RefRecord, type SideData } from './diff.ts';
import { SHADOW } from '../core/tuning.ts';

/** Why two databases cannot be compared (the CLIs exit 2 with it). */
export class CannotCompare extends Error {}

/** Tables a msgexchange schema has (of this release: SHADOW_INTAKE included). */
const REQUIRED = ['pgmigrations', 'proc_state', 'intake_cursor', 'flight_schd', 'flight_change', 'ref_master', 'shadow_intake'];

export interface Side {
  name: string;
  db: Db;
}

export interface CompareOptions {
  timeZone: string;
  /** Per read (a whole side's flights may take a few seconds for 10,000 flights: 6 × this). */
  timeoutMs: number;
  /** How long to wait for both to reach the same position (0: compare at once at the lower one). */
  waitMs: number;
  /** Overrides the start (dry-run: the scratch database's own). */
  startedAfter?: number;
  sleep?: (ms: number) => Promise<void>;
  /** What the wait for the same position is measured on (default: the system clock). */
  clock?: Clock;
}

/** Same database? msgexchange schema? same schema version? Throws CannotCompare naming the problem. */
export async function checkComparable(a: Side, b: Side, timeoutMs: number): Promise<void> {
  const [ia] = await withTimeout(timeoutMs, `${a.name}: identity`, Shadow.readIdentity(a.db));
  const [ib] = await withTimeout(timeoutMs, `${b.name}: identity`, Shadow.readIdentity(b.db));
  if (ia.server === ib.server && ia.db === ib.db) throw new CannotCompare(`${a.name} and ${b.name} are the same database: give the other installation's DATABASE_URL`);
  const versions: string[][] = [];
  for (const s of [a, b]) {
    const tables = new Set((await withTimeout(timeoutMs, `${s.name}: schema`, Shadow.listSchemaTables(s.db))).map((r) => r.t));
    const missing = REQUIRED.filter((t) => !tables.has(t));
    if (missing.includes('pgmigrations') || missing.includes('proc_state') || missing.includes('flight_schd'))
      throw new CannotCompare(`${s.name} is not a msgexchange database (no ${missing.join(', ')}): run npm run migrate there, or check the URL`);
    versions.push((await withTimeout(timeoutMs, `${s.name}: migrations`, Shadow.listMigrations(s.db))).map((r) => r.name));
    if (missing.length) throw new CannotCompare(`${s.name} has an older msgexchange schema (no ${missing.join(', ')}; last migration ${versions.at(-1)?.at(-1) ?? 'none'})`);
  }
  const [va, vb] = versions;
  if (va.join('\n') !== vb.join('\n')) {
    throw new CannotCompare(`schema versions differ: ${a.name} at ${va.at(-1) ?? 'none'} (${va.length} migrations), ${b.name} at ${vb.at(-1) ?? 'none'} (${vb.length} migrations)`);
  }
}

/** An installation's position: the highest message with nothing open at or below it (0: none). */
export async function positionOf(db: Db, timeoutMs: number): Promise<{ position: number; highest: number; open: number | null }> {
  const [r] = await withTimeout(timeoutMs, 'position', Shadow.readPosition(db));
  const hi = r?.hi === null || r?.hi === undefined ? 0 : Number(r.hi);
  const open = r?.open === null || r?.open === undefined ? null : Number(r.open);
  return { position: open === null ? hi : open - 1, highest: hi, open };
}

/** Waits (up to waitMs) for both to be at the same position; returns both positions. */
export async function awaitSamePosition(a: Side, b: Side, o: CompareOptions): Promise<{ here: number; other: number }> {
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const now = () => (o.clock ?? systemClock).now().getTime();
  const until = now() + o.waitMs;
  for (;;) {
    const pa = (await positionOf(a.db, o.timeoutMs)).position;
    const pb = (await positionOf(b.db, o.timeoutMs)).position;
    if (pa === pb || now() >= until) return { here: pa, other: pb };
    await sleep(Math.min(500, Math.max(0, until - now())));
  }
}

const PAGE = SHADOW.page;

async function readSide(s: Side, position: number, o: CompareOptions): Promise<SideData> {
  const t = o.timeoutMs;
  const shadowRow = await withTimeout(t, `${s.name}: shadow`, Shadow.readShadowIntake(s.db));
  const flights = new Map<string, Json>();
  for (let cursor: string | null = null; ; ) {
    const page: FlightPage = await withTimeout(t, `${s.name}: flights`, listFlights(s.db, { limit: PAGE, includeDeleted: true, ...(cursor ? { cursor } : {}) }, o.timeZone));
    for (const f of page.flights) flights.set(f.FLID, toJson(f));
    cursor = page.nextCursor;
    if (!cursor) break;
  }
  const history = new Map<string, HistoryStart>();
  for (const r of await withTimeout(t, `${s.name}: change records`, Shadow.readHistoryStarts(s.db))) history.set(r.flid, { firstMsg: Number(r.first_msg), firstVersion: Number(r.first_version) });
  const startedAfter = o.startedAfter ?? Number(shadowRow?.started_after ?? 0);
  const outcomes = new Map<number, Outcome>();
  for (const r of await withTimeout(t, `${s.name}: outcomes`, Shadow.readOutcomes(s.db, 0, position))) outcomes.set(Number(r.msg_id), { state: r.state, reason: r.reason, kind: r.kind });
  const reference = new Map<string, RefRecord>();
  for (const r of await withTimeout(t, `${s.name}: reference data`, Shadow.readReferenceRows(s.db))) reference.set(`${r.tbl}/${r.k}`, { value: r.v, lastMsgId: Number(r.last_msg_id) });
  return { name: s.name, startedAfter, position: 0, lost: (shadowRow?.lost ?? []).map((g) => ({ lo: Number(g.lo), hi: Number(g.hi) })), flights, history, outcomes, reference };
}

async function changesOf(s: Side, flids: string[], position: number, timeoutMs: number): Promise<Map<string, ChangeRef[]>> {
  const out = new Map<string, ChangeRef[]>();
  if (flids.length === 0) return out;
  for (const r of await withTimeout(timeoutMs, `${s.name}: change records`, Shadow.readChangesOf(s.db, flids, position))) {
    const list = out.get(r.flid) ?? [];
    list.push({ stateVersion: Number(r.state_version), msgId: Number(r.msg_id), kind: r.kind, keys: r.keys });
    out.set(r.flid, list);
  }
  return out;
}

/**
 * Checks, waits for the same position (or takes the lower one), reads both sides and diffs them.
 * `here.startedAfter` may be overridden (dry-run).
 */
export async function compareInstallations(here: Side, other: Side, o: CompareOptions): Promise<DiffReport> {
  await checkComparable(here, other, o.timeoutMs);
  const pos = await awaitSamePosition(here, other, o);
  const position = Math.min(pos.here, pos.other);
  const [a, b] = await Promise.all([readSide(here, position, o), readSide(other, position, { ...o, startedAfter: undefined })]);
  a.position = pos.here;
  b.position = pos.other;
  // the flights that differ, then their change records (who set each side's value)
  const first = diff(a, b, { here: new Map(), other: new Map() });
  const flids = first.flightDiffs.map((f) => f.flid);
  const [ca, cb] = await Promise.all([changesOf(here, flids, position, o.timeoutMs), changesOf(other, flids, position, o.timeoutMs)]);
  return diff(a, b, { here: ca, other: cb });
}
