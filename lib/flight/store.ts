// Persistence of complete flight states, driven by rules.ts: bulk load by FLID set (a fixed
// number of queries whatever the count), set-based writes (unnest arrays, chunked), only the
// collections that changed are deleted-then-inserted, outbox rows. Only loads and stores.
import { CompiledQuery, sql, type Kysely, type QueryResult, type RawBuilder } from 'kysely';
import { COLLECTIONS, columnOf, DETAIL_TABLES, SCALAR_KEYS, STATUS_KEYS, type CollectionSpec, type ValueKind } from './rules.ts';
import { emptyData, isoLocal, sameValue, type FlightData, type FlightState, type MaflEntry, type Row, type Value } from './state.ts';
import type { FlightChange, FlightWrite, PlannedEvent, PlanResult } from './plan.ts';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Executor = Kysely<any>;

/** Rows per write statement (arrays are one parameter each, so this only bounds statement size). */
const CHUNK = 2000;

const pgType = (k: ValueKind) => ({ text: 'text', int: 'integer', time: 'timestamptz', hhmm: 'text', flid: 'text', bool: 'boolean' })[k];

function chunks<T>(xs: T[], n = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}

/**
 * Hot statements whose text never changes (the loader, the unnest writes) are compiled by Kysely
 * once per process and run as named prepared statements: node-postgres sends the text and
 * Postgres parses it once per connection; afterwards only the parameters travel. (pg accepts a
 * `{ name, text }` query config where Kysely passes the SQL text.)
 */
const preparedTexts = new Map<string, string>();

async function runPrepared<R>(db: Executor, name: string, params: unknown[], build: () => RawBuilder<R>): Promise<QueryResult<R>> {
  let text = preparedTexts.get(name);
  if (text === undefined) {
    const c = build().compile(db);
    if (c.parameters.length !== params.length) throw new Error(`prepared statement ${name}: ${c.parameters.length} placeholders for ${params.length} parameters`);
    text = c.sql;
    preparedTexts.set(name, text);
  }
  const q = CompiledQuery.raw(text, params);
  return db.executeQuery<R>({ ...q, sql: { name, text } as unknown as string });
}

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

function mainRowToState(r: Record<string, unknown>, tz: string): FlightState {
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
    OPERATION_DAY: (r.operation_day as string | null) ?? null,
    UPDATED_AT: isoLocal(r.updated_at as Date, tz),
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

/**
 * One correlated aggregate per detail table: `coalesce((select json_agg(json_build_array(…) order by …)
 * from t d where d.flid = f.flid), '[]')`. Times travel as epoch milliseconds (JSON numbers), so
 * the zone of the session never matters; everything else keeps its SQL type's JSON form.
 */
const DETAIL_SELECTS = DETAIL_LOADS.map((l) => {
  const el = sql.join([
    ...(l.disc ? [sql.ref(`d.${l.disc}`)] : []),
    ...l.columns.map((c) => (c.kind === 'time' ? sql`(extract(epoch from ${sql.ref(`d.${c.column}`)}) * 1000)::float8` : sql.ref(`d.${c.column}`))),
  ]);
  const order = l.disc ? sql`${sql.ref(`d.${l.disc}`)}, d.ordinal` : sql`d.ordinal`;
  return sql`coalesce((select json_agg(json_build_array(${el}) order by ${order}) from ${sql.table(l.table)} d where d.flid = f.flid), '[]') as ${sql.ref(l.alias)}`;
});

const MAIN_SELECT = sql.join([
  sql`f.flid, f.state, f.state_version, f.operation_day::text as operation_day, f.last_msg_id, f.updated_at, f.mafl`,
  ...STATUS_KEYS.map((k) => sql.ref(`f.${k.toLowerCase()}`)),
  ...SCALAR_KEYS.map((s) => sql.ref(`f.${s.column}`)),
  ...DETAIL_SELECTS,
]);

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
  const ids = [...new Set(flids)];
  const res = await runPrepared<Record<string, unknown>>(db, 'msgx_load_states', [ids], () => sql`select ${MAIN_SELECT} from flight_schd f where f.flid = any(${ids}::text[])`);
  return rowsToStates(res.rows, tz);
}

