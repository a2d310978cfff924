// R10, Kafka: the real worker processes on a three-broker KRaft cluster of the script's own
// (scripts/topology/kafka.ts, state in .local/r10-kafka-workers/; the gateway provisions its
// topics with replication factor 3 and min.insync.replicas 2). A 200-flight snapshot, then a third
// of the FLOPs at a steady rate during each phase (a quarter of the rate in (b)): (a) the broker leading the most partitions
// SIGKILLed, restarted 15 s later; (b) a rolling restart (SIGTERM, start, every replica back in
// sync before the next); (c) two brokers SIGKILLed for 60 s (below min ISR): dispatch holds without
// counting attempts, then resumes (target ≤ 10 s after both are back in the cluster). At the end:
// every msg event on Kafka, in order per FLID, nothing DEAD, the state topic compacted and its
// last record per key equal to the flight. Prints JSON with the seconds of each phase.
//   node scripts/reliability/r10-kafka-cluster.ts [flops=1200] [rate=20]
import { resolve } from 'node:path';
import kafkajs from '../../lib/db/kafkajs.ts';
import { sql } from 'kysely';
import { freePort } from '../../test/support/ports.ts';
import { scriptHelp } from '../args.ts';
import { allInSync, leaderCounts, nodesAnswering, startKafkaCluster } from '../topology/kafka.ts';
import { DRILL_WORKERS, drained, feedSnapshot, finalState, logTails, log, longestSendPause, machine, openRig, resumedAfter, sleep, stateTopicDifferences, waitFor, type Rig } from './harness.ts';

scriptHelp(import.meta.url);
const FLOPS = Number(process.argv[2] ?? 1200);
const RATE = Number(process.argv[3] ?? 20);
const FLIGHTS = 200;
const DOWN_S = 60;
const TARGET_S = 10;

const cluster = startKafkaCluster(resolve('.local/r10-kafka-workers'), { brokers: [await freePort(), await freePort(), await freePort()] });
const adminOf = (brokers: string[]) => new kafkajs.Kafka({ clientId: 'r10-kafka', brokers, logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 0 } }).admin();
const admin = adminOf(cluster.brokers.split(','));
await waitFor('three brokers in the cluster', () => nodesAnswering(cluster.nodes), 180_000, 1000);
await admin.connect();
const rig = await openRig({ MSGX_LOG_LEVEL: 'warn', MSGX_IO_TIMEOUT: '5s' }, { kafkaBrokers: cluster.brokers });
const topics = Object.values(rig.topics);
const node = (id: number) => cluster.nodes.find((n) => n.id === id)!;
const secondsSince = (t: number) => Math.round((Date.now() - t) / 100) / 10;
/** Seconds from `t` until every replica is in sync again. */
const inSyncAfter = async (t: number) => (await waitFor('every replica in sync', () => allInSync(admin, topics), 300_000, 500), secondsSince(t));
/** Seconds from `t` until msg-dispatch sends again (null: not within 5 minutes). */
const sendsAfter = async (t: number) => {
  await waitFor('msg events sent', async () => (await resumedAfter(rig.db, t)).msg !== null, 300_000, 200).catch((e: Error) => log(e.message));
  return (await resumedAfter(rig.db, t)).msg;
};
const workerLogs = () => {
  logTails(rig);
};
const attempts = async (db: Rig['db']) =>
  (await sql<{ attempts: number; dead: number }>`select coalesce(sum(attempts), 0)::int attempts, count(*) filter (where state = 'DEAD')::int dead from msg_event where target = 'msg'`.execute(db))
    .rows[0];
