// SQL of FLIGHT_SCHD and its detail tables, FLIGHT_CHANGE and FLIGHT_VERSION_FLOOR (the purge and
// FLIGHT_CHANGE's retention: lib/sql/flight/purge.ts). Statement conventions: lib/db/statement.ts.
// The loader and the batch write are built at load from the column spec lib/flight/store.ts passes, so
// they come as one FlightOperations object (flightOperations) instead of functions of this module.
import { type Executor, type PgArray, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

// ---- lib/flight/store.ts

/** SQL types a write column's text[] parameter is cast to. */
export type SqlType = 'text' | 'integer' | 'smallint' | 'bigint' | 'boolean' | 'date' | 'timestamptz' | 'jsonb';
const SQL_TYPES: ReadonlySet<string> = new Set<SqlType>(['text', 'integer', 'smallint', 'bigint', 'boolean', 'date', 'timestamptz', 'jsonb']);

/** A written column: its name and the SQL type of its values. */
export interface WriteColumn {
  name: string;
  type: SqlType;
}

/** A detail table as the loader aggregates it. */
export interface DetailRead {
  table: string;
  /** Discriminator column (routes, raw fragments): element[0] of each aggregated element. */
  disc?: string;
  /** Columns after the discriminator (source_seq, then the fields or xml); `time` ones travel as epoch milliseconds. */
  columns: readonly { column: string; time: boolean }[];
}

/** A collection as the batch write replaces it (delete its rows of the flights, insert the new ones). */
export interface CollectionWrite {
  table: string;
  /** Discriminator column + value when several collections share a table. */
  discriminator?: { column: string; value: string };
  /** Inserted columns in parameter order: flid, [discriminator], ordinal, source_seq, the fields (or xml). */
  columns: readonly WriteColumn[];
}

/** The column spec of the flight loader and the batch write (built from lib/flight/rules.ts by the caller). */
export interface FlightColumns {
  /** flight_schd columns the loader reads after the fixed ones (status keys, then scalar keys), in row order. */
  mainRead: readonly string[];
  /** flight_schd columns the batch write upserts, in parameter order: flid first, then every other column written. */
  mainWrite: readonly WriteColumn[];
  /** Detail tables the loader aggregates, as columns d0, d1, … in this order. */
  details: readonly DetailRead[];
  /** Collections the batch write replaces, in write order (each a delete, then an insert). */
  collections: readonly CollectionWrite[];
}

/** A loaded flight: the fixed columns, then `mainRead` by name and `d0…` (JSON arrays of positional elements). */
export type FlightStateRow = {
  flid: string;
  state: string;
  state_version: number;
  operation_day: string | null;
  last_msg_id: number | null;
  updated_at: Date;
  mafl: unknown;
} & Record<string, unknown>;

/**
 * Parameters of the batch write. The fixed ones ($1–$14) come first; then one text[] per column:
 * `mainWrite` in order, then per collection (in `collections` order) the FLIDs whose rows it
 * deletes, then one array per inserted column. Values travel as text and are cast in SQL.
 */
export type FlightWriteParams = [
  now: Date,
  eventTargets: PgArray<string>,
  eventFlids: PgArray<string>,
  eventVersions: PgArray<number>,
  eventPayloads: PgArray<string | null>,
  removedSchdFlids: PgArray<string>,
  changeFlids: PgArray<string>,
  changeVersions: PgArray<number>,
  changeMsgIds: PgArray<number>,
  changeKinds: PgArray<string>,
  changeOps: PgArray<string>,
  changeCauses: PgArray<string>,
  changeJson: PgArray<string>,
  changeAt: PgArray<string>,
  ...flightColumns: PgArray<string | number | boolean | null>[],
];

/** Parameters before the flight columns in FlightWriteParams. */
const FIXED_WRITE_PARAMS = 14;

/** Identifiers come from constant tables only; quoted as Kysely's `sql.ref` quoted them. */
function ident(x: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(x)) throw new Error(`flight statements: bad identifier ${x}`);
  return `"${x}"`;
}
function sqlType(t: string): string {
  if (!SQL_TYPES.has(t)) throw new Error(`flight statements: bad type ${t}`);
  return t;
}
function literal(v: string): string {
  if (!/^[A-Z0-9_]+$/.test(v)) throw new Error(`flight statements: bad discriminator value ${v}`);
  return `'${v}'`;
}

