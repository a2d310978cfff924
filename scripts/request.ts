// Operator CLI: ask the AODB for reference data or one operation day's schedule, and look up
// what became of requests.   (--help: usage)
//   npm run request -- rqrd SLST | rqfd 2026-12-01 | show <id> | list [--state S] [--limit N]
// rqrd/rqfd create the request (expiring the open one of the same kind), write it to COUTMSGS
// and print the outcome as JSON; exit 1 when the insert could not be confirmed (it stays
// PENDING and is reconciled by the next run or the `request` task).
import { cliArgs, cliConfig, failureLine, reach, usageExit, type CliSpec } from './args.ts';

const STATES = ['PENDING', 'SENT', 'DONE', 'EXPIRED', 'FAILED'];
const spec: CliSpec = {
  name: 'request',
  positional: 'words',
  valued: ['--state', '--limit'],
  usage: `usage: npm run request -- rqrd <TYPE> | rqfd <YYYY-MM-DD> | show <id> | list [--state S] [--limit N]
  rqrd <TYPE>        ask the AODB for one reference data type (e.g. SLST)
  rqfd <YYYY-MM-DD>  ask the AODB for one operation day's schedule
  show <id>          what became of request <id>: PENDING, SENT, DONE, EXPIRED or FAILED,
                     with its times and, for FAILED, the AODB's error text (JSON)
  list               the newest requests (JSON), newest first
  --state S          with list: only PENDING, SENT, DONE, EXPIRED or FAILED
  --limit N          with list: at most N (default 20)
Exit 0 on success; 1 when a new request's insert was not confirmed, show finds no such
request, or a service refused or did not answer; 2 on bad arguments or a bad setting.`,
};

const a = cliArgs(spec);
const [cmd, arg, ...rest] = a.words;
const kind = cmd?.toLowerCase();
if (!kind || !['rqrd', 'rqfd', 'show', 'list'].includes(kind)) usageExit(spec, cmd ? `unknown command ${cmd} (rqrd, rqfd, show, list)` : 'give a command: rqrd, rqfd, show or list');
if (rest.length || (kind === 'list' ? arg !== undefined : arg === undefined)) usageExit(spec, `${kind} ${kind === 'list' ? 'takes no argument' : 'takes exactly one argument'}`);
if (kind !== 'list' && (a.options['--state'] || a.options['--limit'])) usageExit(spec, '--state and --limit go with list');
if (kind === 'show' && !/^\d+$/.test(arg)) usageExit(spec, `show needs a request id (a whole number), not ${arg}`);
const state = a.options['--state'];
if (state !== undefined && !STATES.includes(state)) usageExit(spec, `--state must be one of ${STATES.join(', ')}, not ${state}`);
const limit = a.options['--limit'] === undefined ? 20 : Number(a.options['--limit']);
if (!Number.isInteger(limit) || limit < 1 || limit > 500) usageExit(spec, `--limit must be a whole number from 1 to 500, not ${a.options['--limit']}`);

const { targets } = await import('../lib/core/config.ts');
const { mysqlTarget } = await import('../lib/db/mysql.ts');
const { systemClock } = await import('../lib/core/clock.ts');
const { createDb, createPool } = await import('../lib/db/postgres.ts');
const { getRequest, listRequests, requestView } = await import('../lib/requests/track.ts');

const config = await cliConfig(spec.name);
await reach(spec.name, config, kind === 'rqrd' || kind === 'rqfd' ? ['postgres', 'mariadb'] : ['postgres']);

async function main(): Promise<number> {
  const pool = createPool(targets(config).postgres, { max: 2, name: 'request-cli' });
  const db = createDb(pool);
  try {
    if (kind === 'show') {
      const r = await getRequest(db, Number(arg));
      if (!r) {
        console.error(`request: no request ${arg} (never made, or removed by retention)`);
        return 1;
      }
      console.log(JSON.stringify(requestView(r), null, 2));
      return 0;
    }
    if (kind === 'list') {
      const rows = await listRequests(db, { state: state as import('../lib/requests/track.ts').RequestState | undefined, limit });
      console.log(JSON.stringify(rows.map(requestView), null, 2));
      return 0;
    }
    const mysql = (await import('mysql2/promise')).default;
    const { requestSettings } = await import('../lib/requests/outbound.ts');
    const { runRequestTask } = await import('../lib/requests/tasks.ts');
    const payload = kind === 'rqrd' ? { type: 'RQRD', rtype: arg } : { type: 'RQFD', operationDay: arg };
    const outbox = mysql.createPool({ ...mysqlTarget(targets(config).mariadb), connectionLimit: 1, connectTimeout: config['msgx.io.timeout'] });
    try {
      const { createdId, results } = await runRequestTask({ db, outbox, ...requestSettings(config), clock: systemClock }, payload);
      const request = createdId === undefined ? undefined : await getRequest(db, createdId);
      console.log(JSON.stringify({ request, results }, null, 2));
      return results.some((r) => r.id === createdId && (r.outcome === 'sent' || r.outcome === 'reconciled')) ? 0 : 1;
    } finally {
      await outbox.end();
    }
  } catch (e) {
    console.error(`request: ${failureLine(e)}`);
    return 1;
  } finally {
    await pool.end();
  }
}

process.exitCode = await main();
