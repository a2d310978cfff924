#!/usr/bin/env node
// Real kafkajs round trip against the local broker, exercising every protocol
// path the gateway relies on (see scripts/kafka/README.md for why this matters):
//   admin     describeCluster, createTopics, fetchTopicMetadata, fetchTopicOffsets,
//             fetchOffsets, describeGroups, deleteTopics
//   producer  acks=-1 (plain, as the dispatchers use it), GZIP batch, a ~300 KB record,
//             and the idempotent producer
//   consumer  consumer group: join/sync/heartbeat, fetch, offset commit; a second
//             member of the same group resumes exactly at the committed offsets
//
//   npx node scripts/kafka/check.mjs          full round trip (exit 0 = ok)
//   npx node scripts/kafka/check.mjs --ping   one metadata request only (used by scripts/services)
//
// Broker: KAFKA_BROKERS (comma list) or 127.0.0.1:${KAFKA_PORT:-9092}.
import { randomUUID } from 'node:crypto';
import kafkajs from '../../lib/db/kafkajs.ts';

const { CompressionTypes, ConfigResourceTypes, Kafka, logLevel } = kafkajs;

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

const brokers = (process.env.KAFKA_BROKERS ?? `127.0.0.1:${process.env.KAFKA_PORT ?? '9092'}`).split(',');
const pingOnly = process.argv.includes('--ping');
const timeoutMs = Number(process.env.CHECK_TIMEOUT_MS ?? (pingOnly ? 5000 : 60000));

const kafka = new Kafka({
  clientId: 'msgx-kafka-check',
  brokers,
  logLevel: pingOnly ? logLevel.NOTHING : logLevel.WARN,
  connectionTimeout: 3000,
  retry: { retries: pingOnly ? 0 : 8 },
});

const log = (line) => console.log(`check: ${line}`);
const assert = (cond, what) => { if (!cond) throw new Error(`assertion failed: ${what}`); };

async function ping() {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.describeCluster();
  } finally {
    await admin.disconnect();
  }
}

/** Consume with a fresh member of `groupId` until `expected` values arrived; commits on stop. */
async function consumeAll(groupId, topic, expected) {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000 });
  const got = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise((resolve, reject) => {
      consumer.on(consumer.events.CRASH, (e) => reject(e.payload.error));
      consumer.run({
        eachMessage: async ({ message }) => {
          got.push(message.value.toString());
          if (got.length >= expected.length) resolve();
        },
      }).catch(reject);
    });
  } finally {
    await consumer.disconnect(); // commits the resolved offsets
  }
  const want = new Set(expected);
  assert(got.length === expected.length && got.every((v) => want.has(v)),
    `consumer group ${groupId} got ${got.length} of ${expected.length} expected messages (or unexpected ones)`);
  return got;
}

const batch = (tag, n) => Array.from({ length: n }, (_, i) => ({ key: `flid-${i}`, value: `${tag}-${i}` }));
const sum = (parts) => parts.reduce((acc, p) => acc + Number(p.offset), 0);

async function roundTrip() {
  const topic = `msgx-check-${randomUUID()}`;
  const groupId = `msgx-check-${randomUUID()}`;
  const admin = kafka.admin();
  const producer = kafka.producer();
  // kafkajs wants unlimited retries for the idempotent producer; the overall timer bounds them.
  const idempotent = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
  let deleted = false;
  await admin.connect();
  try {
    const cluster = await admin.describeCluster();
    log(`describeCluster ok: brokers ${cluster.brokers.map((b) => `${b.nodeId}@${b.host}:${b.port}`).join(',')}, controller ${cluster.controller}`);

    assert(await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }], waitForLeaders: true }), 'topic created');
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    log(`createTopics + fetchTopicMetadata ok: ${topic} (${meta.topics[0].partitions.length} partitions)`);

    await producer.connect();
    const first = batch('a', 12);
    const acks = await producer.send({ topic, acks: -1, messages: first });
    log(`produce ok (acks=-1): ${acks.map((r) => `p${r.partition}@${r.baseOffset}`).join(' ')}`);
    const big = { key: 'flid-big', value: `big-${'x'.repeat(300 * 1024)}` };
    await producer.send({ topic, acks: -1, compression: CompressionTypes.GZIP, messages: [...batch('gz', 5), big] });
    log('produce ok (acks=-1, GZIP, one ~300 KB record)');
    await idempotent.connect();
    await idempotent.send({ topic, acks: -1, messages: batch('idem', 3) });
    log('produce ok (idempotent producer, InitProducerId)');

    const total = 12 + 6 + 3;
    const ends = await admin.fetchTopicOffsets(topic);
    assert(sum(ends) === total, `high watermarks add up to ${total} (got ${sum(ends)})`);
    log(`fetchTopicOffsets (ListOffsets) ok: high watermarks sum ${sum(ends)}`);

    const expected1 = [...first, ...batch('gz', 5), big, ...batch('idem', 3)].map((m) => m.value);
    await consumeAll(groupId, topic, expected1);
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    assert(sum(committed[0].partitions) === total, `committed offsets add up to ${total} (got ${sum(committed[0].partitions)})`);
    log(`consumer group ok: ${expected1.length} messages, committed offsets sum ${total} (OffsetCommit/OffsetFetch)`);

    const second = batch('b', 4);
    await producer.send({ topic, acks: -1, messages: second });
    await consumeAll(groupId, topic, second.map((m) => m.value));
    log('consumer group resume ok: a new member read only the 4 messages after the committed offsets');

    const groups = await admin.describeGroups([groupId]);
    log(`describeGroups ok: ${groups.groups[0].groupId} state=${groups.groups[0].state} protocolType=${groups.groups[0].protocolType}`);

    const configs = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic }] });
    const maxBytes = configs.resources[0].configEntries.find((e) => e.configName === 'max.message.bytes');
    log(`describeConfigs ok: max.message.bytes=${maxBytes?.configValue}`);

    await admin.deleteTopics({ topics: [topic] });
    deleted = true;
    log('deleteTopics ok');
  } finally {
    await idempotent.disconnect().catch(() => {});
    await producer.disconnect().catch(() => {});
    if (!deleted) await admin.deleteTopics({ topics: [topic] }).catch(() => {});
    await admin.disconnect().catch(() => {});
  }
}

const timer = setTimeout(() => {
  console.error(`check: timed out after ${timeoutMs} ms (brokers ${brokers.join(',')})`);
  process.exit(2);
}, timeoutMs);

try {
  if (pingOnly) await ping();
  else await roundTrip();
  if (!pingOnly) log('OK');
  clearTimeout(timer);
  process.exit(0);
} catch (err) {
  console.error(`check: FAILED: ${err?.name ?? 'Error'}: ${err?.message ?? err}`);
  if (err?.type) console.error(`  kafka error type: ${err.type}`);
  process.exit(1);
}
