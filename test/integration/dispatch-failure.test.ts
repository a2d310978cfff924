// Kafka failures against the real thing: a broker stopped in the middle of a run (a private
// broker on its own port, so the shared one is never disturbed), a refused connection, and a
// broker that accepts and never answers (a loopback server: the one fault real Kafka cannot
// produce on demand). Nothing is marked SENT that Kafka did not acknowledge; after recovery
// everything is delivered, duplicates only of sends that were not acknowledged.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../lib/core/clock.ts';
import type { QueryDb } from '../../lib/db/kysely.ts';
import { TopicCreationError, type KafkaEdge } from '../../lib/dispatch/kafka.ts';
import { msgRound, type RoundResult } from '../../lib/dispatch/msg.ts';
import {
  createdTopics,
  deleteTopics,
  describeTopic,
  topicWith,
  consumeAll,
  deadAddress,
  deps,
  edge,
  NOW,
  openDb,
  payloadOf,
  putMsgEvents,
  resetOutbox,
  rows,
  silentServer,
  stateCounts,
  uniqueTopic,
} from './dispatch-support.ts';
import { privateKafka } from '../support/private-kafka.ts';

const PRIVATE_PORT = 19192;
const PRIVATE = `127.0.0.1:${PRIVATE_PORT}`;

let db: QueryDb;
let close: () => Promise<void>;
const edges: KafkaEdge[] = [];
const track = (e: KafkaEdge) => (edges.push(e), e);

beforeAll(async () => {
  ({ db, close } = openDb());
});
afterAll(async () => {
  for (const e of edges) await e.close();
  await deleteTopics(createdTopics());
  await close();
});
beforeEach(async () => resetOutbox(db));

describe('a broker that cannot be reached', () => {
  it('refused: the round fails fast, rows stay PENDING with backoff and no attempt counted, nothing SENT', async () => {
    const kafka = track(edge({ brokers: await deadAddress(), timeoutMs: 3000 }));
    await putMsgEvents(db, ['1', '2', '1']);
    const t0 = Date.now();
    const r = await msgRound(deps(db, kafka, { 'msgx.kafka.msg-topic': uniqueTopic('refused'), 'msgx.dispatch.backoff': '2s,9s' }));
    expect(Date.now() - t0).toBeLessThan(3500);
    expect(r).toMatchObject({ picked: 3, sent: 0, failed: 3, dead: 0 });
    for (const row of await rows(db)) {
      expect(row).toMatchObject({ state: 'PENDING', attempts: 0, sent_at: null, kafka_offset: null });
      expect(row.last_error).toMatch(/^broker unreachable: /);
      expect(row.next_attempt_at).toEqual(new Date(NOW.getTime() + 2000));
    }
  });

  it('never answers: the send is cut off by msgx.io.timeout; no metadata answer either, so it is unreachable (no attempt counted)', async () => {
    const hung = await silentServer();
    try {
      const kafka = track(edge({ brokers: hung.address, timeoutMs: 800 }));
      await putMsgEvents(db, ['1', '2']);
      const clock = new ManualClock(NOW);
      const d = deps(db, kafka, { 'msgx.kafka.msg-topic': uniqueTopic('hung'), 'msgx.io.timeout': '800ms' }, clock);
      for (let i = 1; i <= 2; i++) {
        const t0 = Date.now();
        const r = await msgRound(d);
        expect(Date.now() - t0).toBeLessThan(4000); // the send and the metadata probe, each bounded
        expect(r).toMatchObject({ picked: 2, sent: 0, failed: 2, dead: 0 });
        const after = await rows(db);
        expect(after.every((x) => x.state === 'PENDING' && x.attempts === 0 && /^broker unreachable: .*(did not answer within 800 ms|timed? ?out)/i.test(x.last_error ?? ''))).toBe(true);
        clock.advance(60_000);
      }
      // topic creation against a hung broker is bounded too
      const t0 = Date.now();
      await expect(kafka.ensureTopics(['x'])).rejects.toThrow();
      expect(Date.now() - t0).toBeLessThan(2500);
    } finally {
      await hung.close();
    }
  });
});

