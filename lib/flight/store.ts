// Persistence of complete flight states, driven by rules.ts: bulk load by FLID set (a fixed
// number of queries whatever the count), set-based writes (unnest arrays, chunked), only the
// collections that changed are deleted-then-inserted, outbox rows. Only loads and stores.
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { COLLECTIONS, columnOf, DETAIL_TABLES, SCALAR_KEYS, STATUS_KEYS, type CollectionSpec, type ValueKind } from './rules.ts';
import { emptyData, isoLocal, sameValue, type FlightData, type FlightState, type MaflEntry, type Row, type Value } from './state.ts';

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

/** `insert into t (cols) select … from unnest($1::text[], …) as u(cols)`: one parameter per column. */
function unnestInsert(table: string, columns: { name: string; type: string }[], rows: (string | number | boolean | null)[][], suffix?: RawBuilder<unknown>) {
  const arrays = columns.map((_, i) => rows.map((r) => (r[i] === null || r[i] === undefined ? null : String(r[i]))));
  const cols = sql.join(columns.map((c) => sql.ref(c.name)));
  const params = sql.join(arrays.map((a) => sql`${a}::text[]`));
  const casts = sql.join(columns.map((c) => sql`${sql.ref(`u.${c.name}`)}::${sql.raw(c.type)}`));
  return sql`insert into ${sql.table(table)} (${cols}) select ${casts} from unnest(${params}) as u(${cols}) ${suffix ?? sql``}`;
}

// ---------------------------------------------------------------------------------------------
// load

const MAIN_COLUMNS = [
  sql`flid, state, state_version, operation_day::text as operation_day, last_msg_id, updated_at, mafl`,
  ...STATUS_KEYS.map((k) => sql.ref(k.toLowerCase())),
  ...SCALAR_KEYS.map((s) => sql.ref(s.column)),
];

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

function detailRowToValue(spec: CollectionSpec, r: Record<string, unknown>, tz: string): Row | string {
  if (spec.raw) return String(r.xml);
  const row: Row = {};
  if (spec.keyAttr && r.source_seq !== null) row[spec.keyAttr] = Number(r.source_seq);
  for (const f of spec.fields) {
    const v = fromDb(f.kind, r[columnOf(f)], tz);
    if (v !== null) row[f.name] = v;
  }
  return row;
}

/**
 * Complete states of these FLIDs (absent FLIDs are simply missing from the map).
 * 1 + DETAIL_TABLES.length queries, whatever the number of FLIDs. Consistency across the queries
 * is the caller's business (a transaction: the pump's, or read.ts's REPEATABLE READ one).
 */
export async function loadStates(db: Executor, flids: readonly string[], tz: string): Promise<Map<string, FlightState>> {
  const out = new Map<string, FlightState>();
  if (flids.length === 0) return out;
  const ids = [...new Set(flids)];
  const main = await sql<Record<string, unknown>>`select ${sql.join(MAIN_COLUMNS)} from flight_schd where flid = any(${ids}::text[])`.execute(db);
  for (const r of main.rows) out.set(String(r.flid), mainRowToState(r, tz));
  if (out.size === 0) return out;
  const found = [...out.keys()];
  for (const table of DETAIL_TABLES) {
    const specs = COLLECTIONS.filter((c) => c.table === table);
    const disc = specs[0].discriminator?.column;
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table)} where flid = any(${found}::text[]) order by flid, ${disc ? sql`${sql.ref(disc)}, ` : sql``}ordinal`.execute(db);
    for (const r of rows.rows) {
      const spec = disc ? specs.find((s) => s.discriminator!.value === r[disc])! : specs[0];
      const st = out.get(String(r.flid))!;
      const list = (st.data[spec.tag] ??= []) as (Row | string)[];
      list.push(detailRowToValue(spec, r, tz));
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// write

export interface FlightWrite {
  /** The state as persisted before this message (undefined: a new flight). */
  prev: FlightState | undefined;
  next: FlightState;
}

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

const MAIN_UPDATE = sql.join(
  MAIN_WRITE.filter((c) => c.name !== 'flid' && c.name !== 'created_at' && c.name !== 'deleted_at').map((c) => sql`${sql.ref(c.name)} = excluded.${sql.ref(c.name)}`),
);

/** Persist changed flights: main rows upserted, changed collections deleted-then-inserted. */
export async function writeFlights(tx: Executor, writes: readonly FlightWrite[]): Promise<void> {
  if (writes.length === 0) return;
  for (const part of chunks([...writes])) {
    await unnestInsert(
      'flight_schd',
      MAIN_WRITE,
      part.map((w) => MAIN_WRITE.map((c) => c.get(w.next))),
      sql`on conflict (flid) do update set ${MAIN_UPDATE}, deleted_at = case when excluded.state = 'DELETED' then coalesce(flight_schd.deleted_at, excluded.updated_at) end`,
    ).execute(tx);
  }
  for (const spec of COLLECTIONS) {
    const changed = writes.filter((w) => !sameValue(w.prev?.data[spec.tag], w.next.data[spec.tag]));
    if (changed.length === 0) continue;
    const existed = changed.filter((w) => w.prev !== undefined).map((w) => w.next.FLID);
    const disc = spec.discriminator;
    if (existed.length > 0) {
      await sql`delete from ${sql.table(spec.table)} where flid = any(${existed}::text[]) ${disc ? sql`and ${sql.ref(disc.column)} = ${disc.value}` : sql``}`.execute(tx);
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
    for (const part of chunks(rows, 5000)) await unnestInsert(spec.table, columns, part).execute(tx);
  }
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
  for (const part of chunks([...events])) {
    await sql`
      insert into msg_event (event_id, target, flid, state_version, payload, created_at)
      select x.id, 'msg', x.flid, x.ver, x.p || jsonb_build_object('EVENT_ID', x.id), ${now}
      from (select nextval('msg_event_id_seq') as id, u.flid, u.ver, u.p
            from (select * from unnest(${part.map((e) => e.flid)}::text[], ${part.map((e) => e.stateVersion)}::integer[],
                                       ${part.map((e) => JSON.stringify(e.payload))}::jsonb[]) with ordinality as t(flid, ver, p, ord)
                  order by ord) u) x`.execute(tx);
  }
}

/** schd topic: one row per FLID, upserted back to PENDING with a new EVENT_ID and the latest version. */
export async function upsertSchdRows(tx: Executor, rows: readonly { flid: string; stateVersion: number }[], now: Date): Promise<void> {
  for (const part of chunks([...rows])) {
    await sql`
      insert into msg_event (target, flid, state_version, payload, created_at)
      select 'schd', t.flid, t.ver, jsonb_build_object('FLID', t.flid, 'STATE_VERSION', t.ver), ${now}
      from unnest(${part.map((r) => r.flid)}::text[], ${part.map((r) => r.stateVersion)}::integer[]) with ordinality as t(flid, ver, ord)
      order by t.ord
      on conflict (flid) where target = 'schd' do update set
        event_id = excluded.event_id, state_version = excluded.state_version, payload = excluded.payload,
        state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null,
        kafka_partition = null, kafka_offset = null, last_error = null, created_at = excluded.created_at`.execute(tx);
  }
}

/** Deleted flights never go to schd: drop their pending schd rows. */
export async function removePendingSchdRows(tx: Executor, flids: readonly string[]): Promise<void> {
  if (flids.length === 0) return;
  await sql`delete from msg_event where target = 'schd' and state in ('PENDING', 'DEAD') and flid = any(${[...flids]}::text[])`.execute(tx);
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