/** The loader's and the batch write's operations, on the statements flightOperations built. */
export interface FlightOperations {
  loadStates(db: Executor, flids: string[]): Promise<FlightStateRow[]>;
  pageStates(db: Executor, includeDeleted: boolean, after: string | null, limit: number): Promise<FlightStateRow[]>;
  pageStatesOfDay(db: Executor, day: string, includeDeleted: boolean, after: string | null, limit: number): Promise<FlightStateRow[]>;
  /** The parameters as one array, handed through as they are (lib/flight/store.ts builds a slice's while the one before runs). */
  writeBatch(db: Executor, params: FlightWriteParams): Promise<number>;
}

/**
 * The loader and the batch write, their text built ONCE from the column spec (called once at
 * module load by lib/flight/store.ts; the same spec gives the same text), as operations bound to
 * those statements: the statements stay in this file, as every other file's do.
 */
export function flightOperations(spec: FlightColumns): FlightOperations {
  const { loadStates, pageStates, pageStatesOfDay } = loaderStatements(spec);
  const writeBatch = writeStatement(spec);
  return {
    loadStates: (db, flids) => pgRows(db, loadStates, flids),
    pageStates: (db, includeDeleted, after, limit) => pgRows(db, pageStates, includeDeleted, after, limit),
    pageStatesOfDay: (db, day, includeDeleted, after, limit) => pgRows(db, pageStatesOfDay, day, includeDeleted, after, limit),
    writeBatch: (db, params) => pgRun(db, writeBatch, ...params),
  };
}

/**
 * One correlated aggregate per detail table: `coalesce((select json_agg(json_build_array(…) order by …)
 * from t d where d.flid = f.flid), '[]')`. Times travel as epoch milliseconds (JSON numbers), so
 * the zone of the session never matters; everything else keeps its SQL type's JSON form. The
 * same select list serves the loader by FLID set and the pages of the flight reads.
 */
function loaderStatements(spec: FlightColumns) {
  const details = spec.details.map((l, i) => {
    const el = [...(l.disc ? [`d.${ident(l.disc)}`] : []), ...l.columns.map((c) => (c.time ? `(extract(epoch from d.${ident(c.column)}) * 1000)::float8` : `d.${ident(c.column)}`))].join(', ');
    const order = l.disc ? `d.${ident(l.disc)}, d.ordinal` : 'd.ordinal';
    return `coalesce((select json_agg(json_build_array(${el}) order by ${order}) from ${ident(l.table)} d where d.flid = f.flid), '[]') as ${ident(`d${i}`)}`;
  });
  const fixed = 'f.flid, f.state, f.state_version, f.operation_day::text as operation_day, f.last_msg_id, f.updated_at, f.mafl';
  const select = [fixed, spec.mainRead.map((c) => `f.${ident(c)}`).join(', '), ...details].join(',\n       ');
  return {
    /**
     * Complete states of the FLIDs $1: the main rows with every detail table aggregated per flight
     * (driven by rules.ts). One statement = one consistent snapshot. The FLIDs drive the join
     * (one primary-key probe each, whatever the statistics say): with `f.flid = any($1)` the
     * planner chose a sequential scan that tests every flight against the whole list whenever
     * the table's statistics were stale (after a bulk load), ~3 × slower for a 2,000-FLID slice
     * (docs/decisions.md "Snapshots in bounded memory").
     */
    loadStates: pgStatement<[flids: string[]], FlightStateRow>('flight.load_states', `select ${select}\nfrom unnest($1::text[]) k(flid) join flight_schd f on f.flid = k.flid`),
    /**
     * A page of complete states in FLID (text) order after $2 (null: from the start), at most $3;
     * ACTIVE only unless $1. The page's FLIDs are chosen first (a primary-key range), then only
     * they are loaded: one statement = one snapshot, so a page needs no transaction.
     */
    pageStates: pgStatement<[includeDeleted: boolean, after: string | null, limit: number], FlightStateRow>(
      'flight.page_states',
      `select ${select}
from (select flid from flight_schd where ($1::boolean or state = 'ACTIVE') and flid > coalesce($2::text, '') order by flid limit $3::bigint) p
join flight_schd f on f.flid = p.flid
order by f.flid`,
    ),
    /** As flight.page_states, the flights of operation day $1 only. */
    pageStatesOfDay: pgStatement<[day: string, includeDeleted: boolean, after: string | null, limit: number], FlightStateRow>(
      'flight.page_states_of_day',
      `select ${select}
from (select flid from flight_schd where operation_day = $1::date and ($2::boolean or state = 'ACTIVE') and flid > coalesce($3::text, '')
      order by flid limit $4::bigint) p
join flight_schd f on f.flid = p.flid
order by f.flid`,
    ),
  };
}