describe('a reachable broker that answers the send with an error', () => {
  // The "unavailable" decision is the broker's reachability (a metadata request), never the
  // error's text. A topic the broker does not host is the topic's fault, not the event's: no
  // attempt is counted, the topic check is asked to run at once (it creates the topic again,
  // lib/watches/msg-topic.ts), and nothing goes DEAD for it (docs/decisions.md "Derived
  // topics"); while the cluster refuses to create it, the check's condition says so.
  it('unknown topic: no attempt counted, never DEAD, the topic check asked at once', async () => {
    const kafka = track(edge({ timeoutMs: 5000 }));
    await putMsgEvents(db, ['1', '2']);
    const clock = new ManualClock(NOW);
    let asked = 0;
    const d = { ...deps(db, kafka, { 'msgx.kafka.msg-topic': uniqueTopic('absent'), 'msgx.dispatch.max-attempts': '3', 'msgx.dispatch.backoff': '1s,2s' }, clock), topicMissing: () => void asked++ };
    for (let i = 1; i <= 4; i++) {
      const r = await msgRound(d);
      expect(r).toMatchObject({ picked: 2, sent: 0, failed: 2, dead: 0 });
      const after = await rows(db);
      expect(after.map((x) => [x.state, x.attempts])).toEqual(after.map(() => ['PENDING', 0]));
      expect(after.every((x) => /^topic missing: /.test(x.last_error ?? ''))).toBe(true);
      clock.advance(60_000);
    }
    expect(asked).toBe(4);
  });

  it('an unreachable broker (no metadata answer) never makes an event DEAD and counts no attempt', async () => {
    const kafka = track(edge({ brokers: await deadAddress(), timeoutMs: 2000 }));
    await putMsgEvents(db, ['1']);
    const clock = new ManualClock(NOW);
    const d = deps(db, kafka, { 'msgx.kafka.msg-topic': uniqueTopic('unreachable'), 'msgx.dispatch.max-attempts': '2', 'msgx.dispatch.backoff': '1s' }, clock);
    for (let i = 1; i <= 4; i++) {
      expect(await msgRound(d)).toMatchObject({ picked: 1, failed: 1, dead: 0 });
      clock.advance(60_000);
    }
    const [row] = await rows(db);
    expect(row).toMatchObject({ state: 'PENDING', attempts: 0 });
    expect(row.last_error).toMatch(/^broker unreachable/);
  });
});

describe('broker stopped in the middle of a run', () => {
  beforeAll(async () => privateKafka('kafka-start', PRIVATE_PORT), 180_000);
  afterAll(async () => {
    await deleteTopics(createdTopics(), PRIVATE).catch(() => {}); // its data directory outlives the run
    await privateKafka('kafka-stop', PRIVATE_PORT);
  }, 120_000);

  it('rows stay PENDING while it is down; after restart everything arrives, duplicates only of unacknowledged sends', async () => {
    const topic = uniqueTopic('outage');
    const kafka = track(edge({ brokers: PRIVATE, timeoutMs: 2000 }));
    await kafka.ensureTopics([topic]);
    const flids = Array.from({ length: 3000 }, (_, i) => String((i % 150) + 1));
    await putMsgEvents(db, flids);
    const d = deps(
      db,
      kafka,
      { 'msgx.kafka.msg-topic': topic, 'msgx.msg.batch': '50', 'msgx.dispatch.backoff': '100ms,300ms', 'msgx.dispatch.max-attempts': '1000', 'msgx.io.timeout': '2s' },
      systemClock,
    );

    const results: RoundResult[] = [];
    let stop = false;
    const loop = (async () => {
      while (!stop) {
        const r = await msgRound(d);
        results.push(r);
        if (r.picked === 0) await new Promise((res) => setTimeout(res, 50));
        else await new Promise((res) => setTimeout(res, 15));
      }
    })();
    const waitUntil = async (what: string, f: () => Promise<boolean> | boolean, ms = 90_000) => {
      const end = Date.now() + ms;
      while (!(await f())) {
        if (Date.now() > end) throw new Error(`timed out: ${what}`);
        await new Promise((res) => setTimeout(res, 50));
      }
    };
    let stopped = false;
    try {
      await waitUntil('some sent', async () => ((await stateCounts(db)).SENT ?? 0) >= 300);
      await privateKafka('kafka-stop', PRIVATE_PORT); // while the loop keeps sending
      stopped = true;
      await waitUntil('failed rounds', () => results.filter((r) => r.failed > 0).length >= 3);
      const during = await stateCounts(db);
      expect(during.SENT ?? 0).toBeLessThan(3000);
      const pendingRows = (await rows(db)).filter((r) => r.state === 'PENDING');
      // the stopped broker answers no metadata request: backoff, and no attempt counted towards DEAD
      expect(pendingRows.some((r) => r.next_attempt_at !== null && /^broker unreachable: /.test(r.last_error ?? ''))).toBe(true);
      expect(pendingRows.every((r) => r.state === 'PENDING')).toBe(true);
      expect(pendingRows.every((r) => r.sent_at === null && r.kafka_offset === null)).toBe(true);
      const sentWhileDown = during.SENT ?? 0;
      await new Promise((res) => setTimeout(res, 500));
      expect((await stateCounts(db)).SENT ?? 0).toBe(sentWhileDown); // nothing acknowledged while down

      await privateKafka('kafka-start', PRIVATE_PORT);
      stopped = false;
      await waitUntil('all sent', async () => ((await stateCounts(db)).SENT ?? 0) === 3000);
    } finally {
      stop = true;
      await loop;
      if (stopped) await privateKafka('kafka-start', PRIVATE_PORT);
    }

    const failedSends = results.reduce((n, r) => n + r.failed, 0);
    expect(failedSends).toBeGreaterThan(0);
    const all = await rows(db);
    const got = await consumeAll(topic, PRIVATE);
    const ids = got.map((c) => payloadOf(c).EVENT_ID);
    const distinct = new Set(ids);
    expect(distinct.size).toBe(3000); // everything delivered
    expect(ids.length - distinct.size).toBeLessThanOrEqual(failedSends); // duplicates only of unacknowledged sends
    // every SENT row's recorded place holds exactly that event: acknowledged means really there
    const at = new Map(got.map((c) => [`${c.partition}/${c.offset}`, payloadOf(c).EVENT_ID]));
    for (const r of all) expect(at.get(`${r.kafka_partition}/${r.kafka_offset}`)).toBe(r.event_id);
    // per FLID, first deliveries in EVENT_ID order
    const firstSeen = new Map<string, number[]>();
    const seen = new Set<number>();
    for (const c of got) {
      const p = payloadOf(c);
      if (seen.has(p.EVENT_ID)) continue;
      seen.add(p.EVENT_ID);
      firstSeen.set(p.FLID, [...(firstSeen.get(p.FLID) ?? []), p.EVENT_ID]);
    }
    for (const [flid, list] of firstSeen) expect(list, `FLID ${flid}`).toEqual([...list].sort((a, b) => a - b));
  }, 240_000);
});

