// Consistent reads of complete flight states: the main rows and every detail table loaded by
// FLID set in ONE statement (store.ts loadStates) — one statement is one snapshot, so a set of
// flights needs no explicit transaction; a page is one statement too (its FLIDs chosen and loaded
// together, store.ts loadPage). A fixed number of statements whatever the page size (no N+1).
// Used by the HTTP routes, the Redis mirror and the schd dispatcher.
import type { Db } from '../db/postgres.ts';
import { loadPage, loadStates, type Executor } from './store.ts';
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

/** One page of flights ordered by FLID, in one snapshot (one statement). */
export async function listFlights(db: Db, q: ListQuery, timeZone: string): Promise<FlightPage> {
  // One flight more than the page tells whether another page follows.
  const states = await loadPage(db, { day: q.operationDay ?? null, includeDeleted: q.includeDeleted === true, after: q.cursor ?? null, limit: q.limit + 1 }, timeZone);
  const more = states.length > q.limit;
  const flights = more ? states.slice(0, q.limit) : states;
  return { flights, nextCursor: more ? flights[flights.length - 1].FLID : null };
}
