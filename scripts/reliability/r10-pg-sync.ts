// R10, Postgres with a synchronous standby: a primary + standby of the script's own
// (scripts/topology/postgres.ts, state in .local/r10-pg-sync/, synchronous_standby_names set);
// the real worker processes reach Postgres through the fault proxy standing in for a virtual IP
// (`vip`) or through a host-list DATABASE_URL (`hosts`: standby,primary with
// target_session_attrs=read-write, lib/db/pg-hosts.ts). A 200-flight snapshot, then FLOPs at a
// steady rate; after a third of them the primary's postmaster is SIGKILLed, the standby promoted
// (and, for `vip`, the IP moved). Measured: seconds from the promote until intake, pump, backfill
// and each dispatcher make progress again (target ≤ 15 s). At the end: every message terminal,
// none lost (no `postgres-behind`: the standby has every acknowledged commit), every msg event on
// Kafka in order per FLID, nothing DEAD, the flight digest equal to the `none` run (the same
// messages without a fault, as `npm run reliability:r10-redis -- 1200 40 none`). Prints JSON.
//   node scripts/reliability/r10-pg-sync.ts [vip|hosts|none] [flops=1200] [rate=40]
// REL_KAFKA_EXISTING=1: fresh topics on the broker already answering on REL_KAFKA_PORT (never stopped).
import { resolve } from 'node:path';
import { createPool } from '../../lib/db/postgres.ts';
import { createQueryDb } from '../../lib/db/kysely.ts';
import { freePort } from '../../test/support/ports.ts';
import { scriptHelp } from '../args.ts';
import { startPgPair } from '../topology/postgres.ts';
import { DRILL_WORKERS, drained, feedSnapshot, finalState, logTails, log, machine, openRig, resumedAfter, sleep, waitFor, type Stage } from './harness.ts';

scriptHelp(import.meta.url);
const MODE = process.argv[2] ?? 'vip';
if (!['vip', 'hosts', 'none'].includes(MODE)) throw new Error(`mode ${MODE}: vip, hosts or none`);
const FLOPS = Number(process.argv[3] ?? 1200);
const RATE = Number(process.argv[4] ?? 40);
const FLIGHTS = 200;
const TARGET_S = 15;

const pair = startPgPair(resolve('.local/r10-pg-sync'), { primary: await freePort(), standby: await freePort() }, true);
pair.primary.psql('create database msgx_r10');
const hosts: Record<string, string> = MODE === 'hosts' ? { DATABASE_URL: pair.hostListUrl('msgx_r10') } : {};
const rig = await openRig({ MSGX_LOG_LEVEL: 'warn', MSGX_IO_TIMEOUT: '5s', ...hosts }, { pg: pair.primary.url('msgx_r10'), existingKafka: process.env.REL_KAFKA_EXISTING === '1' });
const standbyPool = createPool(pair.standby.url('msgx_r10'), { max: 2, name: 'r10-standby' });
const started = new Date().toISOString();
try {
  for (const name of DRILL_WORKERS) rig.start(name);
  await feedSnapshot(rig, FLIGHTS);
  await waitFor('the snapshot', () => drained(rig.db, 1), 180_000);
  const feeding = rig.feed(FLOPS, 0, FLIGHTS, RATE);
  await sleep((FLOPS / RATE / 3) * 1000); // a third of the FLOPs in
  const sync = pair.primary.psql("select sync_state from pg_stat_replication where application_name = 'msgx_standby'");
  let db = rig.db;
  let resumed: Record<Stage, number | null> | null = null;
  let slowest = 0;
  if (MODE !== 'none') {
    pair.primary.kill();
    pair.standby.promote();
    const promoted = Date.now();
    if (MODE === 'vip') rig.proxies.pg.moveTo({ port: pair.standby.port });
    log(`primary SIGKILLed (its standby ${sync}), standby promoted${MODE === 'vip' ? ', virtual IP moved' : ''}`);
    db = createQueryDb(standbyPool);
    // schd: only if a FLOP changed a schedule field (REMC and ESTT do not), so not waited for
    const waited = ['intake', 'pump', 'backfill', 'msg', 'state'] as const;
    const all = async () => {
      resumed = await resumedAfter(db, promoted);
      return waited.every((s) => resumed?.[s] !== null);
    };
    await waitFor('every worker making progress', all, 120_000, 200).catch((e: Error) => log(e.message));
    resumed = await resumedAfter(db, promoted);
    slowest = Math.max(...waited.map((s) => resumed![s] ?? Number.POSITIVE_INFINITY));
    log(`progress after the promote (s): ${JSON.stringify(resumed)}`);
  }
  await feeding;
  await waitFor('drained', () => drained(db, FLOPS + 1), 10 * 60_000);
  const pump = rig.workers.find((w) => w.name === 'pump')!;
  const health = await fetch(`http://127.0.0.1:${pump.port}/healthz`, { signal: AbortSignal.timeout(5000) }).then(async (r) => `${r.status} ${await r.text()}`);
  const final = await finalState({ ...rig, db });
  const ok =
    sync === 'sync' &&
    !health.includes('postgres-behind') &&
    final.messages === FLOPS + 1 &&
    final.deadMessages + final.deadEvents === 0 &&
    final.kafka.missingEvents === 0 &&
    final.kafka.orderViolations === 0 &&
    slowest <= TARGET_S;
  const fault = MODE === 'none' ? 'none' : `SIGKILL of the primary, synchronous standby promoted, reached by ${MODE === 'vip' ? 'the virtual IP (moved)' : 'a host-list DATABASE_URL'}`;
  const seconds = MODE === 'none' ? null : { afterPromote: resumed, slowest, target: TARGET_S };
  console.log(
    JSON.stringify({ run: 'R10-pg-sync', mode: MODE, fault, started, machine: machine(), flops: FLOPS, ratePerS: RATE, flights: FLIGHTS, standby: sync, seconds, health, final, ok }, null, 2),
  );
  process.exitCode = ok ? 0 : 1;
} catch (e) {
  logTails(rig);
  throw e;
} finally {
  await rig.close().catch(() => {});
  await standbyPool.end();
  pair.stop();
}
