// The scratch database of `npm run dry-run` (docs/operations.md "Trying a rule change"): never the
// live one, never a database that holds anything but a new, empty msgexchange schema; nothing is
// written anywhere else (no inbox mark, no Redis, no Kafka).
import { withTimeout } from '../core/timeout.ts';
import type { Db } from '../db/postgres.ts';
import * as Shadow from '../sql/shadow.ts';
import { CannotCompare } from './collect.ts';

/** Before migrating: the scratch is not the live database and holds no foreign tables. */
export async function checkScratchBeforeMigrate(scratch: Db, live: Db, timeoutMs: number): Promise<void> {
  const [a] = await withTimeout(timeoutMs, 'scratch: identity', Shadow.readIdentity(scratch));
  const [b] = await withTimeout(timeoutMs, 'live: identity', Shadow.readIdentity(live));
  if (a.server === b.server && a.db === b.db) throw new CannotCompare('--database is the live database (DATABASE_URL): give a scratch database');
  const tables = (await withTimeout(timeoutMs, 'scratch: tables', Shadow.listPublicTables(scratch))).map((r) => r.t);
  if (tables.length && !tables.includes('pgmigrations')) throw new CannotCompare(`--database holds tables that are not msgexchange's (${tables.slice(0, 5).join(', ')}…): give an empty database`);
}

/** After migrating: nothing in it yet (a dry run's database is used once); then its start is set. */
export async function startScratch(scratch: Db, after: number, timeoutMs: number): Promise<void> {
  const [h] = await withTimeout(timeoutMs, 'scratch: holdings', Shadow.readHoldings(scratch));
  if (h.messages || h.flights || h.refs || Number(h.watermark) > 0) {
    throw new CannotCompare(`--database already holds ${h.messages} message(s), ${h.flights} flight(s): a dry run needs a new empty database (dropdb/createdb it again)`);
  }
  await withTimeout(timeoutMs, 'scratch: start', Shadow.startScratch(scratch, after));
}
