// SQL of a shadow installation (docs/operations.md "Trying a rule change"): its start position and
// the inbox ranges retention deleted before it read them (SHADOW_INTAKE), and the reads of
// `npm run compare` / `npm run dry-run` (lib/shadow/): positions, message outcomes, flights'
// change records, reference data, schema identity. Statement conventions: lib/db/statement.ts.
import { type Executor, pgOne, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

export interface ShadowIntakeRow {
  started_after: number | null;
  lost: { lo: number; hi: number; at: string }[];
}

const shadowIntakeStatement = pgStatement<[], ShadowIntakeRow>('shadow.intake', 'select started_after::bigint as started_after, lost from shadow_intake where id = 1');
/** The shadow row (null started_after: not started). */
export function readShadowIntake(db: Executor): Promise<ShadowIntakeRow | undefined> {
  return pgOne(db, shadowIntakeStatement);
}

const startShadowStatement = pgStatement<[after: number]>(
  'shadow.start',
  `with s as (update shadow_intake set started_after = $1::bigint where id = 1 and started_after is null returning 1)
   update intake_cursor set watermark = greatest(watermark, $1::bigint) where id = 1 and exists (select 1 from s)`,
);
/** Records where a shadow starts (only once: an earlier start is kept) and moves intake's watermark there. */
export function startShadow(db: Executor, after: number): Promise<number> {
  return pgRun(db, startShadowStatement, after);
}

const addLostStatement = pgStatement<[rangesJson: string]>('shadow.add_lost', `update shadow_intake set lost = lost || $1::jsonb where id = 1`);
/** Adds ranges retention deleted before the shadow read them (JSON [{lo, hi, at}]). */
export function addLost(db: Executor, rangesJson: string): Promise<number> {
  return pgRun(db, addLostStatement, rangesJson);
}

// ---- compare / dry-run (lib/shadow/collect.ts)

const identityStatement = pgStatement<[], { server: string; db: string }>(
  'shadow.identity',
  `select pg_postmaster_start_time()::text || ' ' || coalesce(inet_server_port()::text, 'socket') as server,
          current_database() || ' ' || (select oid::text from pg_database where datname = current_database()) as db`,
);
/** Which server and database this is (two URLs naming the same database are refused). */
export function readIdentity(db: Executor): Promise<RowOf<typeof identityStatement>[]> {
  return pgRows(db, identityStatement);
}

const schemaTablesStatement = pgStatement<[], { t: string }>(
  'shadow.schema_tables',
  `select tablename as t from pg_tables where schemaname = 'public'
      and tablename in ('pgmigrations', 'proc_state', 'intake_cursor', 'flight_schd', 'flight_change', 'ref_master', 'shadow_intake')`,
);
/** The tables that make a msgexchange schema (present or not). */
export function listSchemaTables(db: Executor): Promise<RowOf<typeof schemaTablesStatement>[]> {
  return pgRows(db, schemaTablesStatement);
}

const migrationsStatement = pgStatement<[], { name: string }>('shadow.migrations', 'select name from pgmigrations order by run_on, id');
/** The applied migrations, in order (the schema version). */
export function listMigrations(db: Executor): Promise<RowOf<typeof migrationsStatement>[]> {
  return pgRows(db, migrationsStatement);
}

const positionStatement = pgStatement<[], { hi: number | null; open: number | null; lo: number | null }>(
  'shadow.position',
  `select (select max(msg_id) from proc_state)::bigint as hi,
          (select min(msg_id) from proc_state where state in ('PENDING', 'FAILED'))::bigint as open,
          (select min(msg_id) from proc_state)::bigint as lo`,
);
/**
 * How far an installation has applied the inbox: the highest message (`hi`), and the lowest one
 * still open (`open`, PENDING/FAILED; null: none). Its position is open − 1, or hi when none is open.
 */
export function readPosition(db: Executor): Promise<RowOf<typeof positionStatement>[]> {
  return pgRows(db, positionStatement);
}

const outcomesStatement = pgStatement<[after: number, upTo: number], { msg_id: number; state: string; reason: string | null; kind: string | null }>(
  'shadow.outcomes',
  `select msg_id::bigint as msg_id, state, reason, kind from proc_state where msg_id > $1::bigint and msg_id <= $2::bigint order by msg_id`,
);
/** The outcomes of the messages in ($1, $2]. */
export function readOutcomes(db: Executor, after: number, upTo: number): Promise<RowOf<typeof outcomesStatement>[]> {
  return pgRows(db, outcomesStatement, after, upTo);
}

const historyStartsStatement = pgStatement<[], { flid: string; first_msg: number; first_version: number }>(
  'shadow.history_starts',
  `select distinct on (flid) flid, msg_id::bigint as first_msg, state_version as first_version
     from flight_change order by flid, state_version`,
);
/**
 * Per flight: the message of its first retained change record, and whether that record created
 * it (version 1) — where the flight's history began, as far as this installation knows.
 */
export function readHistoryStarts(db: Executor): Promise<RowOf<typeof historyStartsStatement>[]> {
  return pgRows(db, historyStartsStatement);
}

const changesOfStatement = pgStatement<[flids: string[], upTo: number], { flid: string; state_version: number; msg_id: number; kind: string; keys: string[] }>(
  'shadow.changes_of',
  `select flid, state_version, msg_id::bigint as msg_id, kind, array(select json_object_keys(changes)) as keys
     from flight_change where flid = any($1::text[]) and msg_id <= $2::bigint order by flid, state_version desc`,
);
/** The change records of these flights up to message $2 (newest first per flight): which message set a field. */
export function readChangesOf(db: Executor, flids: string[], upTo: number): Promise<RowOf<typeof changesOfStatement>[]> {
  return pgRows(db, changesOfStatement, flids, upTo);
}

const referenceRowsStatement = pgStatement<[], { tbl: string; k: string; v: unknown; last_msg_id: number }>(
  'shadow.reference_rows',
  `select 'ref_master' as tbl, rtype || '/' || rkey as k, record as v, last_msg_id::bigint as last_msg_id from ref_master
   union all
   select 'res_status', rtyp || '/' || rsid, jsonb_build_object('stat', stat, 'stdt', stdt, 'eddt', eddt, 'remk', remk), last_msg_id::bigint from res_status
   union all
   select 'schs_season', snam || '/' || apcd, jsonb_build_object('sdat', sdat, 'edat', edat, 'recs', recs, 'flights', flights), last_msg_id::bigint from schs_season`,
);
/** Reference data: every record (master data, resource status, seasons) with the message that last wrote it. */
export function readReferenceRows(db: Executor): Promise<RowOf<typeof referenceRowsStatement>[]> {
  return pgRows(db, referenceRowsStatement);
}

// ---- dry-run: the scratch database (scripts/dry-run.ts)

const publicTablesStatement = pgStatement<[], { t: string }>('shadow.public_tables', `select tablename as t from pg_tables where schemaname = 'public' order by 1`);
/** Tables in the scratch's public schema, and whether any holds messages or flights (when migrated). */
export function listPublicTables(db: Executor): Promise<RowOf<typeof publicTablesStatement>[]> {
  return pgRows(db, publicTablesStatement);
}

const holdingsStatement = pgStatement<[], { messages: number; flights: number; refs: number; watermark: number }>(
  'shadow.holdings',
  `select (select count(*) from proc_state)::int as messages, (select count(*) from flight_schd)::int as flights,
          (select count(*) from ref_master)::int as refs, (select watermark from intake_cursor where id = 1)::bigint as watermark`,
);
/** How much a migrated database holds (a scratch must hold nothing yet). */
export function readHoldings(db: Executor): Promise<RowOf<typeof holdingsStatement>[]> {
  return pgRows(db, holdingsStatement);
}

const startScratchStatement = pgStatement<[after: number]>(
  'shadow.start_scratch',
  `with s as (update shadow_intake set started_after = $1::bigint where id = 1 returning 1)
   update intake_cursor set watermark = $1::bigint where id = 1 and exists (select 1 from s)`,
);
/** A dry run's scratch: where it starts (the rows it takes in are enqueued by the command itself). */
export function startScratch(db: Executor, after: number): Promise<number> {
  return pgRun(db, startScratchStatement, after);
}
