// Persistence of complete flight states, driven by rules.ts: bulk load by FLID set (one
// statement whatever the count), the batch's net write in one set-based statement (a snapshot's in slices; unnest
// arrays; only the collections that changed are deleted-then-inserted), outbox rows. Only loads
// and stores. The SQL is in lib/sql/flight.ts; its loader/writer text is built once, at module
// load, from the column spec below (derived from rules.ts).
import { type Executor, pgArray, type PgArray } from '../db/statement.ts';
import * as Flight from '../sql/flight.ts';
import * as OutboxEvents from '../sql/outbox/events.ts';
import * as OutboxRounds from '../sql/outbox/rounds.ts';
import { COLLECTIONS, columnOf, DETAIL_TABLES, SCALAR_KEYS, STATUS_KEYS, type CollectionSpec, type ValueKind } from './rules.ts';
import { emptyData, isoLocal, sameValue, type FlightData, type FlightState, type MaflEntry, type Row, type Value } from './state.ts';
import type { FlightChange, FlightWrite, PlannedEvent, PlanResult } from './plan.ts';
import { PUMP } from '../core/tuning.ts';

/**
 * The db type the flight store's importers (lib/api, lib/dispatch, lib/flight) give their
 * executors: a Kysely on the pool, a session or a transaction. The store's own functions take
 * anything that runs a statement (lib/db/statement.ts `Executor`).
 */
export type { Db as Executor } from '../db/postgres.ts';

const pgType = (k: ValueKind): Flight.SqlType => (({ text: 'text', int: 'integer', time: 'timestamptz', hhmm: 'text', flid: 'text', bool: 'boolean' }) as const)[k];

// ---------------------------------------------------------------------------------------------
// load

function fromDb(kind: ValueKind, v: unknown, tz: string): string | number | null {
  if (v === null || v === undefined) return null;
  if (kind === 'time') return isoLocal(v as Date, tz);
  if (kind === 'int') return Number(v);
  return String(v);
}

function toDb(v: Value | undefined): string | number | boolean | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'object') return JSON.stringify(v);
  return v;
}

function mainRowToState(r: Flight.FlightStateRow, tz: string): FlightState {
  const data: FlightData = emptyData();
  for (const k of STATUS_KEYS) data[k] = r[k.toLowerCase()] === true;
  for (const s of SCALAR_KEYS) {
    const v = fromDb(s.kind, r[s.column], tz);
    if (v !== null) data[s.key] = v;
  }
  return {
    FLID: String(r.flid),
    STATE: r.state as FlightState['STATE'],
    STATE_VERSION: Number(r.state_version),
    OPERATION_DAY: r.operation_day ?? null,
    UPDATED_AT: isoLocal(r.updated_at, tz),
    LAST_MSG_ID: r.last_msg_id === null ? null : Number(r.last_msg_id),
    data,
    MAFL: (r.mafl as MaflEntry[]) ?? [],
  };
}

/** Per detail table: its collection specs and the positional element the one-trip loader builds. */
interface DetailLoad {
  table: string;
  specs: CollectionSpec[];
  /** Discriminator column (routes, raw fragments): element[0] is its value. */
  disc?: string;
  /** Columns after the discriminator: source_seq, then the fields (or xml); kind per column. */
  columns: { column: string; kind: ValueKind | 'seq' | 'raw' }[];
  /** The aggregated column in the main select. */
  alias: string;
}

const DETAIL_LOADS: readonly DetailLoad[] = DETAIL_TABLES.map((table, i) => {
  const specs = COLLECTIONS.filter((c) => c.table === table);
  const first = specs[0];
  return {
    table,
    specs,
    ...(first.discriminator ? { disc: first.discriminator.column } : {}),
    columns: [{ column: 'source_seq', kind: 'seq' as const }, ...(first.raw ? [{ column: 'xml', kind: 'raw' as const }] : first.fields.map((f) => ({ column: columnOf(f), kind: f.kind })))],
    alias: `d${i}`,
  };
});