const started = new Date().toISOString();
const third = Math.floor(FLOPS / 3);
try {
  for (const name of DRILL_WORKERS) rig.start(name);
  await feedSnapshot(rig, FLIGHTS);
  await waitFor('the snapshot', () => drained(rig.db, 1), 180_000);
  await inSyncAfter(Date.now());

  // (a) the broker leading the most partitions SIGKILLed, restarted 15 s later
  let feeding = rig.feed(third, 0, FLIGHTS, RATE);
  await sleep(5000);
  const victim = [...(await leaderCounts(admin, topics))].sort((x, y) => y[1] - x[1])[0][0];
  node(victim).kill();
  const killed = Date.now();
  log(`(a) broker ${victim} SIGKILLed`);
  await sleep(15_000);
  node(victim).start();
  const aRestarted = Date.now();
  const [aSent, aInSync] = await Promise.all([sendsAfter(killed), inSyncAfter(aRestarted)]);
  const a = { broker: victim, restartedAfterKill: Math.round((aRestarted - killed) / 100) / 10, msgSentAfterKill: aSent, inSyncAfterRestart: aInSync };
  await feeding;
  log(`(a) ${JSON.stringify(a)}`);

  // (b) a rolling restart, one broker at a time
  feeding = rig.feed(third, third, FLIGHTS, RATE / 4); // slower: flowing through the three restarts
  const b: { broker: number; inSyncAfterStop: number; longestMsgPause: number | null }[] = [];
  for (const n of cluster.nodes) {
    const t = Date.now();
    await n.stop();
    n.start();
    const inSync = await inSyncAfter(t);
    b.push({ broker: n.id, inSyncAfterStop: inSync, longestMsgPause: await longestSendPause(rig.db, t, Date.now()) });
  }
  await feeding;
  log(`(b) ${JSON.stringify(b)}`);

  // (c) two brokers down for 60 s: below min.insync.replicas
  feeding = rig.feed(FLOPS - 2 * third, 2 * third, FLIGHTS, RATE);
  await sleep(5000);
  const down = cluster.nodes.filter((n) => n.id !== victim).slice(0, 2);
  const before = await attempts(rig.db);
  for (const n of down) n.kill();
  const downAt = Date.now();
  log(`(c) brokers ${down.map((n) => n.id)} SIGKILLed`);
  await sleep(DOWN_S * 1000);
  const after = await attempts(rig.db);
  const sentWhileDown = (await sql<{ n: number }>`select count(*)::int n from msg_event where sent_at >= to_timestamp(${downAt + 10_000}::float8 / 1000)`.execute(rig.db)).rows[0].n;
  for (const n of down) n.start();
  const startedAt = Date.now();
  await waitFor('both brokers answering', () => nodesAnswering(down), 180_000, 200);
  const back = secondsSince(startedAt);
  const sends = await sendsAfter(startedAt);
  const c = {
    brokers: down.map((n) => n.id),
    downS: DOWN_S,
    attemptsCounted: after.attempts - before.attempts,
    deadWhileDown: after.dead,
    sentWhileDown,
    brokersBackAfterStart: back,
    msgSentAfterBack: sends === null ? null : Math.round((sends - back) * 10) / 10,
    inSyncAfterStart: await inSyncAfter(startedAt),
  };
  log(`(c) ${JSON.stringify(c)}`);
  await feeding;

  await waitFor('drained', () => drained(rig.db, FLOPS + 1), 10 * 60_000);
  const final = await finalState(rig);
  const stateTopic = await stateTopicDifferences(rig);
  const ok =
    final.messages === FLOPS + 1 &&
    final.deadMessages + final.deadEvents === 0 &&
    final.kafka.missingEvents === 0 &&
    final.kafka.orderViolations === 0 &&
    c.attemptsCounted === 0 &&
    c.msgSentAfterBack !== null &&
    c.msgSentAfterBack <= TARGET_S &&
    stateTopic.cleanupPolicy === 'compact' &&
    stateTopic.differing.length === 0;
  const seconds = { a, b, c };
  console.log(
    JSON.stringify(
      {
        run: 'R10-kafka-workers',
        started,
        machine: machine(),
        flops: FLOPS,
        ratePerS: RATE,
        flights: FLIGHTS,
        seconds,
        stateTopic: { ...stateTopic, differing: stateTopic.differing.length },
        final,
        ok,
      },
      null,
      2,
    ),
  );
  if (!ok) workerLogs();
  process.exitCode = ok ? 0 : 1;
} catch (e) {
  workerLogs();
  throw e;
} finally {
  await rig.close().catch(() => {});
  await admin.disconnect().catch(() => {});
  cluster.stop();
}
