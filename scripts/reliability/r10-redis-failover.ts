// R10, Redis: the real worker processes write their mirror through Sentinel (REDIS_SENTINELS; a
// primary, a replica and three Sentinels of the script's own, scripts/topology/redis.ts, state in
// .local/r10-redis/). A snapshot, then FLOPs flowing; the primary is SIGKILLed mid-stream and
// Sentinel promotes the replica. Measured: seconds from the kill until the mirror writes on the
// new primary, and until Redis = Postgres for every flight (the heal, lib/watches/redis.ts,
// writes what the replica missed). At the end: every message terminal, nothing DEAD, every SENT
// event on Kafka, per-FLID order. Prints JSON.
// `none` as the third argument: the same run without the kill (its flightDigest is the one a
// drill must end with).
//   node scripts/reliability/r10-redis-failover.ts [flops=1200] [rate=40] [kill|none]
// REL_KAFKA_EXISTING=1: fresh topics on the broker already answering on REL_KAFKA_PORT (never stopped).
import { resolve } from 'node:path';
import { resolveRedis, targetOf } from '../../lib/core/connections.ts';
import { mirrorVersions } from '../../lib/flight/mirror.ts';
import { createRedis } from '../../lib/db/redis.ts';
import { freePort } from '../../test/support/ports.ts';
import { SENTINEL_MASTER, startRedisSentinels } from '../topology/redis.ts';
import { scriptHelp } from '../args.ts';
import { DRILL_WORKERS, drained, feedSnapshot, finalState, logTails, log, machine, mirrorDifferences, openRig, sleep, waitFor } from './harness.ts';

scriptHelp(import.meta.url);
const FLOPS = Number(process.argv[2] ?? 1200);
const RATE = Number(process.argv[3] ?? 40);
const FAULT = process.argv[4] !== 'none';
const FLIGHTS = 200;

const set = startRedisSentinels(resolve('.local/r10-redis'), {
  primary: await freePort(),
  replica: await freePort(),
  sentinels: [await freePort(), await freePort(), await freePort()],
});
const sentinels = { REDIS_SENTINELS: set.sentinelList, REDIS_SENTINEL_MASTER: SENTINEL_MASTER };
// in Sentinel mode the URL's host is not used (the Sentinels name the master); its db is
const url = 'redis://127.0.0.1:1/0';
const mirror = createRedis(targetOf(resolveRedis(url, { sentinels: set.sentinelList, master: SENTINEL_MASTER })), 5000);
const replica = createRedis(`redis://127.0.0.1:${set.replica.port}/0`, 5000);
const rig = await openRig({ MSGX_LOG_LEVEL: 'warn', MSGX_IO_TIMEOUT: '5s', REDIS_URL: url, ...sentinels }, { existingKafka: process.env.REL_KAFKA_EXISTING === '1' });
const started = new Date().toISOString();
try {
  for (const name of DRILL_WORKERS) rig.start(name);
  await feedSnapshot(rig, FLIGHTS);
  await waitFor('the snapshot', () => drained(rig.db, 1), 180_000);
  const feeding = rig.feed(FLOPS, 0, FLIGHTS, RATE);
  await sleep((FLOPS / RATE / 3) * 1000); // a third of the FLOPs in
  const flids = Array.from({ length: FLIGHTS }, (_, i) => String(1 + i));
  await waitFor('the replica has the writes so far', async () => (await mirror.wait(1, 500)) === 1, 20_000);
  const killed = Date.now();
  const since = () => (Date.now() - killed) / 1000;
  let promoted = 0;
  let mirrorWrites = 0;
  if (FAULT) {
    set.primary.kill();
    log('Redis primary SIGKILLed');
    const sum = async () => (await mirrorVersions(replica, flids)).reduce((a, b) => a + b, 0);
    const atKill = await sum();
    await waitFor('the replica promoted', async () => /role:master/.test(await replica.info('replication')), 60_000, 100);
    promoted = since();
    await waitFor('the mirror writes on the new primary', async () => (await sum()) > atKill, 60_000, 100);
    mirrorWrites = since();
  }
  await feeding;
  await waitFor('drained', () => drained(rig.db, FLOPS + 1), 10 * 60_000);
  const sameS = await waitFor('Redis = Postgres', async () => (await mirrorDifferences(rig.db, mirror)).length === 0, 5 * 60_000, 500)
    .then(since)
    .catch(() => null);
  const final = await finalState(rig);
  const differences = (await mirrorDifferences(rig.db, mirror)).length;
  const ok =
    set.masterPort() === (FAULT ? set.replica.port : set.primary.port) &&
    differences === 0 &&
    final.deadMessages + final.deadEvents === 0 &&
    final.kafka.missingEvents === 0 &&
    final.kafka.orderViolations === 0 &&
    mirrorWrites < 10;
  const seconds = FAULT ? { promoted, mirrorWrites, redisEqualsPostgres: sameS } : null;
  console.log(
    JSON.stringify(
      { run: 'R10-redis', fault: FAULT ? 'SIGKILL of the Redis primary' : 'none', started, machine: machine(), flops: FLOPS, ratePerS: RATE, flights: FLIGHTS, seconds, differences, final, ok },
      null,
      2,
    ),
  );
  process.exitCode = ok ? 0 : 1;
} catch (e) {
  logTails(rig);
  throw e;
} finally {
  mirror.disconnect();
  replica.disconnect();
  await rig.close();
  set.stop();
}
