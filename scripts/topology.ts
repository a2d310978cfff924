// The local production-like topology (docs/operations.md "Production topology"), beside the
// single-node services `npm start` and `npm test` use: a three-broker KRaft Kafka cluster, a
// Postgres primary with a streaming standby (synchronous by default, --async for asynchronous)
// and a Redis primary + replica watched by three Sentinels. Own ports, state under
// .local/topology/; the machine's services are never touched. Run as scripts/services
// topology-up | topology-down | topology-status (or npm run topology -- up|down|status).
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import kafkajs from '../lib/db/kafkajs.ts';
import { withTimeout } from '../lib/core/timeout.ts';
import { cliArgs } from './args.ts';
import { existingKafkaCluster, startKafkaCluster, type KafkaPorts } from './topology/kafka.ts';
import { existingPgPair, startPgPair } from './topology/postgres.ts';
import { existingRedisSentinels, SENTINEL_MASTER, startRedisSentinels, type RedisPorts } from './topology/redis.ts';

const ROOT = fileURLToPath(new URL('../.local/topology', import.meta.url));
const PG = { primary: 15432, standby: 15433 };
const REDIS: RedisPorts = { primary: 16379, replica: 16380, sentinels: [26379, 26380, 26381] };
const KAFKA: KafkaPorts = { brokers: [19092, 19093, 19094] };

const SPEC = {
  name: 'topology',
  usage: `usage: npm run topology -- up [--async] | down | status
  up        start the Kafka cluster (19092-19094), Postgres primary 15432 + standby 15433
            (synchronous; --async: asynchronous) and Redis 16379 + replica 16380 + Sentinels
            26379-26381; prints the settings that point the gateway at them
  down      stop all of them (state kept under .local/topology/ until the next up)
  status    one line per service`,
  flags: ['--async'],
  positional: 'words',
} as const;
const args = cliArgs(SPEC);
const command = args.words[0];

async function kafkaBrokers(brokers: string): Promise<number> {
  const admin = new kafkajs.Kafka({ clientId: 'msgx-topology', brokers: brokers.split(','), logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 0 } }).admin();
  try {
    await withTimeout(5000, 'kafka connect', admin.connect());
    return (await withTimeout(5000, 'kafka describeCluster', admin.describeCluster())).brokers.length;
  } catch {
    return 0;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

function status(): boolean {
  const pg = existingPgPair(resolve(ROOT, 'postgres'), PG);
  const rd = existingRedisSentinels(resolve(ROOT, 'redis'), REDIS);
  const kf = existingKafkaCluster(resolve(ROOT, 'kafka'), KAFKA);
  const line = (what: string, ok: boolean, detail: string) => process.stdout.write(`${ok ? 'up  ' : 'DOWN'} ${what}: ${detail}\n`);
  const pgState = (n: typeof pg.primary) => (n.running() ? (n.psql('select pg_is_in_recovery()') === 't' ? 'standby' : 'primary') : 'stopped');
  line('postgres', pg.primary.running() || pg.standby.running(), `${PG.primary} ${pgState(pg.primary)}, ${PG.standby} ${pgState(pg.standby)}`);
  const master = rd.masterPort();
  line(
    'redis',
    master > 0,
    `master (per Sentinel) ${master || 'unknown'}; running: ${[rd.primary, rd.replica, ...rd.sentinels]
      .filter((n) => n.running())
      .map((n) => n.port)
      .join(' ')}`,
  );
  const live = kf.nodes.filter((n) => n.running());
  line('kafka', live.length > 0, `${live.length} of 3 broker processes running (${live.map((n) => n.port).join(' ')})`);
  return pg.primary.running() && master > 0 && live.length === 3;
}

if (command === 'up') {
  const sync = !args.flags.has('--async');
  const kf = startKafkaCluster(resolve(ROOT, 'kafka'), KAFKA);
  const pg = startPgPair(resolve(ROOT, 'postgres'), PG, sync);
  pg.primary.psql('create database msgx');
  const rd = startRedisSentinels(resolve(ROOT, 'redis'), REDIS);
  const end = Date.now() + 180_000;
  while ((await kafkaBrokers(kf.brokers)) < 3) {
    if (Date.now() > end) throw new Error('the Kafka cluster did not gather three brokers in 180 s (logs: .local/topology/kafka/node-*/server.log)');
    await new Promise((r) => setTimeout(r, 1000));
  }
  process.stdout.write(
    [
      `postgres: primary ${PG.primary}, ${sync ? 'synchronous' : 'asynchronous'} standby ${PG.standby}`,
      `redis: primary ${REDIS.primary}, replica ${REDIS.replica}, Sentinels ${REDIS.sentinels.join(' ')}`,
      `kafka: ${kf.brokers}`,
      'point the gateway at them:',
      `  DATABASE_URL='${pg.hostListUrl('msgx')}'`,
      `  REDIS_URL=redis://127.0.0.1:${REDIS.primary}/0 REDIS_SENTINELS=${rd.sentinelList} REDIS_SENTINEL_MASTER=${SENTINEL_MASTER}`,
      `  KAFKA_BROKERS=${kf.brokers}`,
      '',
    ].join('\n'),
  );
} else if (command === 'down') {
  existingRedisSentinels(resolve(ROOT, 'redis'), REDIS).stop();
  existingPgPair(resolve(ROOT, 'postgres'), PG).stop();
  existingKafkaCluster(resolve(ROOT, 'kafka'), KAFKA).stop();
  process.stdout.write('topology stopped\n');
} else if (command === 'status') {
  process.exitCode = status() ? 0 : 1;
} else {
  process.stderr.write(`topology: unknown command ${command ?? '(none)'}\n${SPEC.usage}\n`);
  process.exit(2);
}
