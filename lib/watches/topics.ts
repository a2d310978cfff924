// The derived topics' checks (docs/operations.md "Derived stores: the state topic" and "…: the
// msg topic"; docs/decisions.md "Derived topics"): what "lost" means and how a topic is read. The
// watches: ./state-topic.ts (state-dispatch rebuilds the state topic, a copy of committed Postgres
// state) and ./msg-topic.ts (msg-dispatch detects a loss of the event history; an operator decides).
//
// What "lost" means, per topic: the topic is missing, its cleanup.policy is not the gateway's
// (state topic: compact), or a partition's end offset is below the one the outbox recorded
// (per partition, one past the highest offset acknowledged for a SENT row): records the outbox
// saw acknowledged are not there any more (deleted and recreated, truncated). Postgres is read
// BEFORE the topic: every SENT mark it saw was committed after its record was appended, so a
// live topic's end is past it (no false alarm from a send in flight).
//
// Cost: every WATCH.topics.everyMs one indexed query (outbox.state_positions /
// outbox.msg_topic_check) and one admin connection with the offsets request (plus describeConfigs
// on the state topic); never per round. A send that fails because the topic is missing asks for a
// check at once (checkSoon), and costs the events no attempt (lib/dispatch/send.ts).
import type { Admin } from 'kafkajs';
import kafkajs from '../db/kafkajs.ts';
import { withTimeout } from '../core/timeout.ts';
import { WATCH } from '../core/tuning.ts';
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/postgres.ts';
import type { Logger } from '../runtime/log.ts';
import { Watch, type WatchSpec } from '../runtime/watch.ts';
import { isUnknownTopic } from '../dispatch/send.ts';
import { topicSettings, type KafkaEdge, type TopicSpec } from '../dispatch/kafka.ts';

const { ConfigResourceTypes } = kafkajs;

// ---- pure logic

export interface TopicView {
  exists: boolean;
  /** End offset (high watermark) per partition. */
  ends: ReadonlyMap<number, bigint>;
  /** cleanup.policy as the cluster reports it (undefined: not asked). */
  policy?: string | null;
}

export interface Recorded {
  partition: number;
  /** One past the highest offset the outbox recorded for a SENT row in that partition. */
  next: bigint;
}

export type Problem = { kind: 'missing' } | { kind: 'policy'; expected: string; actual: string | null } | { kind: 'behind'; partition: number; end: bigint; recorded: bigint };

/**
 * What is wrong with a topic: missing (nothing else is said then); a cleanup.policy other than
 * `policy` (when given); per recorded partition an end offset below the recorded one (a
 * partition the topic lacks has end 0).
 */
export function topicProblems(view: TopicView, recorded: readonly Recorded[], policy?: string): Problem[] {
  if (!view.exists) return [{ kind: 'missing' }];
  const out: Problem[] = [];
  if (policy !== undefined && view.policy !== undefined && view.policy !== policy) out.push({ kind: 'policy', expected: policy, actual: view.policy });
  for (const r of recorded) {
    const end = view.ends.get(r.partition) ?? 0n;
    if (end < r.next) out.push({ kind: 'behind', partition: r.partition, end, recorded: r.next });
  }
  return out;
}

/** One line for the log and /healthz. */
export function describeProblems(topic: string, problems: readonly Problem[]): string {
  return problems
    .map((p) =>
      p.kind === 'missing'
        ? `topic ${topic} does not exist`
        : p.kind === 'policy'
          ? `topic ${topic} has cleanup.policy=${p.actual ?? '(unset)'}, not ${p.expected}`
          : `partition ${p.partition} of ${topic} ends at offset ${p.end}, below the ${p.recorded} the outbox recorded`,
    )
    .join('; ');
}

/**
 * The partitions whose recorded records the topic lost and the end offset from which on they
 * are gone: every recorded partition (from 0) for a missing topic, else the behind ones.
 */
export function lostPartitions(problems: readonly Problem[], recorded: readonly Recorded[]): { partition: number; end: bigint }[] {
  if (problems.some((p) => p.kind === 'missing')) return recorded.map((r) => ({ partition: r.partition, end: 0n }));
  return problems.flatMap((p) => (p.kind === 'behind' ? [{ partition: p.partition, end: p.end }] : []));
}

// ---- the Kafka edge of the checks

/** The topic's end offsets (and its cleanup.policy when asked), on one admin connection. */
export async function readTopic(kafka: KafkaEdge, topic: string, withPolicy: boolean, timeoutMs: number): Promise<TopicView> {
  const admin: Admin = kafka.admin();
  try {
    await withTimeout(timeoutMs, 'kafka admin connect', admin.connect());
    let offsets: { partition: number; high: string }[];
    try {
      offsets = await withTimeout(timeoutMs, 'kafka fetchTopicOffsets', admin.fetchTopicOffsets(topic));
    } catch (e) {
      if (isUnknownTopic(e)) return { exists: false, ends: new Map() };
      throw e;
    }
    const ends = new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
    if (!withPolicy) return { exists: true, ends };
    const d = await withTimeout(
      timeoutMs,
      'kafka describeConfigs',
      admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['cleanup.policy'] }], includeSynonyms: false }),
    );
    const policy = d.resources[0]?.configEntries.find((c) => c.configName === 'cleanup.policy')?.configValue ?? null;
    return { exists: true, ends, policy };
  } finally {
    void withTimeout(timeoutMs, 'kafka admin disconnect', admin.disconnect()).catch(() => {});
  }
}

/** Sets every setting of the gateway's compacted topic back on `topic` (alterConfigs replaces the topic's dynamic settings with these). */
export async function restoreCompactSettings(kafka: KafkaEdge, topic: string, timeoutMs: number): Promise<Record<string, string>> {
  const admin: Admin = kafka.admin();
  try {
    await withTimeout(timeoutMs, 'kafka admin connect', admin.connect());
    const cluster = await withTimeout(timeoutMs, 'kafka describeCluster', admin.describeCluster());
    const settings = topicSettings(0, Math.min(3, cluster.brokers.length), true);
    await withTimeout(
      timeoutMs,
      'kafka alterConfigs',
      admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: Object.entries(settings).map(([name, value]) => ({ name, value })) }] }),
    );
    return settings;
  } finally {
    void withTimeout(timeoutMs, 'kafka admin disconnect', admin.disconnect()).catch(() => {});
  }
}

/** What both topic watches are given. */
export interface TopicWatchDeps {
  kafka: KafkaEdge;
  db: Db;
  log: Logger;
  clock: Clock;
  spec: TopicSpec;
  timeoutMs: number;
  /** Check periods (tests); default WATCH.topics. */
  everyMs?: number;
  behindEveryMs?: number;
}

/** A topic's watch: its store is its condition, not ready before its first verdict; the periods of WATCH.topics (the deps' in tests). */
export function topicWatch<F>(d: TopicWatchDeps, store: 'state-topic' | 'msg-topic', declared: Pick<WatchSpec<F>, 'check' | 'repair' | 'status'>): Watch<F> {
  const periods = { everyMs: d.everyMs ?? WATCH.topics.everyMs, behindEveryMs: d.behindEveryMs ?? WATCH.topics.behindEveryMs };
  return new Watch<F>({ ...declared, ...periods, condition: store, pendingCondition: store, store, clock: d.clock, log: d.log, timeoutMs: d.timeoutMs });
}
