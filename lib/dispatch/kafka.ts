// The Kafka edge of the dispatchers (kafkajs 2.2.4): one client from config, a plain producer
// with acks = -1 (all in-sync replicas; the idempotent producer stays off, consumers dedupe by
// EVENT_ID), topic creation when missing, and every call bounded by msgx.io.timeout — a call
// that does not settle in time is a failure and the producer is thrown away, so a late answer
// of a hung request can never be mistaken for the next send's.
import { withTimeout } from '../core/timeout.ts';
import kafkajs from '../db/kafkajs.ts';
import type { Admin, LogEntry, Message, PartitionerArgs, Producer, RecordMetadata } from 'kafkajs';
import { kafkaSecuritySettings, type Slices } from '../core/config.ts';
import { anySeed, resolveKafka, targetOf, type KafkaTarget } from '../core/connections.ts';
import { kafkaSecurity } from '../db/tls.ts';
import type { Logger } from '../runtime/log.ts';
import { probes } from '../runtime/probe.ts';
import { offsetsOf } from './plan.ts';

// CommonJS under ESM: enums and classes through the default import (scripts/kafka/README.md).
const { Kafka, Partitioners, logLevel, ConfigResourceTypes } = kafkajs;

export interface KafkaRecord {
  key: string;
  /** null: a tombstone (compacted topics). */
  value: string | null;
  headers?: Record<string, string>;
}

export interface Placement {
  partition: number;
  /** null only if Kafka's answer lacked the partition (never seen; the record is acknowledged anyway). */
  offset: string | null;
}

export interface KafkaEdge {
  /**
   * Produce `records` to `topic` in one request (acks = -1). Resolves with one placement per
   * record, in order, only when Kafka acknowledged all of them; rejects on any error or when
   * msgx.io.timeout passes (then nothing of this call counts as acknowledged).
   */
  send(topic: string, records: readonly KafkaRecord[]): Promise<Placement[]>;
  /**
   * Does the cluster answer a metadata request within msgx.io.timeout (a fresh connection)? The
   * dispatchers ask after a failed send: only an unreachable cluster spares the events an attempt.
   */
  reachable(): Promise<boolean>;
  /**
   * Create the topics that do not exist, with the gateway's explicit settings (topicSettings;
   * partitions: the spec's, else msgx.kafka.partitions), and check the settings of those that
   * exist: a difference is logged as an error and returned, never changed. Throws
   * TopicCreationError when the cluster refuses.
   */
  ensureTopics(topics: readonly (string | TopicSpec)[]): Promise<TopicCheck>;
  /**
   * A new admin client on this edge's connection settings, for the derived topics' checks
   * (lib/watches/topics.ts); the caller connects it, bounds every call and disconnects it.
   */
  admin(): Admin;
  close(): Promise<void>;
}

export interface TopicSpec {
  topic: string;
  partitions?: number;
  /** A keyed table (the state topic): cleanup.policy=compact instead of delete (topicSettings). */
  compacted?: boolean;
}

export interface TopicCheck {
  created: string[];
  mismatched: { topic: string; setting: string; expected: string; actual: string | null }[];
}

/**
 * The settings every gateway topic is created with (docs/consumers.md "Topic settings"), so
 * that nothing depends on the broker's defaults:
 * - cleanup.policy=delete: records are change notifications / state batches, not a keyed table
 *   (the schd key is fixed; compaction would keep one record);
 * - retention.ms = msgx.pipeline.event-retention (7 d): as long as the outbox keeps SENT rows,
 *   so a record's EVENT_ID can always be traced back while it is on the topic;
 * - min.insync.replicas = min(2, replication factor), replication factor = min(3, brokers):
 *   with acks=-1 a write survives the loss of one broker wherever the cluster allows it (on a
 *   three-broker cluster: factor 3, min ISR 2). An existing topic with fewer replicas is
 *   reported with the settings that differ (setting `replication.factor`).
 * A compacted topic (the state topic, a keyed table) instead: cleanup.policy=compact, no time
 * retention (retention.ms=-1: the last record of every live FLID stays for ever), and
 * delete.retention.ms = STATE_TOMBSTONE_RETENTION_MS, how long a tombstone survives compaction
 * (a consumer reading from the beginning must reach the end within it to see every deletion).
 */