// The batch write is ONE statement: a list of pieces (one data-modifying CTE each, in order),
// each starting only after the previous one completed (`guard`: a pseudo-constant
// `(select count(*) from <previous>) >= 0` qual, i.e. a one-time filter evaluated before the
// piece's first row) — so a collection's delete precedes its insert, and msg EVENT_IDs are taken
// before schd EVENT_IDs, exactly as when the pieces run one after another. The detail rows' flights are checked
// at the end of the statement (sql/migrations/0950_child_rows_per_statement.sql). Every piece is always there; one with empty arrays writes nothing.
/** Does the session copy trace contexts into the outbox (one read per statement: an init plan)? */
const TRACED = `(select current_setting('msgx.trace_outbox', true)) = 'on'`;

function writeStatement(spec: FlightColumns) {
  let next = FIXED_WRITE_PARAMS;
  const param = () => `$${++next}`;
  const pieces: ((guard: string | null) => string)[] = [];
  const whereGuard = (g: string | null) => (g ? `where ${g}` : '');
  const andGuard = (g: string | null) => (g ? `and ${g}` : '');

  /** `insert into t (cols) select … from unnest($n::text[], …) as u(cols)`: one parameter per column. */
  const unnestPiece = (table: string, columns: readonly WriteColumn[], suffix = '') => {
    const cols = columns.map((c) => ident(c.name)).join(', ');
    const params = columns.map(() => `${param()}::text[]`).join(', ');
    const casts = columns.map((c) => `u.${ident(c.name)}::${sqlType(c.type)}`).join(', ');
    return (g: string | null) => `insert into ${ident(table)} (${cols}) select ${casts} from unnest(${params}) as u(${cols}) ${whereGuard(g)} ${suffix}`;
  };

  // flights changed: main rows upserted
  const update = spec.mainWrite
    .filter((c) => c.name !== 'flid' && c.name !== 'created_at' && c.name !== 'deleted_at')
    .map((c) => `${ident(c.name)} = excluded.${ident(c.name)}`)
    .join(', ');
  if (spec.mainWrite[0]?.name !== 'flid') throw new Error('flight statements: mainWrite must start with flid');
  pieces.push(
    unnestPiece(
      'flight_schd',
      spec.mainWrite,
      `on conflict (flid) do update set ${update}, deleted_at = case when excluded.state = 'DELETED' then coalesce(flight_schd.deleted_at, excluded.updated_at) end`,
    ),
  );
  // changed collections: deleted, then inserted
  for (const c of spec.collections) {
    const flids = param();
    const disc = c.discriminator ? `and ${ident(c.discriminator.column)} = ${literal(c.discriminator.value)}` : '';
    pieces.push((g) => `delete from ${ident(c.table)} where flid = any(${flids}::text[]) ${disc} ${andGuard(g)}`);
    pieces.push(unnestPiece(c.table, c.columns));
  }
  // Outbox rows of a batch, msg events, state rows and schd upserts interleaved: EVENT_IDs are
  // taken in array order (as one message after another would take them). One insert for every
  // target: msg rows never meet the partial unique index of the coalesced targets; a schd or state
  // row (one per FLID and target) replaces the FLID's row back to PENDING with its new EVENT_ID.
  // trace_context (docs/operations.md "Tracing"), only while the session traces (SET msgx.trace_outbox = on,
  // workers/pump.ts): the context of the message that made the row's version, i.e. of the msg row
  // of the same FLID and version (in a snapshot's later slice: the flight's LAST_MSG_ID, written by
  // the first slice), read from PROC_STATE.
  pieces.push(
    (g) => `insert into msg_event (event_id, target, flid, state_version, payload, created_at, trace_context)
      select x.id, x.target, x.flid, x.ver,
             case when x.target = 'msg' then x.p || jsonb_build_object('EVENT_ID', x.id) else jsonb_build_object('FLID', x.flid, 'STATE_VERSION', x.ver) end,
             $1::timestamptz,
             case when ${TRACED} then (select ps.trace_context from proc_state ps
                                       where ps.msg_id = coalesce(m.msg_id, (select f.last_msg_id from flight_schd f where f.flid = x.flid))) end
      from (select nextval('msg_event_id_seq') as id, u.target, u.flid, u.ver, u.p
            from (select * from unnest($2::text[], $3::text[], $4::integer[], $5::jsonb[]) with ordinality as t(target, flid, ver, p, ord)
                  order by ord) u ${whereGuard(g)}) x
      left join (select t.flid, t.ver, (t.p->>'MSG_ID')::bigint as msg_id from unnest($2::text[], $3::text[], $4::integer[], $5::jsonb[]) as t(target, flid, ver, p)
                  where t.target = 'msg' and ${TRACED}) m on m.flid = x.flid and m.ver = x.ver
      on conflict (target, flid) where target in ('schd', 'state') do update set
        event_id = excluded.event_id, state_version = excluded.state_version, payload = excluded.payload,
        state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null,
        kafka_partition = null, kafka_offset = null, last_error = null, created_at = excluded.created_at, trace_context = excluded.trace_context`,
  );
  // Deleted flights never go to schd: drop their pending schd rows.
  pieces.push((g) => `delete from msg_event where target = 'schd' and state in ('PENDING', 'DEAD') and flid = any($6::text[]) ${andGuard(g)}`);
  // flight_change rows: one per message and flight it changed.
  pieces.push(
    (g) => `insert into flight_change (flid, state_version, msg_id, kind, op, cause, changes, created_at)
      select * from unnest($7::text[], $8::integer[], $9::bigint[], $10::text[], $11::text[], $12::text[], $13::json[], $14::timestamptz[]) ${whereGuard(g)}
      on conflict (flid, state_version) do nothing`,
  );

  const ctes = pieces.map((p, i) => `w${i} as (${p(i === 0 ? null : `(select count(*) from w${i - 1}) >= 0`)} returning 1)`);
  /**
   * A batch's whole flight write: the flights it changed (net), its outbox rows in EVENT_ID
   * order, the pending schd rows of flights it left DELETED, and the change records.
   */
  return pgStatement<FlightWriteParams, { n: number }>('flight.write_batch', `with ${ctes.join(',\n')}\nselect (select count(*) from w${pieces.length - 1})::int as n`);
}

