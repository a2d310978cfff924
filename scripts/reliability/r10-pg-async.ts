// R10, Postgres with an asynchronous standby that misses the last commits: a primary + standby of
// the script's own (scripts/topology/postgres.ts, state in .local/r10-pg/); the real worker
// processes reach Postgres through the fault proxy standing in for a virtual IP. A snapshot and
// 600 FLOPs are applied and replicated; the standby then stops receiving WAL (primary_conninfo
// emptied), 300 more FLOPs are applied on the primary only (Redis, Kafka and the inbox see them),
// the primary is SIGKILLed, the standby promoted, the virtual IP moved. Measured: seconds until
// the gateway reports Postgres behind (/healthz 503 `postgres-behind`), then `npm run
// recover-restore`, 300 more FLOPs, and the final state (its digests are compared with
// `npm run reliability:r10-redis -- 1200 40 none`, the same messages without a fault). Prints JSON.
//   node scripts/reliability/r10-pg-async.ts
// REL_KAFKA_EXISTING=1: fresh topics on the broker already answering on REL_KAFKA_PORT (never stopped).
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { createPool } from '../../lib/db/postgres.ts';
import { createQueryDb } from '../../lib/db/kysely.ts';
import { freePort } from '../../test/support/ports.ts';
import { scriptHelp } from '../args.ts';
import { startPgPair } from '../topology/postgres.ts';

scriptHelp(import.meta.url);
const FLIGHTS = 200;
const pair = startPgPair(resolve('.local/r10-pg'), { primary: await freePort(), standby: await freePort() }, false);
pair.primary.psql('create database msgx_r10');
process.env.REL_DATABASE_URL = pair.primary.url('msgx_r10'); // read by the harness when it loads
const { DRILL_WORKERS, drained, feedSnapshot, finalState, log, logTails, machine, openRig, waitFor } = await import('./harness.ts');
const rig = await openRig({ MSGX_LOG_LEVEL: 'warn', MSGX_IO_TIMEOUT: '5s' }, { existingKafka: process.env.REL_KAFKA_EXISTING === '1' });
const standbyPool = createPool(pair.standby.url('msgx_r10'), { max: 2, name: 'r10-standby' });
const started = new Date().toISOString();
try {
  for (const name of DRILL_WORKERS) rig.start(name);
  await feedSnapshot(rig, FLIGHTS);
  await rig.feed(600, 0, FLIGHTS, 40);
  await waitFor('600 FLOPs', () => drained(rig.db, 601), 300_000);
  const lsn = pair.primary.psql('select pg_current_wal_lsn()');
  await waitFor('the standby replayed them', async () => pair.standby.psql(`select pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn`) === 't', 60_000);
  pair.standby.psql("alter system set primary_conninfo = ''");
  pair.standby.psql('select pg_reload_conf()');
  await waitFor('the standby stopped receiving', async () => pair.standby.psql('select count(*) from pg_stat_wal_receiver') === '0', 30_000);
  await rig.feed(300, 600, FLIGHTS, 40);
  await waitFor('300 FLOPs on the primary only', () => drained(rig.db, 901), 300_000);
  pair.primary.kill();
  pair.standby.promote();
  rig.proxies.pg.moveTo({ port: pair.standby.port });
  const moved = Date.now();
  log('primary SIGKILLed, standby promoted, virtual IP moved');
  const pump = rig.workers.find((w) => w.name === 'pump')!;
  await waitFor(
    'postgres-behind',
    async () => {
      const r = await fetch(`http://127.0.0.1:${pump.port}/healthz`, { signal: AbortSignal.timeout(3000) });
      return r.status === 503 && (await r.text()).includes('postgres-behind');
    },
    120_000,
  );
  const behindS = (Date.now() - moved) / 1000;
  const rec = await promisify(execFile)(process.execPath, ['scripts/recover-restore.ts'], { env: { ...process.env, ...rig.env }, timeout: 120_000 });
  log(`recover-restore: ${`${rec.stdout}${rec.stderr}`.trim().split('\n').slice(-4).join(' | ')}`);
  const recovered = Date.now();
  await rig.feed(300, 900, FLIGHTS, 40);
  const db = createQueryDb(standbyPool);
  await waitFor('drained', () => drained(db, 1201), 600_000);
  const drainedS = (Date.now() - recovered) / 1000;
  const final = await finalState({ ...rig, db });
  // the lost versions are published again under new EVENT_IDs (orderViolations counts them)
  const ok = final.deadMessages + final.deadEvents === 0 && final.kafka.missingEvents === 0 && final.kafka.differingRepublished === 0 && final.messages === 1201;
  console.log(JSON.stringify({ run: 'R10-pg-async', started, machine: machine(), seconds: { postgresBehind: behindS, drainedAfterRecover: drainedS }, final, ok }, null, 2));
  process.exitCode = ok ? 0 : 1;
} catch (e) {
  logTails(rig);
  throw e;
} finally {
  await rig.close().catch(() => {});
  await standbyPool.end();
  pair.stop();
}