export function topicSettings(retentionMs: number, replicationFactor: number, compacted = false): Record<string, string> {
  const isr = String(Math.min(2, replicationFactor));
  if (compacted) return { 'cleanup.policy': 'compact', 'retention.ms': '-1', 'delete.retention.ms': String(STATE_TOMBSTONE_RETENTION_MS), 'min.insync.replicas': isr };
  return { 'cleanup.policy': 'delete', 'retention.ms': String(retentionMs), 'min.insync.replicas': isr };
}

/** delete.retention.ms of the compacted state topic: 1 day (Kafka's default, set explicitly). */
export const STATE_TOMBSTONE_RETENTION_MS = 86_400_000;

export class KafkaTimeoutError extends Error {
  override name = 'KafkaTimeoutError';
}

/** The cluster refused to create a topic (ACL, policy, bad partition/replication count): fatal, fix the setup. */
export class TopicCreationError extends Error {
  override name = 'TopicCreationError';
}

/** The error of a Kafka call that did not answer within ms (for withTimeout). */
const kafkaTimeout = (what: string) => (ms: number) => new KafkaTimeoutError(`kafka ${what} did not answer within ${ms} ms (msgx.io.timeout)`);

/** kafkajs chatter that our own round logs already cover (one line per failed round). */
const TRANSIENT =
  /Connection error|Connection timeout|ECONNREFUSED|ETIMEDOUT|Request .* timed out|Failed to connect to seed broker|coordinator is (loading|not available)|Closed connection|Response without match|socket hang up|disconnected/i;

function logCreator(log: Logger) {
  return () =>
    ({ level, log: entry }: LogEntry) => {
      const { message, ...rest } = entry as { message: string } & Record<string, unknown>;
      delete rest.timestamp;
      delete rest.logger;
      // ERROR/WARN stay visible unless they are transient connection noise; the rest is debug.
      const visible = level <= logLevel.WARN && !TRANSIENT.test(`${message} ${String(rest.error ?? '')}`);
      log[visible ? 'warn' : 'debug']({ kafkajs: rest }, `kafkajs: ${message}`);
    };
}

export interface KafkaOptions {
  brokers: string[];
  clientId: string;
  timeoutMs: number;
  partitions: number;
  /** retention.ms of the topics the gateway creates (msgx.pipeline.event-retention). */
  retentionMs?: number;
  log: Logger;
  /** Hears of each call that did not answer in time (its producer is thrown away): the process's readiness. */
  onFault?: (err: Error) => void;
  /** TLS and SASL (KAFKA_SECURITY_PROTOCOL and co.; none: plain text). Every Kafka client of the gateway takes its options from kafkaClientConfig. */
  target?: KafkaTarget;
}

/**
 * The connection part of a kafkajs client's configuration: brokers, TLS (verified, lib/db/tls.ts)
 * and SASL. The producers, the admin clients, the restore check's consumer, the probes, kafka:tail
 * and the benches take it from here.
 */
export function kafkaClientConfig(o: Pick<KafkaOptions, 'brokers' | 'target'>): { brokers: string[] } & ReturnType<typeof kafkaSecurity> {
  return { brokers: o.target?.brokers ?? o.brokers, ...kafkaSecurity(o.target) };
}

const WEEK_MS = 7 * 24 * 3600 * 1000;

export function kafkaOptions(config: Slices['kafka'], log: Logger, onFault?: (err: Error) => void): KafkaOptions {
  const target = targetOf(resolveKafka(config.brokers, kafkaSecuritySettings(config)));
  return {
    onFault,
    target,
    brokers: target.brokers,
    clientId: config.clientId,
    timeoutMs: config.timeoutMs,
    partitions: config.partitions,
    retentionMs: config.eventRetentionMs,
    log,
  };
}

export function createKafkaEdge(o: KafkaOptions): KafkaEdge {
  const connection = kafkaClientConfig(o);
  const kafka = new Kafka({
    clientId: o.clientId,
    ...connection,
    brokers: anySeed(connection.brokers), // a new connection (an admin, a reconnect) must not always ask the first broker
    connectionTimeout: Math.min(o.timeoutMs, 3000),
    requestTimeout: o.timeoutMs,
    enforceRequestTimeout: true,
    // Short in-call retries (leader moves); the dispatcher's backoff ladder does the rest.
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.WARN,
    logCreator: logCreator(o.log),
  });
  const producer = new OneProducer(kafka, o);
  return {
    send: (topic, records) => producer.send(topic, records),
    async reachable() {
      // every broker asked at once, on new connections (lib/runtime/probe.ts): one that answers will do
      return probes
        .kafka(o.target ?? o.brokers, o.timeoutMs)()
        .then(
          () => true,
          () => false,
        );
    },
    ensureTopics: (topics) => ensureTopics(kafka, o, topics),
    admin: () => kafka.admin({ retry: { retries: 0 } }),
    close: () => producer.close(),
  };
}

