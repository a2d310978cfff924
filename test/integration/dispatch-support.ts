// Helpers of the dispatch integration tests: real Postgres (outbox rows written with the
// store's own writers), real Kafka (a fresh topic per test, a real kafkajs consumer reading it
// back), a loopback TCP server that accepts and never answers (the one fault real Kafka cannot
// produce on demand).
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import kafkajs from 'kafkajs';
import { sql } from 'kysely';
import { ManualClock, type Clock } from '../../lib/core/clock.ts';
import { createPool } from '../../lib/db/postgres.ts';
import { createQueryDb, type QueryDb } from '../../lib/db/kysely.ts';
import { createKafkaEdge, type KafkaEdge } from '../../lib/dispatch/kafka.ts';
import type { DispatchDeps } from '../../lib/dispatch/msg.ts';
import { insertMsgEvents } from '../../lib/flight/store.ts';
import { TEST_KAFKA, TEST_PG_URL, testConfig } from '../support/env.ts';
import { slices } from '../../lib/core/config.ts';
import { silentLog } from '../support/services.ts';

const { Kafka, logLevel } = kafkajs;

export const NOW = new Date('2026-12-01T00:00:00Z');

export function openDb(): { db: QueryDb; close: () => Promise<void> } {
  const pool = createPool(TEST_PG_URL, { max: 6, name: 'dispatch-test' });
  return { db: createQueryDb(pool), close: () => pool.end() };
}

export async function resetOutbox(db: QueryDb): Promise<void> {
  await sql`truncate msg_event`.execute(db);
  await sql`delete from graphile_worker._private_jobs`.execute(db);
}

/** Topics named by uniqueTopic in this test file: delete them afterwards (deleteTopics(createdTopics())). */
const created: string[] = [];
export const createdTopics = () => [...created];
export const uniqueTopic = (what: string) => {
  const t = `test.dispatch.${what}.${randomUUID().slice(0, 8)}`;
  created.push(t);
  return t;
};

export function edge(o: { brokers?: string; timeoutMs?: number; partitions?: number } = {}): KafkaEdge {
  return createKafkaEdge({
    brokers: (o.brokers ?? TEST_KAFKA).split(','),
    clientId: 'msgx-dispatch-test',
    timeoutMs: o.timeoutMs ?? 5000,
    partitions: o.partitions ?? 6,
    log: silentLog,
  });
}

export function deps(db: QueryDb, kafka: KafkaEdge, overrides: Record<string, string>, clock: Clock = new ManualClock(NOW)): DispatchDeps {
  return { db, kafka, dispatch: slices(testConfig(overrides)).dispatch, clock, log: silentLog };
}

/** Insert msg events (payload like the flight domain's UPSERT) for FLIDs in this order. Returns their event ids. */
export async function putMsgEvents(db: QueryDb, flids: readonly string[], now = NOW): Promise<number[]> {
  const before = await sql<{ m: number | null }>`select max(event_id) as m from msg_event`.execute(db);
  await db.transaction().execute((tx) =>
    insertMsgEvents(
      tx,
      flids.map((flid, i) => ({ flid, stateVersion: i + 1, payload: { FLID: flid, STATE_VERSION: i + 1, OP: 'UPSERT', UPDATED_AT: now.toISOString(), MSG_ID: 1 } })),
      now,
    ),
  );
  const r = await sql<{ event_id: number }>`select event_id from msg_event where target = 'msg' and event_id > ${before.rows[0].m ?? 0} order by event_id`.execute(db);
  return r.rows.map((x) => x.event_id);
}

export interface EventRow {
  event_id: number;
  flid: string;
  state: string;
  attempts: number;
  next_attempt_at: Date | null;
  sent_at: Date | null;
  kafka_partition: number | null;
  kafka_offset: string | null;
  last_error: string | null;
  state_version: number;
}

export async function rows(db: QueryDb, target: 'msg' | 'schd' = 'msg'): Promise<EventRow[]> {
  const r = await sql<EventRow>`select event_id, flid, state, attempts, next_attempt_at, sent_at, kafka_partition, kafka_offset, last_error, state_version
    from msg_event where target = ${target} order by event_id`.execute(db);
  return r.rows;
}

export async function stateCounts(db: QueryDb, target: 'msg' | 'schd' = 'msg'): Promise<Record<string, number>> {
  const r = await sql<{ state: string; n: number }>`select state, count(*)::int as n from msg_event where target = ${target} group by state`.execute(db);
  return Object.fromEntries(r.rows.map((x) => [x.state, x.n]));
}

