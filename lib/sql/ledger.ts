// SQL of the snapshot ledger: SCHD_GEN (version + latest message per operation day) and
// SCHD_GEN_FLID (roster of the latest snapshot). Statement conventions: lib/db/statement.ts.
import { type Executor, PER_EXECUTION, pgRows, pgRun, pgStatement, type RowOf } from '../db/statement.ts';

// ---- lib/flight/ledger.ts

const loadDaysStatement = pgStatement<[days: string[]], { day: string; version: number | null; last_message_id: number | null; roster: string[]; flids: string[] }>(
  'ledger.load_days',
  `select d::text as day, g.version, g.last_message_id,
          coalesce((select array_agg(flid order by length(flid), flid) from schd_gen_flid r where r.operation_day = d), '{}') as roster,
          coalesce((select array_agg(flid) from flight_schd f where f.operation_day = d), '{}') as flids
   from unnest($1::date[]) as d left join lateral (select version, last_message_id from schd_gen where operation_day = d for update) g on true`,
);
/**
 * Per operation day of $1: the ledger row (locked FOR UPDATE; version null when none), the
 * roster (FLIDs of the latest snapshot, by length then text) and every flight of that day.
 */
export function loadDays(db: Executor, days: string[]): Promise<RowOf<typeof loadDaysStatement>[]> {
  return pgRows(db, loadDaysStatement, days);
}

const casVersionStatement = pgStatement<[day: string, fromVersion: number, version: number, lastMessageId: number, at: Date]>(
  'ledger.cas_version',
  `update schd_gen set version = $3::integer, last_message_id = $4::bigint, updated_at = $5::timestamptz
   where operation_day = $1::date and version = $2::integer`,
);
/** Compare-and-set of a day's ledger: version $2 → $3 with the latest message $4 at $5 (1 row, else a concurrent change). */
export function casVersion(db: Executor, day: string, fromVersion: number, version: number, lastMessageId: number, at: Date): Promise<number> {
  return pgRun(db, casVersionStatement, day, fromVersion, version, lastMessageId, at);
}

const createGenStatement = pgStatement<[day: string, version: number, lastMessageId: number, at: Date]>(
  'ledger.create_gen',
  `insert into schd_gen (operation_day, version, last_message_id, updated_at)
   values ($1::date, $2::integer, $3::bigint, $4::timestamptz) on conflict do nothing`,
);
/** Creates a day's ledger row (0 rows: created concurrently). */
export function createGen(db: Executor, day: string, version: number, lastMessageId: number, at: Date): Promise<number> {
  return pgRun(db, createGenStatement, day, version, lastMessageId, at);
}

const deleteRosterStatement = pgStatement<[day: string]>('ledger.delete_roster', 'delete from schd_gen_flid where operation_day = $1::date');
/** Removes a day's roster. */
export function deleteRoster(db: Executor, day: string): Promise<number> {
  return pgRun(db, deleteRosterStatement, day);
}

const insertRosterStatement = pgStatement<[day: string, flids: string[]]>('ledger.insert_roster', 'insert into schd_gen_flid (operation_day, flid) select $1::date, f from unnest($2::text[]) as f');
/** Writes a day's roster (the FLIDs $2). */
export function insertRoster(db: Executor, day: string, flids: string[]): Promise<number> {
  return pgRun(db, insertRosterStatement, day, flids);
}

// ---- lib/lifecycle/ledger.ts

const purgeableDaysStatement = pgStatement<[dayBefore: string, batch: number], { day: string }>(
  'ledger.purgeable_days',
  `select g.operation_day::text as day from schd_gen g
   where g.operation_day < $1::date
     and not exists (select 1 from schd_gen_flid r join flight_schd f on f.flid = r.flid and f.operation_day = r.operation_day
                     where r.operation_day = g.operation_day)
   order by g.operation_day limit $2::bigint
   for update of g`,
);
/**
 * Up to $2 operation days before $1 whose ledger no roster flight of that day still needs (none
 * remains in FLIGHT_SCHD with that day), oldest first, their SCHD_GEN rows locked.
 */
export function listPurgeableDays(db: Executor, dayBefore: string, batch: number): Promise<RowOf<typeof purgeableDaysStatement>[]> {
  return pgRows(db, purgeableDaysStatement, dayBefore, batch);
}

const deleteRostersStatement = pgStatement<[days: string[]]>('ledger.delete_rosters', 'delete from schd_gen_flid where operation_day = any($1::date[])', PER_EXECUTION);
/**
 * Deletes the rosters of these operation days. Planned with its values (PER_EXECUTION): the
 * generic plan of `operation_day = any($1)` guesses ten days, as many as the roster holds, and
 * reads the whole roster; it runs once per ledger purge.
 */
export function deleteRosters(db: Executor, days: string[]): Promise<number> {
  return pgRun(db, deleteRostersStatement, days);
}

const deleteGensStatement = pgStatement<[days: string[]]>('ledger.delete_gens', 'delete from schd_gen where operation_day = any($1::date[])');
/** Deletes the ledger rows of these operation days. */
export function deleteGens(db: Executor, days: string[]): Promise<number> {
  return pgRun(db, deleteGensStatement, days);
}