/**
 * The edge's one producer, connected on the first send; thrown away after a failed or timed-out
 * call (the next send connects afresh), so that a late answer of a hung request is never taken
 * for the next send's.
 */
class OneProducer {
  private readonly kafka: InstanceType<typeof Kafka>;
  private readonly o: KafkaOptions;
  private producer: Promise<Producer> | null = null;
  /** The partition kafkajs's default (murmur2, Java-compatible) partitioner chose for each message object: per-partition base offsets become per-record offsets. */
  private readonly placed = new WeakMap<Message, number>();

  constructor(kafka: InstanceType<typeof Kafka>, o: KafkaOptions) {
    this.kafka = kafka;
    this.o = o;
  }

  async send(topic: string, records: readonly KafkaRecord[]): Promise<Placement[]> {
    const o = this.o;
    if (records.length === 0) return [];
    const messages: Message[] = records.map((r) => ({ key: r.key, value: r.value, ...(r.headers ? { headers: r.headers } : {}) }));
    let acks: RecordMetadata[];
    try {
      // connect (when there is no producer) and send within one msgx.io.timeout
      acks = await withTimeout(
        o.timeoutMs,
        kafkaTimeout(`send to ${topic}`),
        this.connected().then((p) => p.send({ topic, messages, acks: -1, timeout: o.timeoutMs })),
      );
    } catch (e) {
      this.discard();
      if (e instanceof KafkaTimeoutError) o.onFault?.(e);
      throw e;
    }
    const partitions = messages.map((m) => this.placed.get(m) ?? -1);
    const offsets = offsetsOf(
      partitions,
      acks.filter((a) => a.topicName === topic && a.baseOffset !== undefined).map((a) => ({ partition: a.partition, baseOffset: a.baseOffset! })),
    );
    return partitions.map((partition, i) => ({ partition, offset: offsets[i] }));
  }

  async close(): Promise<void> {
    const p = this.producer;
    this.producer = null;
    if (p) await p.then((x) => withTimeout(this.o.timeoutMs, kafkaTimeout('disconnect'), x.disconnect())).catch(() => {});
  }

  private connected(): Promise<Producer> {
    const o = this.o;
    const placed = this.placed;
    const createPartitioner = () => {
      const inner = Partitioners.DefaultPartitioner();
      return (args: PartitionerArgs) => {
        const p = inner(args);
        placed.set(args.message, p);
        return p;
      };
    };
    return (this.producer ??= (async () => {
      const p = this.kafka.producer({ createPartitioner, idempotent: false, allowAutoTopicCreation: false });
      try {
        await withTimeout(o.timeoutMs, kafkaTimeout('connect'), p.connect());
      } catch (e) {
        void withTimeout(o.timeoutMs, kafkaTimeout('disconnect'), p.disconnect()).catch(() => {});
        throw e;
      }
      return p;
    })());
  }

  /** Drop the producer after a failure: the next send connects afresh. */
  private discard(): void {
    const old = this.producer;
    this.producer = null;
    old?.then((p) => withTimeout(this.o.timeoutMs, kafkaTimeout('disconnect'), p.disconnect())).catch(() => {});
  }
}

