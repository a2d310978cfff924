// schd dispatch against the real Postgres (flights written by the flight handlers) and the real
// Kafka: SCHD/FLTR batch shape and RECS, complete states from the bulk loader, split under
// max-record-bytes, deleted flights never published, a row rewritten during the send stays
// PENDING and goes out again, DEAD rows reset by a newer version, oversize states DEAD.
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { createRedis, type Redis } from '../../lib/db/redis.ts';
import type { QueryDb } from '../../lib/db/kysely.ts';
import type { KafkaEdge } from '../../lib/dispatch/kafka.ts';
import { schdDrain, schdRound, SCHD_KEY } from '../../lib/dispatch/schd.ts';
import { readFlights } from '../../lib/flight/read.ts';
import { toJson } from '../../lib/flight/state.ts';
import { TEST_REDIS_URL } from '../support/env.ts';
import { consumeAll, createdTopics, deleteTopics, deps, edge, NOW, openDb, refusingTopic, resetOutbox, rows, uniqueTopic } from './dispatch-support.ts';
import { apply, flop, rec, resetFlights, schd, TZ } from './flight-support.ts';

let db: QueryDb;
let close: () => Promise<void>;
let redis: Redis;
let kafka: KafkaEdge;
const edges: KafkaEdge[] = [];

beforeAll(async () => {
  ({ db, close } = openDb());
  redis = createRedis(TEST_REDIS_URL, 5000);
  kafka = edge();
  edges.push(kafka);
});
afterAll(async () => {
  for (const e of edges) await e.close();
  await deleteTopics(createdTopics());
  redis.disconnect();
  await close();
});
beforeEach(async () => {
  await resetFlights(db, redis);
  await resetOutbox(db);
});

interface SchdValue {
  SCHD: { RECS: number; FLTR: Record<string, unknown>[] };
}
const records = async (topic: string) => (await consumeAll(topic)).map((c) => ({ ...c, v: JSON.parse(c.value) as SchdValue }));

async function topicFor(what: string) {
  const topic = uniqueTopic(`schd-${what}`);
  await kafka.ensureTopics([topic]);
  return topic;
}

const snapshot = (flids: string[], extra: (f: string) => string = () => '') =>
  apply(
    db,
    redis,
    schd(
      'DNLD',
      flids.map((f) => rec(f, 9, extra(f))),
    ),
  );

describe('schd batches', () => {
  it('one record {"SCHD":{"RECS":n,"FLTR":[complete states]}}, fixed key, rows SENT with the record place', async () => {
    const topic = await topicFor('shape');
    await snapshot(['1', '2', '3', '4', '5'], (f) => (f === '2' ? '<GTDT GTNO="1"><GATE>G1</GATE></GTDT>' : ''));
    const d = deps(db, kafka, { 'msgx.kafka.schd-topic': topic });
    expect(await schdRound(d)).toMatchObject({ picked: 5, sent: 5, records: 1, gone: 0, overtaken: 0, failed: 0 });

    const [r, ...more] = await records(topic);
    expect(more).toEqual([]);
    expect(r.key).toBe(SCHD_KEY);
    expect(Object.keys(r.v)).toEqual(['SCHD']);
    expect(Object.keys(r.v.SCHD)).toEqual(['RECS', 'FLTR']);
    expect(r.v.SCHD.RECS).toBe(5);
    const states = await readFlights(db, ['1', '2', '3', '4', '5'], TZ);
    expect(r.v.SCHD.FLTR).toEqual(['1', '2', '3', '4', '5'].map((f) => toJson(states.get(f)!)));
    expect(r.v.SCHD.FLTR[1]).toMatchObject({ FLID: '2', STATE: 'ACTIVE', GTDT: [{ GTNO: 1, GATE: 'G1' }] });
    for (const row of await rows(db, 'schd')) expect(row).toMatchObject({ state: 'SENT', attempts: 1, kafka_partition: r.partition, kafka_offset: r.offset });
    expect(await schdRound(d)).toMatchObject({ picked: 0 });
  });

  it('split so that no record exceeds msgx.schd.max-record-bytes; RECS per record; nothing lost', async () => {
    const topic = await topicFor('split');
    const flids = Array.from({ length: 23 }, (_, i) => String(i + 1));
    await snapshot(flids);
    const one = JSON.stringify(toJson((await readFlights(db, ['1'], TZ)).get('1')!));
    const max = Math.floor(Buffer.byteLength(one) * 3.5);
    const d = deps(db, kafka, { 'msgx.kafka.schd-topic': topic, 'msgx.schd.max-record-bytes': String(max), 'msgx.schd.flush-limit': '10' });
    expect(await schdDrain(d, 30_000)).toBeNull();

    const got = await records(topic);
    expect(got.length).toBeGreaterThanOrEqual(Math.ceil(23 / 3));
    for (const r of got) {
      expect(Buffer.byteLength(r.value)).toBeLessThanOrEqual(max);
      expect(r.v.SCHD.RECS).toBe(r.v.SCHD.FLTR.length);
    }
    expect(got.flatMap((r) => r.v.SCHD.FLTR.map((f) => f.FLID)).sort()).toEqual([...flids].sort());
    expect((await rows(db, 'schd')).every((r) => r.state === 'SENT')).toBe(true);
  });

  it('a state larger than a record alone goes DEAD (too-large); the others are sent', async () => {
    const topic = await topicFor('oversize');
    const gates = Array.from({ length: 30 }, (_, i) => `<GTDT GTNO="${i + 1}"><GATE>G${i + 1}</GATE></GTDT>`).join('');
    await snapshot(['1', '2', '3'], (f) => (f === '2' ? gates : ''));
    const small = Buffer.byteLength(JSON.stringify(toJson((await readFlights(db, ['1'], TZ)).get('1')!)));
    const d = deps(db, kafka, { 'msgx.kafka.schd-topic': topic, 'msgx.schd.max-record-bytes': String(small * 3) });
    expect(await schdRound(d)).toMatchObject({ picked: 3, sent: 2, dead: 1 });
    const byFlid = Object.fromEntries((await rows(db, 'schd')).map((r) => [r.flid, r]));
    expect(byFlid['2']).toMatchObject({ state: 'DEAD', attempts: 1 });
    expect(byFlid['2'].last_error).toMatch(/too-large/);
    expect((await records(topic)).flatMap((r) => r.v.SCHD.FLTR.map((f) => f.FLID))).toEqual(['1', '3']);
  });
});