function detailElementToValue(spec: CollectionSpec, l: DetailLoad, el: unknown[], tz: string): Row | string {
  const off = l.disc ? 1 : 0;
  if (spec.raw) return String(el[off + 1]);
  const row: Row = {};
  const seq = el[off];
  if (spec.keyAttr && seq !== null) row[spec.keyAttr] = Number(seq);
  spec.fields.forEach((f, i) => {
    const v = el[off + 1 + i];
    if (v === null || v === undefined) return;
    row[f.name] = f.kind === 'time' ? isoLocal(new Date(v as number), tz) : f.kind === 'int' ? Number(v) : String(v);
  });
  return row;
}

/**
 * Complete states of these FLIDs (absent FLIDs are simply missing from the map).
 * ONE statement whatever the number of FLIDs or collections: the main rows with every detail
 * table aggregated per flight (driven by rules.ts). One statement = one consistent snapshot, so
 * a caller outside a transaction still gets a coherent state.
 */
export async function loadStates(db: Executor, flids: readonly string[], tz: string): Promise<Map<string, FlightState>> {
  if (flids.length === 0) return new Map();
  return rowsToStates(await FLIGHT.loadStates(db, [...new Set(flids)]), tz);
}

/**
 * A page of complete states in FLID (text) order after `after` (null: from the start), at most
 * `limit`, of operation day `day` when given; ACTIVE only unless `includeDeleted`. ONE statement
 * (the page's FLIDs and their states: one snapshot), in FLID order.
 */
export async function loadPage(db: Executor, q: { day: string | null; includeDeleted: boolean; after: string | null; limit: number }, tz: string): Promise<FlightState[]> {
  const rows = q.day ? await FLIGHT.pageStatesOfDay(db, q.day, q.includeDeleted, q.after, q.limit) : await FLIGHT.pageStates(db, q.includeDeleted, q.after, q.limit);
  return [...rowsToStates(rows, tz).values()];
}

/** The flights each of these messages changed (their change records, written with their business commit): one query. */
export async function changedBy(db: Executor, msgIds: readonly number[]): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>(msgIds.map((id) => [id, []]));
  if (msgIds.length === 0) return out;
  for (const x of await Flight.listChangedBy(db, [...msgIds])) out.get(Number(x.msg_id))?.push(x.flid);
  return out;
}

/** ACTIVE flights whose MAID is one of these masters: {flid, flno, maid}, ordered by FLID. */
export async function loadSharedOf(db: Executor, masters: readonly string[]): Promise<{ flid: string; flno: string | null; maid: string }[]> {
  if (masters.length === 0) return [];
  return Flight.readSharedOf(db, [...new Set(masters)]);
}

