// The Kafka side of the restore check (./restore.ts): does the msg topic hold an
// EVENT_ID above the highest one Postgres handed out? EVENT_IDs come from one Postgres sequence
// that never goes back, and an event is sent only after its ID was taken: a higher one on the
// topic means Postgres was restored from a backup taken before it.
//
// Cheap in the usual case: per partition, the topic's end offset is compared with the highest
// offset the outbox recorded for a SENT event (one admin request, one query). Only the records
// beyond what Postgres knows (at most WATCH.restore.kafkaTail per partition) are read, with a short-lived consumer
// group, and their EVENT_IDs compared with the sequence; a range found fine is not read again.
import { randomUUID } from 'node:crypto';
import kafkajs from '../db/kafkajs.ts';
import { withTimeout } from '../core/timeout.ts';
import type { Db } from '../db/postgres.ts';
import { WATCH } from '../core/tuning.ts';
import type { Finding } from './restore-signs.ts';
import * as Outbox from '../sql/outbox/positions.ts';
import * as Restore from '../sql/restore.ts';
import { kafkaClientConfig, type KafkaOptions } from '../dispatch/kafka.ts';

const { Kafka, logLevel } = kafkajs;

const TAIL = WATCH.restore.kafkaTail;

export interface TopicEventIds {
  /** Highest EVENT_ID among the records read (null: none read). */
  topicHigh: number | null;
  /** Highest EVENT_ID Postgres handed out (read after the topic). */
  postgresHigh: number;
  records: number;
}

export interface KafkaRestoreCheck {
  /** A finding when the topic is ahead of Postgres (null: it is not). */
  check(): Promise<Finding | null>;
  /** The topic's EVENT_IDs beyond what the outbox knows, and the sequence (recover-restore). */
  eventIds(): Promise<TopicEventIds>;
}

export function createKafkaRestoreCheck(o: KafkaOptions, topic: string, db: Db): KafkaRestoreCheck {
  const kafka = new Kafka({
    clientId: `${o.clientId}-restore-check`,
    ...kafkaClientConfig(o),
    connectionTimeout: Math.min(o.timeoutMs, 3000),
    requestTimeout: o.timeoutMs,
    enforceRequestTimeout: true,
    retry: { retries: 1, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.NOTHING,
  });
  /** Per partition, the end offset already found fine, and the sequence it was compared with (a lower one later: Postgres went back, look again). */
  const verified = new Map<number, bigint>();
  let verifiedAgainst = 0;

  async function ends(): Promise<{ partition: number; low: bigint; high: bigint }[]> {
    const admin = kafka.admin({ retry: { retries: 0 } });
    try {
      await withTimeout(o.timeoutMs, 'kafka admin connect', admin.connect());
      const r = await withTimeout(o.timeoutMs, 'kafka fetchTopicOffsets', admin.fetchTopicOffsets(topic));
      return r.map((x) => ({ partition: x.partition, low: BigInt(x.low), high: BigInt(x.high) }));
    } catch (e) {
      if ((e as { type?: string }).type === 'UNKNOWN_TOPIC_OR_PARTITION') return []; // nothing sent yet
      throw e;
    } finally {
      void withTimeout(o.timeoutMs, 'kafka admin disconnect', admin.disconnect()).catch(() => {});
    }
  }

  /** The ranges of the topic Postgres does not know (and not verified before). */
  async function unknownRanges(useVerified: boolean) {
    const topicEnds = await ends();
    // per partition, one past the highest offset of a SENT msg event (the position GET /all/flights answers)
    const known = new Map((await Outbox.readMsgPositions(db)).map((r) => [r.partition, BigInt(r.offset)]));
    return topicEnds
      .map((e) => {
        let from = known.get(e.partition) ?? 0n;
        if (useVerified && (verified.get(e.partition) ?? -1n) > from) from = verified.get(e.partition)!;
        if (from < e.low) from = e.low;
        if (from < e.high - BigInt(TAIL)) from = e.high - BigInt(TAIL);
        return { partition: e.partition, from, high: e.high };
      })
      .filter((r) => r.from < r.high);
  }

  /** Highest EVENT_ID in the ranges, read with a consumer group of its own (no offsets committed). */
  async function readRanges(ranges: { partition: number; from: bigint; high: bigint }[]): Promise<{ max: number | null; records: number }> {
    if (ranges.length === 0) return { max: null, records: 0 };
    // A new group's coordinator can be still loading (a fresh broker creates __consumer_offsets at the
    // first group): retry the lookup a few times; a consumer that crashes anyway ends this read at
    // once (a restarted one would have lost its seeks and waited out the whole read for nothing).
    const consumer = kafka.consumer({
      groupId: `${o.clientId}-restore-check-${randomUUID()}`,
      sessionTimeout: 10_000,
      heartbeatInterval: 1000,
      retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 1000, restartOnFailure: async () => false },
      allowAutoTopicCreation: false,
    });
    const left = new Map(ranges.map((r) => [r.partition, r.high - 1n]));
    let max: number | null = null;
    let records = 0;
    try {
      await withTimeout(o.timeoutMs, 'kafka consumer connect', consumer.connect());
      await withTimeout(o.timeoutMs, 'kafka subscribe', consumer.subscribe({ topic, fromBeginning: false }));
      await withTimeout(
        Math.max(15_000, o.timeoutMs * 3),
        'kafka read of the msg topic',
        new Promise<void>((resolve, reject) => {
          consumer.on(consumer.events.CRASH, (e) => reject(e.payload.error));
          consumer
            .run({
              autoCommit: false,
              eachMessage: async ({ partition, message }) => {
                const last = left.get(partition);
                if (last === undefined) return;
                records++;
                try {
                  const id = Number((JSON.parse(message.value?.toString() ?? '{}') as { EVENT_ID?: number }).EVENT_ID);
                  if (Number.isFinite(id) && (max === null || id > max)) max = id;
                } catch {
                  // not a gateway record: no EVENT_ID to compare
                }
                if (BigInt(message.offset) >= last) left.delete(partition);
                if (left.size === 0) resolve();
              },
            })
            .catch(reject);
          for (const r of ranges) consumer.seek({ topic, partition: r.partition, offset: String(r.from) });
        }),
      );
    } finally {
      await withTimeout(o.timeoutMs, 'kafka consumer disconnect', consumer.disconnect()).catch(() => {});
    }
    return { max, records };
  }

  async function eventIdsIn(useVerified: boolean) {
    const ranges = await unknownRanges(useVerified);
    const read = await readRanges(ranges);
    // the sequence after the topic: every EVENT_ID read was handed out before this read, if Postgres is live
    const postgresHigh = (await Restore.readEventIdHigh(db))?.high ?? 0;
    return { ranges, topicHigh: read.max, postgresHigh, records: read.records };
  }

  return {
    async check() {
      if (((await Restore.readEventIdHigh(db))?.high ?? 0) < verifiedAgainst) verified.clear();
      const r = await eventIdsIn(true);
      if (r.topicHigh !== null && r.topicHigh > r.postgresHigh) {
        return { source: 'kafka', detail: `the msg topic ${topic} holds EVENT_ID ${r.topicHigh}, above the highest Postgres handed out (${r.postgresHigh})` };
      }
      for (const x of r.ranges) verified.set(x.partition, x.high);
      verifiedAgainst = r.postgresHigh;
      return null;
    },
    async eventIds() {
      const r = await eventIdsIn(false);
      return { topicHigh: r.topicHigh, postgresHigh: r.postgresHigh, records: r.records };
    },
  };
}