describe('deleted flights are never published on schd', () => {
  it('a row whose flight is DELETED or gone by send time is removed, not sent', async () => {
    const topic = await topicFor('gone');
    await snapshot(['1', '2', '3']);
    // as if deleted/purged between the pump's write and this round
    await sql`update flight_schd set state = 'DELETED', deleted_at = now() where flid = '2'`.execute(db);
    await sql`delete from flight_schd where flid = '3'`.execute(db);
    const d = deps(db, kafka, { 'msgx.kafka.schd-topic': topic });
    expect(await schdRound(d)).toMatchObject({ picked: 3, sent: 1, gone: 2 });
    expect((await rows(db, 'schd')).map((r) => [r.flid, r.state])).toEqual([['1', 'SENT']]);
    expect((await records(topic)).flatMap((r) => r.v.SCHD.FLTR.map((f) => f.FLID))).toEqual(['1']);
  });

  it('FDEL through the handlers: the pending row is dropped, the flight never appears', async () => {
    const topic = await topicFor('fdel');
    await snapshot(['1', '2']);
    await apply(db, redis, flop('FDEL', '2', '<FDEL/>'));
    const d = deps(db, kafka, { 'msgx.kafka.schd-topic': topic });
    expect(await schdRound(d)).toMatchObject({ picked: 1, sent: 1 });
    expect((await records(topic)).flatMap((r) => r.v.SCHD.FLTR.map((f) => f.FLID))).toEqual(['1']);
  });
});

describe('races and dead rows', () => {
  it('a row rewritten by a newer version during the send stays PENDING and goes out again', async () => {
    const topic = await topicFor('race');
    await snapshot(['1', '2']);
    const v1 = (await rows(db, 'schd')).find((r) => r.flid === '1')!;
    // the real send, then (still inside the round) the pump writes a newer version of flight 1
    const racing: KafkaEdge = {
      send: async (t, recs) => {
        const placed = await kafka.send(t, recs);
        await apply(db, redis, schd('ADFT', ['<FLTR><FLID>1</FLID><RENO>B5</RENO></FLTR>']));
        return placed;
      },
      ensureTopics: (t) => kafka.ensureTopics(t),
      reachable: () => kafka.reachable(),
      admin: () => kafka.admin(),
      close: async () => {},
    };
    expect(await schdRound(deps(db, racing, { 'msgx.kafka.schd-topic': topic }))).toMatchObject({ picked: 2, sent: 1, overtaken: 1 });
    const after = Object.fromEntries((await rows(db, 'schd')).map((r) => [r.flid, r]));
    expect(after['1']).toMatchObject({ state: 'PENDING', state_version: v1.state_version + 1, attempts: 0, sent_at: null });
    expect(after['1'].event_id).toBeGreaterThan(v1.event_id);
    expect(after['2'].state).toBe('SENT');

    expect(await schdRound(deps(db, kafka, { 'msgx.kafka.schd-topic': topic }))).toMatchObject({ picked: 1, sent: 1 });
    const got = await records(topic);
    const ones = got.flatMap((r) => r.v.SCHD.FLTR).filter((f) => f.FLID === '1');
    expect(ones.map((f) => f.STATE_VERSION)).toEqual([v1.state_version, v1.state_version + 1]);
    expect(ones[1].RENO).toBe('B5');
  });

  it('failed sends back off; DEAD after max attempts; a newer version resets the row to PENDING', async () => {
    const topic = await topicFor('dead');
    await snapshot(['1']);
    const clock = new ManualClock(NOW);
    const refusing = await refusingTopic('schd-dead'); // a permanent failure (an unreachable broker never makes DEAD)
    const d = deps(db, kafka, { 'msgx.kafka.schd-topic': refusing, 'msgx.dispatch.max-attempts': '2', 'msgx.dispatch.backoff': '3s' }, clock);
    expect(await schdRound(d)).toMatchObject({ picked: 1, failed: 1, dead: 0 });
    expect((await rows(db, 'schd'))[0]).toMatchObject({ state: 'PENDING', attempts: 1, next_attempt_at: new Date(NOW.getTime() + 3000) });
    expect(await schdDrain(d, 5000)).toEqual(new Date(NOW.getTime() + 3000));
    clock.advance(3000);
    expect(await schdRound(d)).toMatchObject({ picked: 1, failed: 1, dead: 1 });
    expect((await rows(db, 'schd'))[0]).toMatchObject({ state: 'DEAD', attempts: 2 });

    await apply(db, redis, schd('ADFT', ['<FLTR><FLID>1</FLID><RENO>B7</RENO></FLTR>']));
    expect((await rows(db, 'schd'))[0]).toMatchObject({ state: 'PENDING', attempts: 0, next_attempt_at: null, last_error: null });
    expect(await schdRound(deps(db, kafka, { 'msgx.kafka.schd-topic': topic }, clock))).toMatchObject({ sent: 1 });
    expect((await records(topic))[0].v.SCHD.FLTR[0]).toMatchObject({ FLID: '1', RENO: 'B7' });
  });
});