describe('topic creation', () => {
  it('provisions explicit, documented settings (not broker defaults) and checks those of existing topics at start', async () => {
    const kafka = track(edge({ partitions: 3 }));
    const msg = uniqueTopic('settings-msg');
    const schd = uniqueTopic('settings-schd');
    expect(await kafka.ensureTopics([msg, { topic: schd, partitions: 1 }])).toEqual({ created: [msg, schd], mismatched: [] });
    for (const [topic, partitions] of [
      [msg, 3],
      [schd, 1],
    ] as const) {
      const t = await describeTopic(topic);
      expect(t.partitions).toBe(partitions);
      // set on the topic itself (configSource TOPIC_CONFIG), whatever the broker's defaults are
      expect(t.explicit).toEqual({ 'cleanup.policy': 'delete', 'retention.ms': String(7 * 24 * 3600 * 1000), 'min.insync.replicas': '1' });
    }
    // a topic someone else created with other settings: reported (and logged), not changed
    const foreign = await topicWith('settings-foreign', { 'cleanup.policy': 'compact', 'retention.ms': '60000' });
    const r = await kafka.ensureTopics([msg, foreign]);
    expect(r.created).toEqual([]);
    expect(r.mismatched).toEqual([
      { topic: foreign, setting: 'cleanup.policy', expected: 'delete', actual: 'compact' },
      { topic: foreign, setting: 'retention.ms', expected: String(7 * 24 * 3600 * 1000), actual: '60000' },
    ]);
    expect((await describeTopic(foreign)).explicit['retention.ms']).toBe('60000');
  });

  it('creates a missing topic with msgx.kafka.partitions, leaves an existing one alone, refuses clearly', async () => {
    const kafka = track(edge({ partitions: 3 }));
    const topic = uniqueTopic('create');
    await kafka.ensureTopics([topic]);
    await kafka.ensureTopics([topic]); // exists: no error
    const placed = await kafka.send(
      topic,
      Array.from({ length: 30 }, (_, i) => ({ key: String(i), value: 'x' })),
    );
    expect(new Set(placed.map((p) => p.partition))).toEqual(new Set([0, 1, 2]));
    // an invalid name is refused by the broker for good: a TopicCreationError naming the topic
    const bad = 'bad/topic name';
    const err = await kafka.ensureTopics([bad]).catch((e) => e);
    expect(err).toBeInstanceOf(TopicCreationError);
    expect(String(err.message)).toContain(bad);
  });
});