const changedByStatement = pgStatement<[msgIds: number[]], { msg_id: number; flid: string }>('flight.changed_by', 'select msg_id, flid from flight_change where msg_id = any($1::bigint[])');
/** The flights each of the messages $1 changed (their change records): {msg_id, flid}. */
export function listChangedBy(db: Executor, msgIds: number[]): Promise<RowOf<typeof changedByStatement>[]> {
  return pgRows(db, changedByStatement, msgIds);
}

const sharedOfStatement = pgStatement<[masters: string[]], { flid: string; flno: string | null; maid: string }>(
  'flight.shared_of',
  "select flid, flno, maid from flight_schd where state = 'ACTIVE' and maid = any($1::text[]) order by length(flid), flid",
);
/** ACTIVE flights whose MAID is one of the masters $1: {flid, flno, maid}, ordered by FLID. */
export function readSharedOf(db: Executor, masters: string[]): Promise<RowOf<typeof sharedOfStatement>[]> {
  return pgRows(db, sharedOfStatement, masters);
}

// ---- lib/flight/read.ts
// The pages of the flight reads are flight.page_states / flight.page_states_of_day (built with the
// loader above). A page without a cursor passes null, read as '' (every FLID is a non-empty decimal
// text, so `flid > ''` holds for all): the condition stays an index range on the primary key /
// (operation_day, flid) whatever the plan.