export interface Consumed {
  key: string | null;
  value: string;
  partition: number;
  offset: string;
}

/** Read every record of a topic from the beginning with a real consumer group until `until` says so (or timeout). */
export async function consume(topic: string, until: (got: Consumed[]) => boolean, timeoutMs = 30_000, brokers = TEST_KAFKA): Promise<Consumed[]> {
  const kafka = new Kafka({ clientId: 'msgx-dispatch-test-consumer', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `test-${randomUUID()}`, sessionTimeout: 10_000, heartbeatInterval: 1000 });
  const got: Consumed[] = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => resolve(), timeoutMs);
      consumer
        .run({
          eachMessage: async ({ message, partition }) => {
            got.push({ key: message.key?.toString() ?? null, value: message.value!.toString(), partition, offset: message.offset });
            if (until(got)) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect().catch(() => {});
  }
  return got;
}

/** A TCP server on loopback that accepts connections and never answers: a hung broker. */
export async function silentServer(): Promise<{ address: string; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** A loopback port with nothing listening: connection refused. */
export async function deadAddress(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return `127.0.0.1:${port}`;
}

/** Every record of a topic (up to the high watermarks read first), with a real consumer group. */
export async function consumeAll(topic: string, brokers = TEST_KAFKA): Promise<Consumed[]> {
  const kafka = new Kafka({ clientId: 'msgx-dispatch-test-consumer', brokers: brokers.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const total = ends.reduce((n, e) => n + Number(BigInt(e.high) - BigInt(e.low)), 0);
  const got = total === 0 ? [] : await consume(topic, (g) => g.length >= total, 60_000, brokers);
  if (got.length < total) throw new Error(`consumed ${got.length} of ${total} records of ${topic}`);
  return got;
}

export const payloadOf = (c: Consumed) => JSON.parse(c.value) as Record<string, unknown> & { EVENT_ID: number; FLID: string };

/**
 * A topic whose brokers refuse any record (max.message.bytes far below a record batch): a real,
 * permanent (non-retriable) send failure, MESSAGE_TOO_LARGE — the kind that ends in DEAD.
 * (A broker that cannot be reached never makes an event DEAD: docs/decisions.md, Dispatch.)
 */
export async function refusingTopic(what: string): Promise<string> {
  const topic = uniqueTopic(`${what}.refusing`);
  const kafka = new Kafka({ clientId: 'msgx-dispatch-test-admin', brokers: [TEST_KAFKA], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: 1, configEntries: [{ name: 'max.message.bytes', value: '64' }] }] });
  } finally {
    await admin.disconnect();
  }
  return topic;
}

/** A topic created by "someone else" with these settings (1 partition). */
export async function topicWith(what: string, configs: Record<string, string>): Promise<string> {
  const topic = uniqueTopic(what);
  const admin = new Kafka({ clientId: 'msgx-dispatch-test-admin', brokers: [TEST_KAFKA], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: 1, configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })) }] });
  } finally {
    await admin.disconnect();
  }
  return topic;
}

/** A topic's partition count and the settings set on the topic itself (not inherited from the broker). */
export async function describeTopic(topic: string): Promise<{ partitions: number; explicit: Record<string, string> }> {
  const admin = new Kafka({ clientId: 'msgx-dispatch-test-admin', brokers: [TEST_KAFKA], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    const cfg = await admin.describeConfigs({ resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic }], includeSynonyms: false });
    const explicit: Record<string, string> = {};
    for (const e of cfg.resources[0].configEntries) if ((e as { configSource?: number }).configSource === 1) explicit[e.configName] = e.configValue;
    return { partitions: meta.topics[0].partitions.length, explicit };
  } finally {
    await admin.disconnect();
  }
}

/** Delete the topics a test created (tests leave nothing on the developer's broker). Unknown topics are ignored. */
export async function deleteTopics(topics: string[], brokers = TEST_KAFKA): Promise<void> {
  if (topics.length === 0) return;
  const admin = new Kafka({ clientId: 'msgx-test-cleanup', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const mine = topics.filter((t) => existing.has(t));
    if (mine.length) await admin.deleteTopics({ topics: mine, timeout: 10_000 });
  } finally {
    await admin.disconnect();
  }
}
