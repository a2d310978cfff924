// SQL of the flights' purge (FLIGHT_SCHD with its families, FLIGHT_PURGE_REDIS) and of the
// retention of FLIGHT_CHANGE. Statement conventions: lib/db/statement.ts.
import { type Executor, pgOne, pgRows, pgRun, pgStatement, type RowOf } from '../../db/statement.ts';

// ---- lib/lifecycle/flights.ts

const purgeRedisOwedCountStatement = pgStatement<[], { n: number }>('flight.purge_redis_owed_count', 'select count(*)::int as n from flight_purge_redis');
/** Redis keys owed by earlier purge rounds: how many. */
export function countPurgeRedisOwed(db: Executor): Promise<RowOf<typeof purgeRedisOwedCountStatement> | undefined> {
  return pgOne(db, purgeRedisOwedCountStatement);
}

const purgeCandidatesStatement = pgStatement<[after: string, deletedBefore: Date, dayBefore: string, inProcess: string[], limit: number], { flid: string; state_version: number }>(
  'flight.purge_candidates',
  `select f.flid, f.state_version from flight_schd f
   where f.flid > $1::text
     and ((f.state = 'DELETED' and f.deleted_at < $2::timestamptz) or f.operation_day < $3::date)
     and not exists (select 1 from proc_state p where p.msg_id = f.last_msg_id and p.state = any($4::text[]))
   order by f.flid limit $5::bigint`,
);
/**
 * History purge candidates after FLID $1, read without locks: DELETED before $2 or of an
 * operation day before $3, and whose last message is not open (state in $4); at most $5, FLID order.
 */
export function listPurgeCandidates(db: Executor, after: string, deletedBefore: Date, dayBefore: string, inProcess: string[], limit: number): Promise<RowOf<typeof purgeCandidatesStatement>[]> {
  return pgRows(db, purgeCandidatesStatement, after, deletedBefore, dayBefore, inProcess, limit);
}

/** A flight of a purge family, as lockPurgeFamilies locks it. */
export interface PurgeFamilyRow {
  flid: string;
  state: 'ACTIVE' | 'DELETED';
  state_version: number;
  operation_day: string | null;
  deleted_at: Date | null;
  maid: string | null;
  in_process: boolean;
}

const lockPurgeFamiliesStatement = pgStatement<[flids: string[], inProcess: string[]], PurgeFamilyRow>(
  'flight.lock_purge_families',
  `with c as (select coalesce(maid, flid) as root from flight_schd where flid = any($1::text[]))
   select f.flid, f.state, f.state_version, f.operation_day::text as operation_day, f.deleted_at, f.maid,
          exists (select 1 from proc_state p where p.msg_id = f.last_msg_id and p.state = any($2::text[])) as in_process
   from flight_schd f
   where f.flid = any($1::text[]) or f.flid in (select root from c) or f.maid in (select root from c)
   order by f.flid
   for update of f`,
);
/**
 * The candidates $1 with their families (their master and every flight whose MAID names the same
 * master), locked FOR UPDATE in FLID order; in_process: the last message is open (state in $2).
 */
export function lockPurgeFamilies(db: Executor, flids: string[], inProcess: string[]): Promise<PurgeFamilyRow[]> {
  return pgRows(db, lockPurgeFamiliesStatement, flids, inProcess);
}

const owePurgeRedisStatement = pgStatement<[flids: string[], now: Date]>(
  'flight.owe_purge_redis',
  `insert into flight_purge_redis (flid, purged_at) select unnest($1::text[]), $2::timestamptz
   on conflict (flid) do update set purged_at = excluded.purged_at`,
);
/** Redis keys owed for the purged FLIDs $1 (purged at $2), deleted after the commit. */
export function owePurgeRedis(db: Executor, flids: string[], now: Date): Promise<number> {
  return pgRun(db, owePurgeRedisStatement, flids, now);
}

const purgeDeleteStatement = pgStatement<[flids: string[], versions: number[]]>(
  'flight.purge_delete',
  `delete from flight_schd f using unnest($1::text[], $2::integer[]) as u(flid, v)
   where f.flid = u.flid and f.state_version = u.v`,
);
/** Deletes the flights $1 still at the versions $2 (their detail rows go too: sql/migrations/0950_child_rows_per_statement.sql). */
export function purgeDelete(db: Executor, flids: string[], versions: number[]): Promise<number> {
  return pgRun(db, purgeDeleteStatement, flids, versions);
}

const forgetPurgeRedisStatement = pgStatement<[flids: string[]]>('flight.forget_purge_redis', 'delete from flight_purge_redis where flid = any($1::text[])');
/** Forgets the owed Redis keys of the FLIDs $1. */
export function forgetPurgeRedis(db: Executor, flids: string[]): Promise<number> {
  return pgRun(db, forgetPurgeRedisStatement, flids);
}

const purgeRedisOwedStatement = pgStatement<[], { flid: string; live: boolean }>(
  'flight.purge_redis_owed',
  `select p.flid, exists (select 1 from flight_schd f where f.flid = p.flid and f.state = 'ACTIVE') as live
   from flight_purge_redis p order by p.flid limit 10000`,
);
/** Owed Redis keys (at most 10,000, FLID order); live: the FLID is ACTIVE again. */
export function listPurgeRedisOwed(db: Executor): Promise<RowOf<typeof purgeRedisOwedStatement>[]> {
  return pgRows(db, purgeRedisOwedStatement);
}

const withoutOperationDayCountStatement = pgStatement<[before: Date], { n: number }>(
  'flight.without_operation_day_count',
  `select count(*)::int as n from flight_schd
   where operation_day is null and state = 'ACTIVE' and updated_at < $1::timestamptz`,
);
/** ACTIVE flights with no operation day, untouched since before $1: how many. */
export function countWithoutOperationDay(db: Executor, before: Date): Promise<RowOf<typeof withoutOperationDayCountStatement> | undefined> {
  return pgOne(db, withoutOperationDayCountStatement, before);
}

// ---- lib/lifecycle/trace-records.ts

const purgeChangesBeforeStatement = pgStatement<[cutoff: Date, batch: number]>(
  'flight.purge_changes_before',
  `delete from flight_change where ctid = any(array(
     select ctid from flight_change where created_at < $1::timestamptz order by created_at limit $2))`,
);
/** Deletes up to $2 FLIGHT_CHANGE rows created before $1, oldest first (the retention job's batch). */
export function purgeChangesBefore(db: Executor, cutoff: Date, batch: number): Promise<number> {
  return pgRun(db, purgeChangesBeforeStatement, cutoff, batch);
}