/** KafkaEdge.ensureTopics: the settings of the topics that exist checked, the missing ones created. */
async function ensureTopics(kafka: InstanceType<typeof Kafka>, o: KafkaOptions, topics: readonly (string | TopicSpec)[]): Promise<TopicCheck> {
  const specs = new Map<string, number>();
  const compacted = new Set<string>();
  for (const t of topics) {
    const spec = typeof t === 'string' ? { topic: t } : t;
    specs.set(spec.topic, spec.partitions ?? o.partitions);
    if (spec.compacted) compacted.add(spec.topic);
  }
  const admin: Admin = kafka.admin({ retry: { retries: 1 } });
  await withTimeout(o.timeoutMs, kafkaTimeout('admin connect'), admin.connect());
  try {
    const existing = new Set(await withTimeout(o.timeoutMs, kafkaTimeout('listTopics'), admin.listTopics()));
    const missing = [...specs.keys()].filter((t) => !existing.has(t));
    const present = [...specs.keys()].filter((t) => existing.has(t));
    const cluster = await withTimeout(o.timeoutMs, kafkaTimeout('describeCluster'), admin.describeCluster());
    const replicationFactor = Math.min(3, cluster.brokers.length);
    const settingsOf = (topic: string) => topicSettings(o.retentionMs ?? WEEK_MS, replicationFactor, compacted.has(topic));
    const result: TopicCheck = { created: [], mismatched: present.length ? await mismatches(admin, o, present, replicationFactor, settingsOf) : [] };
    if (missing.length === 0) return result;
    try {
      await withTimeout(
        o.timeoutMs * 2,
        kafkaTimeout('createTopics'),
        admin.createTopics({
          topics: missing.map((topic) => ({
            topic,
            numPartitions: specs.get(topic)!,
            replicationFactor,
            configEntries: Object.entries(settingsOf(topic)).map(([name, value]) => ({ name, value })),
          })),
          waitForLeaders: true,
          timeout: o.timeoutMs,
        }),
      );
    } catch (e) {
      const refused = refusal(e);
      if (refused) {
        throw new TopicCreationError(
          `topic(s) ${missing.join(', ')} do not exist and the cluster refused to create them (${refused}): ` +
            `create them (partitions: msgx.kafka.partitions, 1 for the schd topic; settings: docs/consumers.md) or grant CreateTopics to client '${o.clientId}'`,
        );
      }
      throw e;
    }
    result.created = missing;
    o.log.info({ topics: missing.map((t) => ({ topic: t, partitions: specs.get(t), settings: settingsOf(t) })), replicationFactor }, 'kafka topics created');
    return result;
  } finally {
    await withTimeout(o.timeoutMs, kafkaTimeout('admin disconnect'), admin.disconnect()).catch(() => {});
  }
}

/** The settings of existing topics that differ from the gateway's, logged as an error (never changed here). */
async function mismatches(admin: Admin, o: KafkaOptions, present: string[], replicationFactor: number, settingsOf: (topic: string) => Record<string, string>): Promise<TopicCheck['mismatched']> {
  const out: TopicCheck['mismatched'] = [];
  const described = await withTimeout(
    o.timeoutMs,
    kafkaTimeout('describeConfigs'),
    admin.describeConfigs({ resources: present.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: Object.keys(settingsOf(name)) })), includeSynonyms: false }),
  );
  // the replication factor is no topic setting: the fewest replicas of any partition
  // (a topic whose metadata has not reached every broker yet is not checked this time)
  const meta = await withTimeout(o.timeoutMs, kafkaTimeout('fetchTopicMetadata'), admin.fetchTopicMetadata({ topics: present })).catch(() => ({ topics: [] }));
  for (const name of present) {
    const parts = meta.topics.find((t) => t.name === name)?.partitions ?? [];
    const replicas = parts.length ? Math.min(...parts.map((p) => p.replicas.length)) : null;
    if (replicas !== null && replicas < replicationFactor) out.push({ topic: name, setting: 'replication.factor', expected: String(replicationFactor), actual: String(replicas) });
    const entries = described.resources.find((r) => r.resourceName === name)?.configEntries ?? [];
    for (const [setting, expected] of Object.entries(settingsOf(name))) {
      const actual = entries.find((e) => e.configName === setting)?.configValue ?? null;
      if (actual !== expected) out.push({ topic: name, setting, expected, actual });
    }
  }
  if (out.length) o.log.error({ mismatched: out }, 'kafka topic settings differ from the gateway\'s (docs/consumers.md "Topic settings"); left as they are, fix them with kafka-configs');
  return out;
}

const REFUSALS = new Set([
  'TOPIC_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'POLICY_VIOLATION',
  'INVALID_REPLICATION_FACTOR',
  'INVALID_PARTITIONS',
  'INVALID_TOPIC_EXCEPTION',
  'INVALID_CONFIG',
  'INVALID_REQUEST',
  'UNSUPPORTED_VERSION',
]);

/** The error type when createTopics was refused for good (not a connection problem). */
function refusal(e: unknown): string | null {
  const errs = [e, ...(((e as { errors?: unknown[] }).errors ?? []) as unknown[])];
  for (const x of errs) {
    const type = (x as { type?: string }).type;
    if (type && REFUSALS.has(type)) return type;
  }
  return null;
}
