// Consistent reads of complete flight states: the main rows and every detail table loaded by
// FLID set in ONE statement (store.ts loadStates) — one statement is one snapshot, so a set of
// flights needs no explicit transaction; a page (two statements that must agree) reads in one
// REPEATABLE READ (read-only) transaction. A fixed number of queries whatever the page size (no
// N+1). Used by the HTTP routes, the Redis mirror and the schd dispatcher.
import type { Db } from '../db/postgres.ts';
import { pgRows } from '../db/statement.ts';
import * as Flight from '../sql/flight.ts';
import { loadStates, type Executor } from './store.ts';
import type { FlightState } from './state.ts';

/** Complete states of these FLIDs, read in one snapshot (one statement). */
export async function readFlights(db: Executor, flids: readonly string[], timeZone: string): Promise<Map<string, FlightState>> {
  if (flids.length === 0) return new Map();
  return loadStates(db, flids, timeZone);
}

export interface ListQuery {
  operationDay?: string;
  /** Exclusive: FLIDs after this one (text order). */
  cursor?: string;
  limit: number;
  includeDeleted?: boolean;
}

export interface FlightPage {
  flights: FlightState[];
  /** FLID to pass as cursor for the next page; null on the last page. */
  nextCursor: string | null;
}

/** One page of flights ordered by FLID, in one snapshot. */
export async function listFlights(db: Db, q: ListQuery, timeZone: string): Promise<FlightPage> {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (tx) => {
      const after = q.cursor ?? null;
      const includeDeleted = q.includeDeleted === true;
      const rows = q.operationDay ? await pgRows(tx, Flight.pageOfDay, q.operationDay, includeDeleted, after, q.limit + 1) : await pgRows(tx, Flight.page, includeDeleted, after, q.limit + 1);
      const ids = rows.map((x) => x.flid);
      const more = ids.length > q.limit;
      const page = more ? ids.slice(0, q.limit) : ids;
      const states = await loadStates(tx, page, timeZone);
      return { flights: page.map((f) => states.get(f)!).filter(Boolean), nextCursor: more ? page[page.length - 1] : null };
    });
}
