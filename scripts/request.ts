// Operator CLI: ask the AODB for reference data or one operation day's schedule.
//   npx node scripts/request.ts rqrd <TYPE>          (npm run request -- rqrd SLST)
//   npx node scripts/request.ts rqfd <YYYY-MM-DD>    (npm run request -- rqfd 2026-12-01)
// Creates the request (expiring the open one of the same kind), writes it to COUTMSGS and prints
// the outcome as JSON. Exit code 1 when the insert could not be confirmed (it stays PENDING and is
// reconciled by the next run or the `request` task).
import mysql from 'mysql2/promise';
import { loadConfig } from '../lib/core/config.ts';
import { systemClock } from '../lib/core/clock.ts';
import { createDb, createPool } from '../lib/db/postgres.ts';
import { getRequest } from '../lib/requests/track.ts';
import { requestSettings } from '../lib/requests/outbound.ts';
import { runRequestTask } from '../lib/requests/tasks.ts';

const USAGE = 'usage: request rqrd <TYPE> | rqfd <YYYY-MM-DD>';

async function main(argv: string[]): Promise<number> {
  const [kind, arg] = argv;
  if (!kind || !arg || !['rqrd', 'rqfd'].includes(kind.toLowerCase())) {
    console.error(USAGE);
    return 2;
  }
  const payload = kind.toLowerCase() === 'rqrd' ? { type: 'RQRD', rtype: arg } : { type: 'RQFD', operationDay: arg };
  const config = loadConfig();
  const pool = createPool(config.DATABASE_URL, { max: 2, name: 'request-cli' });
  const db = createDb(pool);
  const outbox = mysql.createPool({ uri: config.INBOX_URL, connectionLimit: 1, connectTimeout: config['msgx.io.timeout'] });
  try {
    const { createdId, results } = await runRequestTask({ db, outbox, ...requestSettings(config), clock: systemClock }, payload);
    const request = createdId === undefined ? undefined : await getRequest(db, createdId);
    console.log(JSON.stringify({ request, results }, null, 2));
    return results.some((r) => r.id === createdId && (r.outcome === 'sent' || r.outcome === 'reconciled')) ? 0 : 1;
  } catch (e) {
    console.error(e instanceof Error ? e.message : e);
    return 1;
  } finally {
    await outbox.end();
    await db.destroy();
  }
}

process.exitCode = await main(process.argv.slice(2));