/** The flights each of these messages changed (their change records, written with their business commit): one query. */
export async function changedBy(db: Executor, msgIds: readonly number[]): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>(msgIds.map((id) => [id, []]));
  if (msgIds.length === 0) return out;
  const ids = [...msgIds];
  const r = await runPrepared<{ msg_id: string; flid: string }>(db, 'msgx_changed_by', [ids], () => sql`select msg_id, flid from flight_change where msg_id = any(${ids}::bigint[])`);
  for (const x of r.rows) out.get(Number(x.msg_id))?.push(x.flid);
  return out;
}

/** ACTIVE flights whose MAID is one of these masters: {flid, flno, maid}, ordered by FLID. */
export async function loadSharedOf(db: Executor, masters: readonly string[]): Promise<{ flid: string; flno: string | null; maid: string }[]> {
  if (masters.length === 0) return [];
  const keys = [...new Set(masters)];
  const r = await runPrepared<{ flid: string; flno: string | null; maid: string }>(
    db,
    'msgx_load_shared_of',
    [keys],
    () => sql`select flid, flno, maid from flight_schd where state = 'ACTIVE' and maid = any(${keys}::text[]) order by length(flid), flid`,
  );
  return r.rows;
}

function rowsToStates(rows: Record<string, unknown>[], tz: string): Map<string, FlightState> {
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

const MAIN_WRITE: { name: string; type: string; get: (s: FlightState) => string | number | boolean | null }[] = [
  { name: 'flid', type: 'text', get: (s) => s.FLID },
  { name: 'state', type: 'text', get: (s) => s.STATE },
  { name: 'state_version', type: 'integer', get: (s) => s.STATE_VERSION },
  { name: 'operation_day', type: 'date', get: (s) => s.OPERATION_DAY },
  { name: 'last_msg_id', type: 'bigint', get: (s) => s.LAST_MSG_ID },
  { name: 'created_at', type: 'timestamptz', get: (s) => s.UPDATED_AT },
  { name: 'updated_at', type: 'timestamptz', get: (s) => s.UPDATED_AT },
  { name: 'deleted_at', type: 'timestamptz', get: (s) => (s.STATE === 'DELETED' ? s.UPDATED_AT : null) },
  { name: 'mafl', type: 'jsonb', get: (s) => JSON.stringify(s.MAFL) },
  ...STATUS_KEYS.map((k) => ({ name: k.toLowerCase(), type: 'boolean', get: (s: FlightState) => s.data[k] === true })),
  ...SCALAR_KEYS.map((c) => ({ name: c.column, type: pgType(c.kind), get: (s: FlightState) => toDb(s.data[c.key]) })),
];

const MAIN_UPDATE = sql.join(MAIN_WRITE.filter((c) => c.name !== 'flid' && c.name !== 'created_at' && c.name !== 'deleted_at').map((c) => sql`${sql.ref(c.name)} = excluded.${sql.ref(c.name)}`));

// A write is a list of pieces (one data-modifying statement each, in order). `writeBatch` runs a
// message's pieces as ONE statement: each piece is a data-modifying CTE that starts only after the
// previous one completed (`guard`: a pseudo-constant `(select count(*) from <previous>) >= 0`
// qual, i.e. a one-time filter evaluated before the piece's first row) — so a collection's
// delete precedes its insert, and msg EVENT_IDs are taken before schd EVENT_IDs, exactly as when
// the pieces run one after another. Foreign keys are checked at the end of the statement.

interface Piece {
  /** Determines the text (with the other keys of the statement): the prepared statement's name. */
  key: string;
  /** The statement; `guard` (a boolean SQL condition or null) must gate every row it writes. */
  build: (guard: RawBuilder<unknown> | null) => RawBuilder<unknown>;
}

const andGuard = (g: RawBuilder<unknown> | null) => (g ? sql`and ${g}` : sql``);
const whereGuard = (g: RawBuilder<unknown> | null) => (g ? sql`where ${g}` : sql``);

/** `insert into t (cols) select … from unnest($1::text[], …) as u(cols)`: one parameter per column. */
function unnestPiece(key: string, table: string, columns: { name: string; type: string }[], rows: (string | number | boolean | null)[][], suffix?: RawBuilder<unknown>): Piece {
  const arrays = columns.map((_, i) => rows.map((r) => (r[i] === null || r[i] === undefined ? null : String(r[i]))));
  const cols = sql.join(columns.map((c) => sql.ref(c.name)));
  const params = sql.join(arrays.map((a) => sql`${a}::text[]`));
  const casts = sql.join(columns.map((c) => sql`${sql.ref(`u.${c.name}`)}::${sql.raw(c.type)}`));
  return { key, build: (g) => sql`insert into ${sql.table(table)} (${cols}) select ${casts} from unnest(${params}) as u(${cols}) ${whereGuard(g)} ${suffix ?? sql``}` };
}

/** Pieces persisting changed flights: main rows upserted, changed collections deleted-then-inserted. */
function flightPieces(writes: readonly FlightWrite[]): Piece[] {
  const out: Piece[] = [];
  if (writes.length === 0) return out;
  for (const part of chunks([...writes])) {
    out.push(
      unnestPiece(
        'msgx_upsert_flight_schd',
        'flight_schd',
        MAIN_WRITE,
        part.map((w) => MAIN_WRITE.map((c) => c.get(w.next))),
        sql`on conflict (flid) do update set ${MAIN_UPDATE}, deleted_at = case when excluded.state = 'DELETED' then coalesce(flight_schd.deleted_at, excluded.updated_at) end`,
      ),
    );
  }
  for (const spec of COLLECTIONS) {
    const changed = writes.filter((w) => !sameValue(w.prev?.data[spec.tag], w.next.data[spec.tag]));
    if (changed.length === 0) continue;
    const existed = changed.filter((w) => w.prev !== undefined).map((w) => w.next.FLID);
    const disc = spec.discriminator;
    if (existed.length > 0) {
      out.push({
        key: `msgx_delete_${spec.tag.toLowerCase()}`,
        build: (g) => sql`delete from ${sql.table(spec.table)} where flid = any(${existed}::text[]) ${disc ? sql`and ${sql.ref(disc.column)} = ${disc.value}` : sql``} ${andGuard(g)}`,
      });
    }
    const columns = [
      { name: 'flid', type: 'text' },
      ...(disc ? [{ name: disc.column, type: 'text' }] : []),
      { name: 'ordinal', type: 'smallint' },
      { name: 'source_seq', type: 'integer' },
      ...(spec.raw ? [{ name: 'xml', type: 'text' }] : spec.fields.map((f) => ({ name: columnOf(f), type: pgType(f.kind) }))),
    ];
    const rows: (string | number | null)[][] = [];
    for (const w of changed) {
      const list = (w.next.data[spec.tag] ?? []) as (Row | string)[];
      list.forEach((el, i) => {
        const head: (string | number | null)[] = [w.next.FLID, ...(disc ? [disc.value] : []), i + 1];
        if (typeof el === 'string') rows.push([...head, null, el]);
        else rows.push([...head, spec.keyAttr ? (el[spec.keyAttr] ?? null) : null, ...spec.fields.map((f) => el[f.name] ?? null)]);
      });
    }
    for (const part of chunks(rows, 5000)) out.push(unnestPiece(`msgx_insert_${spec.tag.toLowerCase()}`, spec.table, columns, part));
  }
  return out;
}

/** Pieces above this count run as an unnamed statement (a big snapshot's shape is rarely repeated). */
const MAX_PREPARED_PIECES = 16;

async function runPieces(db: Executor, pieces: readonly Piece[], combined: boolean): Promise<void> {
  if (pieces.length === 0) return;
  if (!combined || pieces.length === 1) {
    for (const p of pieces) await runCompiled(db, p.key, p.build(null), true);
    return;
  }
  const ctes = pieces.map((p, i) => sql`${sql.raw(`w${i}`)} as (${p.build(i === 0 ? null : sql`(select count(*) from ${sql.raw(`w${i - 1}`)}) >= 0`)} returning 1)`);
  const stmt = sql`with ${sql.join(ctes)} select (select count(*) from ${sql.raw(`w${pieces.length - 1}`)})::int as n`;
  const prepared = pieces.length <= MAX_PREPARED_PIECES;
  await runCompiled(db, prepared ? shapeName(pieces.map((p) => p.key).join(',')) : '', stmt, prepared);
}

/** Short prepared-statement name per combined shape (Postgres truncates names at 63 bytes). */
const shapeNames = new Map<string, string>();
function shapeName(shape: string): string {
  let n = shapeNames.get(shape);
  if (n === undefined) shapeNames.set(shape, (n = `msgx_w${shapeNames.size + 1}`));
  return n;
}

/** Run a built statement; `prepared`: as a named prepared statement (the name must determine the text). */
async function runCompiled(db: Executor, name: string, stmt: RawBuilder<unknown>, prepared: boolean): Promise<void> {
  const c = stmt.compile(db);
  if (!prepared) {
    await db.executeQuery(c);
    return;
  }
  const known = preparedTexts.get(name);
  if (known === undefined) preparedTexts.set(name, c.sql);
  else if (known !== c.sql) throw new Error(`prepared statement ${name}: text changed`);
  await db.executeQuery({ ...c, sql: { name, text: c.sql } as unknown as string });
}

/**
 * A batch's whole flight write in ONE statement (see Piece above): the flights it changed (net),
 * its outbox rows in EVENT_ID order, the pending schd rows of flights it left DELETED, and the
 * change records (flight_change).
 */
export async function writePlan(tx: Executor, p: Pick<PlanResult, 'flights' | 'events' | 'schdRemovals' | 'changes'>, now: Date): Promise<void> {
  await runPieces(tx, [...flightPieces(p.flights), ...eventPieces(p.events, now), ...removePendingPieces(p.schdRemovals), ...changePieces(p.changes)], true);
}

/**
 * Outbox rows of a batch, msg events and schd upserts interleaved: EVENT_IDs are taken in array
 * order (as one message after another would take them). One insert for both targets: msg rows
 * never meet the schd rows' partial unique index; a schd row (one per FLID) replaces the FLID's
 * row back to PENDING with its new EVENT_ID.
 */
function eventPieces(events: readonly PlannedEvent[], now: Date): Piece[] {
  return chunks([...events]).map((part) => ({
    key: 'msgx_insert_events',
    build: (g) => sql`
      insert into msg_event (event_id, target, flid, state_version, payload, created_at)
      select x.id, x.target, x.flid, x.ver,
             case when x.target = 'msg' then x.p || jsonb_build_object('EVENT_ID', x.id) else jsonb_build_object('FLID', x.flid, 'STATE_VERSION', x.ver) end,
             ${now}::timestamptz
      from (select nextval('msg_event_id_seq') as id, u.target, u.flid, u.ver, u.p
            from (select * from unnest(${part.map((e) => e.target)}::text[], ${part.map((e) => e.flid)}::text[], ${part.map((e) => e.stateVersion)}::integer[],
                                       ${part.map((e) => (e.target === 'msg' ? JSON.stringify(e.payload) : null))}::jsonb[]) with ordinality as t(target, flid, ver, p, ord)
                  order by ord) u ${whereGuard(g)}) x
      on conflict (flid) where target = 'schd' do update set
        event_id = excluded.event_id, state_version = excluded.state_version, payload = excluded.payload,
        state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null,
        kafka_partition = null, kafka_offset = null, last_error = null, created_at = excluded.created_at`,
  }));
}

/** flight_change rows: one per message and flight it changed. */
function changePieces(changes: readonly FlightChange[]): Piece[] {
  return chunks([...changes]).map((part) => ({
    key: 'msgx_insert_flight_change',
    build: (g) => sql`
      insert into flight_change (flid, state_version, msg_id, kind, op, cause, changes, created_at)
      select * from unnest(${part.map((c) => c.flid)}::text[], ${part.map((c) => c.stateVersion)}::integer[], ${part.map((c) => c.msgId)}::bigint[],
                           ${part.map((c) => c.kind)}::text[], ${part.map((c) => c.op)}::text[], ${part.map((c) => c.cause)}::text[],
                           ${part.map((c) => JSON.stringify(c.changes))}::jsonb[], ${part.map((c) => c.at.toISOString())}::timestamptz[]) ${whereGuard(g)}
      on conflict (flid, state_version) do nothing`,
  }));
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
  await runPieces(tx, msgEventPieces(events, now), false);
}

function msgEventPieces(events: readonly MsgEvent[], now: Date): Piece[] {
  return chunks([...events]).map((part) => ({
    key: 'msgx_insert_msg_events',
    build: (g) => sql`
      insert into msg_event (event_id, target, flid, state_version, payload, created_at)
      select x.id, 'msg', x.flid, x.ver, x.p || jsonb_build_object('EVENT_ID', x.id), ${now}::timestamptz
      from (select nextval('msg_event_id_seq') as id, u.flid, u.ver, u.p
            from (select * from unnest(${part.map((e) => e.flid)}::text[], ${part.map((e) => e.stateVersion)}::integer[],
                                       ${part.map((e) => JSON.stringify(e.payload))}::jsonb[]) with ordinality as t(flid, ver, p, ord)
                  order by ord) u ${whereGuard(g)}) x`,
  }));
}

/** schd topic: one row per FLID, upserted back to PENDING with a new EVENT_ID and the latest version. */
export async function upsertSchdRows(tx: Executor, rows: readonly { flid: string; stateVersion: number }[], now: Date): Promise<void> {
  await runPieces(tx, schdRowPieces(rows, now), false);
}

function schdRowPieces(rows: readonly { flid: string; stateVersion: number }[], now: Date): Piece[] {
  return chunks([...rows]).map((part) => ({
    key: 'msgx_upsert_schd_rows',
    build: (g) => sql`
      insert into msg_event (target, flid, state_version, payload, created_at)
      select 'schd', t.flid, t.ver, jsonb_build_object('FLID', t.flid, 'STATE_VERSION', t.ver), ${now}::timestamptz
      from unnest(${part.map((r) => r.flid)}::text[], ${part.map((r) => r.stateVersion)}::integer[]) with ordinality as t(flid, ver, ord)
      ${whereGuard(g)}
      order by t.ord
      on conflict (flid) where target = 'schd' do update set
        event_id = excluded.event_id, state_version = excluded.state_version, payload = excluded.payload,
        state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null,
        kafka_partition = null, kafka_offset = null, last_error = null, created_at = excluded.created_at`,
  }));
}

/** Deleted flights never go to schd: drop their pending schd rows. */
export async function removePendingSchdRows(tx: Executor, flids: readonly string[]): Promise<void> {
  await runPieces(tx, removePendingPieces(flids), false);
}

function removePendingPieces(flids: readonly string[]): Piece[] {
  if (flids.length === 0) return [];
  return [{ key: 'msgx_remove_pending_schd', build: (g) => sql`delete from msg_event where target = 'schd' and state in ('PENDING', 'DEAD') and flid = any(${[...flids]}::text[]) ${andGuard(g)}` }];
}

// ---------------------------------------------------------------------------------------------
// lookups used by the handlers

/** ACTIVE shared flights of these masters: {FLID, MAID}. */
export async function loadSharedFlids(db: Executor, masters: readonly string[]): Promise<{ flid: string; maid: string }[]> {
  if (masters.length === 0) return [];
  const r = await sql<{ flid: string; maid: string }>`select flid, maid from flight_schd where state = 'ACTIVE' and maid = any(${[...masters]}::text[]) order by length(flid), flid`.execute(db);
  return r.rows;
}

/** FLIDs of an operation day (ACTIVE, or every state). */
export async function flidsOfDay(db: Executor, day: string, includeDeleted = false): Promise<string[]> {
  const r = await sql<{ flid: string }>`select flid from flight_schd where operation_day = ${day}::date ${includeDeleted ? sql`` : sql`and state = 'ACTIVE'`}`.execute(db);
  return r.rows.map((x) => x.flid);
}
