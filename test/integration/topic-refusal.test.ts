// A cluster that refuses to rebuild the state topic (topic creation disabled, an ACL without
// CreateTopics): the refusal is a condition naming the store and the reason, one log line per
// distinct reason, retried with the watches' backoff (5 s, doubling), nothing reported as rebuilt; once the
// cluster accepts, the re-seed runs and the condition clears; a second loss waits out msgx.dispatch.reseed-gap. The real Kafka and Postgres; only
// the refusal is simulated (the edge's ensureTopics throws what kafka.ts throws on a refusal).
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { TopicCreationError, type KafkaEdge } from '../../lib/dispatch/kafka.ts';
import { MsgTopicWatch } from '../../lib/watches/msg-topic.ts';
import { StateTopicWatch } from '../../lib/watches/state-topic.ts';
import { conditions } from '../../lib/runtime/conditions.ts';
import { mirrorBehind, mirrorRebuilds } from '../../lib/runtime/watch.ts';
import { waitFor } from '../support/processes.ts';
import { createdTopics, deleteTopics, edge, openDb, resetOutbox, uniqueTopic } from './dispatch-support.ts';

const { db, close } = openDb();
const real = edge();
const lines: { level: number; msg: string }[] = [];
const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as { level: number; msg: string }) });
const errors = () => lines.filter((l) => l.level >= 50 && l.msg.includes('cannot rebuild the state topic')).length;
const listTopics = async () => {
  const admin = real.admin();
  await admin.connect();
  try {
    return await admin.listTopics();
  } finally {
    await admin.disconnect();
  }
};
const gauge = async (g: typeof mirrorBehind | typeof mirrorRebuilds) => (await g.get()).values.find((v) => v.labels.store === 'state-topic')?.value;

describe('state topic: the cluster refuses the rebuild', () => {
  beforeAll(async () => {
    await resetOutbox(db);
    // no flights: the re-seed once the cluster accepts has nothing to send and is done at its next
    // check (flights left by an earlier file of this slot would wait for a dispatcher this test has not)
    await sql`truncate flight_schd cascade`.execute(db);
  });
  afterAll(async () => {
    await real.close();
    await deleteTopics(createdTopics()).catch(() => {});
    await close();
  });

  it('condition names the store and the reason, one log line, backoff; healed once the cluster accepts', async () => {
    const topic = uniqueTopic('refused-state');
    let refuse = true;
    let creations = 0;
    const refusing: KafkaEdge = {
      ...real,
      admin: () => real.admin(),
      ensureTopics: async (t) => {
        creations++;
        if (refuse) throw new TopicCreationError(`topic(s) ${topic} do not exist and the cluster refused to create them (TOPIC_AUTHORIZATION_FAILED): grant CreateTopics`);
        return real.ensureTopics(t);
      },
    };
    const clock = new ManualClock('2026-12-01T00:00:00Z');
    const watch = new StateTopicWatch({ kafka: refusing, db, log, clock, spec: { topic, compacted: true }, timeoutMs: 5000, reseedGapMs: 30_000 });
    expect(conditions().map((c) => `${c.name}: ${c.reason}`)).toEqual(['state-topic: not checked yet (start-up)']);

    await watch.check();
    const c = conditions().find((x) => x.name === 'state-topic')!;
    expect(c.reason).toMatch(new RegExp(`^cannot rebuild the state topic ${topic.replace(/\./g, '\\.')}: TopicCreationError: .*TOPIC_AUTHORIZATION_FAILED`));
    expect(await gauge(mirrorBehind)).toBe(1);
    expect([creations, errors()]).toEqual([1, 1]);

    // backoff: not again before 5 s; then 10 s; the same reason is not logged again
    await watch.check();
    expect(creations).toBe(1);
    clock.advance(5_000);
    await watch.check();
    expect([creations, errors()]).toEqual([2, 1]);
    clock.advance(5_000);
    await watch.check();
    expect(creations).toBe(2);
    clock.advance(5_000);
    await watch.check();
    expect([creations, errors()]).toEqual([3, 1]);
    expect(await gauge(mirrorRebuilds)).toBe(0); // nothing reported as rebuilt
    expect(lines.some((l) => l.msg.includes('re-seed started'))).toBe(false);

    // the cluster accepts: created, re-seeded, done, condition cleared
    refuse = false;
    clock.advance(20_000);
    await watch.check();
    expect(lines.filter((l) => l.msg.includes('state topic re-seed started'))).toHaveLength(1);
    await watch.check();
    expect(lines.filter((l) => l.msg.includes('state topic re-seed done'))).toHaveLength(1);
    expect(conditions()).toEqual([]);
    expect(await gauge(mirrorBehind)).toBe(0);
    expect(await gauge(mirrorRebuilds)).toBe(1);

    // lost again 10 s after that re-seed started: not re-seeded before msgx.dispatch.reseed-gap (30 s here) has passed
    await deleteTopics([topic]);
    await waitFor('the topic is gone', async () => !(await listTopics()).includes(topic), 20_000, 200);
    clock.advance(10_000);
    await watch.check();
    expect(lines.filter((l) => l.msg.includes('state topic re-seed started'))).toHaveLength(1);
    expect(await gauge(mirrorBehind)).toBe(1);
    clock.advance(20_000);
    await watch.check();
    expect(lines.filter((l) => l.msg.includes('state topic re-seed started'))).toHaveLength(2);
    watch.stop();
  }, 60_000);

  it('a first check that cannot run: /healthz names the error, not only "not checked yet"; cleared by the first verdict', async () => {
    const topic = uniqueTopic('unchecked-msg');
    await real.ensureTopics([{ topic }]);
    let down = true;
    const flaky: KafkaEdge = {
      ...real,
      admin: () =>
        down
          ? ({
              connect: async () => Promise.reject(Object.assign(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:1'), { name: 'KafkaJSConnectionError' })),
              disconnect: async () => {},
            } as never)
          : real.admin(),
    };
    const watch = new MsgTopicWatch({ kafka: flaky, db, log, clock: new ManualClock('2026-12-01T00:00:00Z'), spec: { topic }, timeoutMs: 5000 });
    await watch.check();
    expect(conditions().find((c) => c.name === 'msg-topic')?.reason).toBe(
      'not checked yet: the check could not run (KafkaJSConnectionError: Connection error: connect ECONNREFUSED 127.0.0.1:1); retried every 2000 ms',
    );
    down = false;
    await watch.check();
    expect(conditions().find((c) => c.name === 'msg-topic')).toBeUndefined();
    // after a verdict, a check that cannot run keeps that verdict (ready here)
    down = true;
    await watch.check();
    expect(conditions().find((c) => c.name === 'msg-topic')).toBeUndefined();
    watch.stop();
  }, 60_000);
});