function rowsToStates(rows: Flight.FlightStateRow[], tz: string): Map<string, FlightState> {
  const out = new Map<string, FlightState>();
  for (const r of rows) {
    const st = mainRowToState(r, tz);
    for (const l of DETAIL_LOADS) {
      const els = r[l.alias] as unknown[][];
      if (els.length === 0) continue;
      for (const el of els) {
        const spec = l.disc ? l.specs.find((s) => s.discriminator!.value === el[0])! : l.specs[0];
        const list = (st.data[spec.tag] ??= []) as (Row | string)[];
        list.push(detailElementToValue(spec, l, el, tz));
      }
    }
    out.set(st.FLID, st);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// write

const MAIN_WRITE: { name: string; type: Flight.SqlType; get: (s: FlightState) => string | number | boolean | null }[] = [
  { name: 'flid', type: 'text', get: (s) => s.FLID },
  { name: 'state', type: 'text', get: (s) => s.STATE },
  { name: 'state_version', type: 'integer', get: (s) => s.STATE_VERSION },
  { name: 'operation_day', type: 'date', get: (s) => s.OPERATION_DAY },
  { name: 'last_msg_id', type: 'bigint', get: (s) => s.LAST_MSG_ID },
  { name: 'created_at', type: 'timestamptz', get: (s) => s.UPDATED_AT },
  { name: 'updated_at', type: 'timestamptz', get: (s) => s.UPDATED_AT },
  { name: 'deleted_at', type: 'timestamptz', get: (s) => (s.STATE === 'DELETED' ? s.UPDATED_AT : null) },
  { name: 'mafl', type: 'jsonb', get: (s) => JSON.stringify(s.MAFL) },
  ...STATUS_KEYS.map((k) => ({ name: k.toLowerCase(), type: 'boolean' as const, get: (s: FlightState) => s.data[k] === true })),
  ...SCALAR_KEYS.map((c) => ({ name: c.column, type: pgType(c.kind), get: (s: FlightState) => toDb(s.data[c.key]) })),
];

/** Inserted columns of a collection: flid, [discriminator], ordinal, source_seq, the fields (or xml). */
const collectionColumns = (spec: CollectionSpec): Flight.WriteColumn[] => [
  { name: 'flid', type: 'text' },
  ...(spec.discriminator ? [{ name: spec.discriminator.column, type: 'text' as const }] : []),
  { name: 'ordinal', type: 'smallint' },
  { name: 'source_seq', type: 'integer' },
  ...(spec.raw ? [{ name: 'xml', type: 'text' as const }] : spec.fields.map((f) => ({ name: columnOf(f), type: pgType(f.kind) }))),
];

/** The loader and the batch write, their text built once from rules.ts (lib/sql/flight.ts). */
const FLIGHT = Flight.flightOperations({
  mainRead: [...STATUS_KEYS.map((k) => k.toLowerCase()), ...SCALAR_KEYS.map((s) => s.column)],
  mainWrite: MAIN_WRITE.map(({ name, type }) => ({ name, type })),
  details: DETAIL_LOADS.map((l) => ({ table: l.table, ...(l.disc ? { disc: l.disc } : {}), columns: l.columns.map((c) => ({ column: c.column, time: c.kind === 'time' })) })),
  collections: COLLECTIONS.map((spec) => ({ table: spec.table, ...(spec.discriminator ? { discriminator: spec.discriminator } : {}), columns: collectionColumns(spec) })),
});

type Cell = string | number | boolean | null;

/** A table's rows of a write: one array literal per column (pgArray; values as text, cast in SQL). */
export interface TableRows {
  table: string;
  columns: readonly Flight.WriteColumn[];
  arrays: PgArray<Cell>[];
  rows: number;
  /** A collection: the FLIDs whose rows it replaces (deleted first), and its discriminator. */
  replaced?: PgArray<string>;
  discriminator?: { column: string; value: string };
}

/**
 * The flight rows of a batch write per table: flight_schd's (upserted), then every collection's
 * (its rows of the flights it changed deleted, the new ones inserted). The batch write sends
 * them as one statement's parameters; the benches' batched write limit writes the same rows
 * table by table (scripts/bench/write-limit.ts). Each column's literal is built straight from
 * the states, without a row-major copy.
 */
export function flightTableRows(writes: readonly FlightWrite[]): TableRows[] {
  const main: TableRows = { table: 'flight_schd', columns: MAIN_WRITE, arrays: MAIN_WRITE.map((c) => pgArray(writes.map((w) => c.get(w.next)))), rows: writes.length };
  return [
    main,
    ...COLLECTIONS.map((spec): TableRows => {
      const changed = writes.filter((w) => !sameValue(w.prev?.data[spec.tag], w.next.data[spec.tag]));
      const disc = spec.discriminator;
      const rows: Cell[][] = [];
      for (const w of changed) {
        const list = (w.next.data[spec.tag] ?? []) as (Row | string)[];
        list.forEach((el, i) => {
          const head: Cell[] = [w.next.FLID, ...(disc ? [disc.value] : []), i + 1];
          if (typeof el === 'string') rows.push([...head, null, el]);
          else rows.push([...head, spec.keyAttr ? (el[spec.keyAttr] ?? null) : null, ...spec.fields.map((f) => el[f.name] ?? null)]);
        });
      }
      const columns = collectionColumns(spec);
      return {
        table: spec.table,
        columns,
        arrays: columns.map((_, i) => pgArray(rows.map((r) => r[i]))),
        rows: rows.length,
        replaced: pgArray(changed.filter((w) => w.prev !== undefined).map((w) => w.next.FLID)),
        ...(disc ? { discriminator: disc } : {}),
      };
    }),
  ];
}

/** The flight columns of the batch write: main rows upserted, changed collections deleted-then-inserted. */
function flightParams(writes: readonly FlightWrite[]): PgArray<Cell>[] {
  const [main, ...collections] = flightTableRows(writes);
  return [...main.arrays, ...collections.flatMap((c) => [c.replaced ?? pgArray([]), ...c.arrays])];
}

export const WRITE_FLIGHTS_PER_STATEMENT = PUMP.writeFlightsPerStatement;
export const WRITE_ROWS_PER_STATEMENT = PUMP.writeRowsPerStatement;

type WritePart = Pick<PlanResult, 'flights' | 'events' | 'schdRemovals' | 'changes'>;

/** An outbox row of the batch write: the planner's events, plus the state rows derived from them. */
export type OutboxRow = PlannedEvent | { target: 'state'; flid: string; stateVersion: number };

/**
 * The planner's events with one state-topic row (lib/dispatch/state.ts) per flight the batch
 * writes, at its new version, placed right after the flight's last msg event — where processing
 * the messages one at a time would have taken its last state row's EVENT_ID (every change of a
 * flight has a msg event, deletions included), so K = 1 and K = 500 take the same EVENT_IDs.
 */
export function withStateRows(events: readonly PlannedEvent[], flights: readonly FlightWrite[]): OutboxRow[] {
  const version = new Map(flights.map((w) => [w.next.FLID, w.next.STATE_VERSION]));
  const last = new Map<string, number>();
  events.forEach((e, i) => e.target === 'msg' && last.set(e.flid, i));
  const out: OutboxRow[] = [];
  events.forEach((e, i) => {
    out.push(e);
    if (e.target === 'msg' && last.get(e.flid) === i && version.has(e.flid)) out.push({ target: 'state', flid: e.flid, stateVersion: version.get(e.flid)! });
  });
  for (const [flid, v] of version) if (!last.has(flid)) out.push({ target: 'state', flid, stateVersion: v }); // none today: every change has a msg event
  return out;
}

/**
 * A batch's whole flight write (flight.write_batch, lib/sql/flight.ts): the flights it changed
 * (net), its outbox rows in EVENT_ID order — with the state-topic row of every flight it changed
 * (withStateRows: one per FLID at its new version, deleted flights included) —, the pending schd
 * rows of flights it left DELETED, and the change records (flight_change). An ordinary batch is ONE statement. A larger one (a
 * snapshot: up to 9,999 flights) is cut into slices written one after another in the same
 * transaction — the flights, then the outbox rows in their order, then the schd removals with
 * the change records — the order the pieces of the one statement follow, so EVENT_IDs and end
 * state are the same; the statement parameters are built for one slice at a time, the next
 * slice's while Postgres runs the one before (runSlices), instead of for the whole snapshot at once
 * (docs/decisions.md, "Snapshots in bounded memory"). Nothing to write: no statement.
 */
export async function writePlan(tx: Executor, plan: WritePart, now: Date, meanwhile?: Meanwhile): Promise<void> {
  const p: WriteRows = { ...plan, events: withStateRows(plan.events, plan.flights) };
  if (p.flights.length + p.events.length + p.schdRemovals.length + p.changes.length === 0) return;
  if (p.flights.length <= WRITE_FLIGHTS_PER_STATEMENT && p.events.length <= WRITE_ROWS_PER_STATEMENT && p.changes.length <= WRITE_ROWS_PER_STATEMENT)
    return runSlices(tx, [() => writeParams(p, now)], meanwhile);
  const none: WriteRows = { flights: [], events: [], schdRemovals: [], changes: [] };
  const slices: (() => Flight.FlightWriteParams)[] = [];
  for (let i = 0; i < p.flights.length; i += WRITE_FLIGHTS_PER_STATEMENT) slices.push(() => writeParams({ ...none, flights: p.flights.slice(i, i + WRITE_FLIGHTS_PER_STATEMENT) }, now));
  for (let i = 0; i < p.events.length; i += WRITE_ROWS_PER_STATEMENT) slices.push(() => writeParams({ ...none, events: p.events.slice(i, i + WRITE_ROWS_PER_STATEMENT) }, now));
  for (let i = 0; i === 0 || i < p.changes.length; i += WRITE_ROWS_PER_STATEMENT) {
    const part = { ...none, schdRemovals: i === 0 ? p.schdRemovals : [], changes: p.changes.slice(i, i + WRITE_ROWS_PER_STATEMENT) };
    if (part.schdRemovals.length + part.changes.length > 0) slices.push(() => writeParams(part, now));
  }
  return runSlices(tx, slices, meanwhile);
}

/** Work of the caller's done while Postgres runs the write: its share `slice` of `of`, one call per statement. */
export type Meanwhile = (slice: number, of: number) => void;

type WriteRows = Omit<WritePart, 'events'> & { events: OutboxRow[] };

/** Lets a statement just issued reach the socket (the driver's queue runs on microtasks) before the caller's next synchronous work. */
const issued = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * flight.write_batch once per slice, one after another on the transaction's connection. Each
 * slice's parameters — array literals already (pgArray), so the driver copies them as they are —
 * are built while the statement before runs in Postgres, and so is the caller's `meanwhile` share:
 * on two cores the pump's work and Postgres's overlap instead of taking turns. At most two
 * slices' parameters are alive at once.
 */
async function runSlices(tx: Executor, slices: readonly (() => Flight.FlightWriteParams)[], meanwhile?: Meanwhile): Promise<void> {
  let running: Promise<number> | undefined;
  for (const [i, build] of slices.entries()) {
    const params = build();
    if (running) await running;
    running = FLIGHT.writeBatch(tx, params);
    running.catch(() => undefined); // awaited before the next statement or at the end: never left unhandled while the next slice is built
    await issued();
    meanwhile?.(i, slices.length);
  }
  await running;
}

/** The outbox rows' columns as array literals (target, flid, state_version, payload): the batch write's, and the benches' write limit's. */
export const outboxArrays = (ev: readonly OutboxRow[]) =>
  [pgArray(ev.map((e) => e.target)), pgArray(ev.map((e) => e.flid)), pgArray(ev.map((e) => e.stateVersion)), pgArray(ev.map((e) => (e.target === 'msg' ? JSON.stringify(e.payload) : null)))] as const;

/** The change records' columns as array literals (flid, state_version, msg_id, kind, op, cause, changes, created_at): the batch write's, and the write limit's. */
export const changeArrays = (ch: readonly FlightChange[]) =>
  [
    pgArray(ch.map((c) => c.flid)),
    pgArray(ch.map((c) => c.stateVersion)),
    pgArray(ch.map((c) => c.msgId)),
    pgArray(ch.map((c) => c.kind)),
    pgArray(ch.map((c) => c.op)),
    pgArray(ch.map((c) => c.cause)),
    pgArray(ch.map((c) => JSON.stringify(c.changes))),
    pgArray(ch.map((c) => c.at.toISOString())),
  ] as const;

/** The parameters of one flight.write_batch statement, every array as its literal. */
function writeParams(p: WriteRows, now: Date): Flight.FlightWriteParams {
  return [now, ...outboxArrays(p.events), pgArray(p.schdRemovals), ...changeArrays(p.changes), ...flightParams(p.flights)];
}

// ---------------------------------------------------------------------------------------------
// outbox

export interface MsgEvent {
  flid: string;
  stateVersion: number;
  /** Payload without EVENT_ID (added from the sequence on insert). */
  payload: Record<string, unknown>;
}

/** msg topic events, EVENT_IDs taken from the global sequence in array order. */
export async function insertMsgEvents(tx: Executor, events: readonly MsgEvent[], now: Date): Promise<void> {
  if (events.length === 0) return;
  await OutboxEvents.insertMsgEvents(
    tx,
    now,
    events.map((e) => e.flid),
    events.map((e) => e.stateVersion),
    events.map((e) => JSON.stringify(e.payload)),
  );
}

/**
 * State-topic rows (lib/dispatch/state.ts) at these versions, one per FLID, upserted back to
 * PENDING with a new EVENT_ID: the history purge's (the pump's are written inside flight.write_batch).
 */
export async function upsertStateRows(tx: Executor, rows: readonly { flid: string; stateVersion: number }[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  await OutboxRounds.upsertStateRows(
    tx,
    now,
    rows.map((r) => r.flid),
    rows.map((r) => r.stateVersion),
  );
}

/** Deleted flights never go to schd: drop their pending schd rows. */
export async function removePendingSchdRows(tx: Executor, flids: readonly string[]): Promise<void> {
  if (flids.length === 0) return;
  await OutboxEvents.removePendingSchd(tx, [...flids]);
}
