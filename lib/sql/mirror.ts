// SQL of the Redis mirror's check (lib/watches/redis.ts): what Redis should hold, as
// numbers. Statement conventions: lib/db/statement.ts.
import { type Executor, pgRows, pgStatement, type RowOf } from '../db/statement.ts';

const flightVersionsStatement = pgStatement<[], { flid: string; state: 'ACTIVE' | 'DELETED'; state_version: number }>('mirror.flight_versions', 'select flid, state, state_version from flight_schd');
/** Every flight's state and STATE_VERSION (ACTIVE: Redis holds this version; DELETED: no key). */
export function readFlightVersions(db: Executor): Promise<RowOf<typeof flightVersionsStatement>[]> {
  return pgRows(db, flightVersionsStatement);
}