// ---- lib/flight/floor.ts

const versionFloorsStatement = pgStatement<[flids: string[]], { flid: string; state_version: number }>(
  'flight.version_floors',
  'select flid, state_version from flight_version_floor where flid = any($1::text[])',
);
/** The version floor of each of the FLIDs $1 that was purged before. */
export function readVersionFloors(db: Executor, flids: string[]): Promise<RowOf<typeof versionFloorsStatement>[]> {
  return pgRows(db, versionFloorsStatement, flids);
}

const raiseVersionFloorsStatement = pgStatement<[flids: string[], versions: number[], now: Date]>(
  'flight.raise_version_floors',
  `insert into flight_version_floor (flid, state_version, purged_at)
   select u.flid, u.v, $3::timestamptz from unnest($1::text[], $2::integer[]) as u(flid, v)
   on conflict (flid) do update set state_version = greatest(flight_version_floor.state_version, excluded.state_version),
                                    purged_at = excluded.purged_at`,
);
/** Raise (never lower) the floor of the FLIDs $1 to the versions $2, purged at $3. */
export function raiseVersionFloors(db: Executor, flids: string[], versions: number[], now: Date): Promise<number> {
  return pgRun(db, raiseVersionFloorsStatement, flids, versions, now);
}

// ---- lib/flight/timeline.ts

const timelineCurrentStatement = pgStatement<
  [flid: string],
  { state: 'ACTIVE' | 'DELETED'; state_version: number; operation_day: string | null; created_at: Date; updated_at: Date; deleted_at: Date | null; last_msg_id: number | null }
>(
  'flight.timeline_current',
  `select state, state_version, operation_day::text as operation_day, created_at, updated_at, deleted_at, last_msg_id
     from flight_schd where flid = $1::text`,
);
/** The FLIGHT_SCHD row of flight $1 as the timeline shows it (none when purged or never seen). */
export function readTimelineCurrent(db: Executor, flid: string): Promise<RowOf<typeof timelineCurrentStatement>[]> {
  return pgRows(db, timelineCurrentStatement, flid);
}

/** A FLIGHT_CHANGE row. */
export interface FlightChangeRow {
  flid: string;
  state_version: number;
  msg_id: number;
  kind: string;
  op: 'CREATE' | 'UPDATE' | 'DELETE' | 'REVIVE';
  cause: 'MESSAGE' | 'CASCADE' | 'MAFL' | 'SNAPSHOT_DELETE';
  /** {"KEY": [before, after], ...} */
  changes: Record<string, [unknown, unknown]>;
  created_at: Date;
}

const timelineChangesStatement = pgStatement<[flid: string], FlightChangeRow>('flight.timeline_changes', 'select * from flight_change where flid = $1::text order by state_version');
/** The change records of flight $1, in version order. */
export function readTimelineChanges(db: Executor, flid: string): Promise<FlightChangeRow[]> {
  return pgRows(db, timelineChangesStatement, flid);
}
