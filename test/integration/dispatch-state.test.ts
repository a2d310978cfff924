// state dispatch rounds against the real Postgres (flights written by the flight handlers) and
// the real Kafka, read back with Kafka's own console consumer: the topic is created compacted,
// live flights go out as their GET /flights/:flid JSON, a deleted flight and a purged (gone) one
// as tombstones with their versions in the headers, a state larger than a record and a row whose
// version the flight does not have go DEAD instead of being sent or looping.
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRedis, type Redis } from '../../lib/db/redis.ts';
import type { QueryDb } from '../../lib/db/kysely.ts';
import type { KafkaEdge } from '../../lib/dispatch/kafka.ts';
import { stateDrain, stateRound } from '../../lib/dispatch/state.ts';
import { readFlights } from '../../lib/flight/read.ts';
import { toJson } from '../../lib/flight/state.ts';
import { upsertStateRows } from '../../lib/flight/store.ts';
import { TEST_KAFKA, TEST_REDIS_URL } from '../support/env.ts';
import { consoleConsume } from '../support/kafka-tools.ts';
import { createdTopics, deleteTopics, deps, describeTopic, edge, NOW, openDb, resetOutbox, uniqueTopic } from './dispatch-support.ts';
import { apply, flop, rec, resetFlights, schd, TZ } from './flight-support.ts';

let db: QueryDb;
let close: () => Promise<void>;
let redis: Redis;
let kafka: KafkaEdge;

beforeAll(async () => {
  ({ db, close } = openDb());
  redis = createRedis(TEST_REDIS_URL, 5000);
  kafka = edge({ partitions: 3 });
});
afterAll(async () => {
  await kafka.close();
  await deleteTopics(createdTopics());
  redis.disconnect();
  await close();
});
beforeEach(async () => {
  await resetFlights(db, redis);
  await resetOutbox(db);
});

async function compactedTopic(what: string) {
  const topic = uniqueTopic(`state-${what}`);
  await kafka.ensureTopics([{ topic, compacted: true }]);
  return topic;
}

const stateRows = async () =>
  (
    await sql<{
      flid: string;
      state_version: number;
      state: string;
      last_error: string | null;
    }>`select flid, state_version, state, last_error from msg_event where target = 'state' order by flid`.execute(db)
  ).rows;

describe('state dispatch', () => {
  it('creates the topic compacted; live flights as their complete state, deleted and purged ones as tombstones, headers on all', async () => {
    const topic = await compactedTopic('shapes');
    const created = await describeTopic(topic);
    expect(created.explicit).toMatchObject({ 'cleanup.policy': 'compact', 'retention.ms': '-1', 'delete.retention.ms': '86400000' });
    expect(created.partitions).toBe(3);

    await apply(db, redis, schd('DNLD', [rec('1', 9, '<STND>501</STND>'), rec('2', 9), rec('3', 9)]));
    await apply(db, redis, flop('FDEL', '2', '<FDEL></FDEL>'));
    // the history purge of flight 3: gone from flight_schd, its state row at version + 1 (lib/lifecycle/flights.ts)
    await db.transaction().execute(async (tx) => {
      await sql`delete from flight_schd where flid = '3'`.execute(tx);
      await upsertStateRows(tx, [{ flid: '3', stateVersion: 2 }], NOW);
    });
    expect((await stateRows()).map((r) => [r.flid, r.state_version, r.state])).toEqual([
      ['1', 1, 'PENDING'],
      ['2', 2, 'PENDING'],
      ['3', 2, 'PENDING'],
    ]);

    const d = deps(db, kafka, { 'msgx.kafka.state-topic': topic });
    const r = await stateRound(d);
    expect(r).toMatchObject({ busy: false, picked: 3, sent: 3, failed: 0, dead: 0, tombstones: 2 });
    expect(await stateDrain(d, 5000)).toBeNull(); // nothing left: idle

    const got = await consoleConsume(topic, TEST_KAFKA, { maxMessages: 3 });
    const byKey = new Map(got.map((g) => [g.key, g]));
    const one = (await readFlights(db, ['1'], TZ)).get('1')!;
    expect(JSON.parse(byKey.get('1')!.value!)).toEqual(toJson(one));
    expect(byKey.get('1')!.headers.STATE_VERSION).toBe('1');
    expect(byKey.get('2')).toMatchObject({ value: null, headers: { STATE_VERSION: '2' } });
    expect(byKey.get('3')).toMatchObject({ value: null, headers: { STATE_VERSION: '2' } });
    const ids = (await sql<{ flid: string; event_id: number }>`select flid, event_id from msg_event where target = 'state'`.execute(db)).rows;
    for (const x of ids) expect(byKey.get(x.flid)!.headers.EVENT_ID).toBe(String(x.event_id));
    expect((await stateRows()).every((x) => x.state === 'SENT')).toBe(true);

    // a later change: the row goes back to PENDING at the new version and out again
    await apply(db, redis, flop('STND', '1', '<STND>502</STND>'));
    expect((await stateRound(d)).sent).toBe(1);
    const again = await consoleConsume(topic, TEST_KAFKA, { maxMessages: 4 });
    const last1 = again.filter((g) => g.key === '1').at(-1)!;
    expect(JSON.parse(last1.value!)).toMatchObject({ FLID: '1', STATE_VERSION: 2, STND: '502' });
  }, 120_000);

  it('a state larger than a record and a row whose version the flight lacks go DEAD; the others are sent', async () => {
    const topic = await compactedTopic('dead');
    await apply(db, redis, schd('DNLD', [rec('1', 9), rec('2', 9, `<REMC>${'x'.repeat(900)}</REMC>`), rec('3', 9)]));
    await sql`update msg_event set state_version = 7 where target = 'state' and flid = '3'`.execute(db);
    const d = deps(db, kafka, { 'msgx.kafka.state-topic': topic, 'msgx.schd.max-record-bytes': '700' });
    const r = await stateRound(d);
    expect(r).toMatchObject({ sent: 1, dead: 2 });
    const rows = await stateRows();
    expect(rows.map((x) => [x.flid, x.state])).toEqual([
      ['1', 'SENT'],
      ['2', 'DEAD'],
      ['3', 'DEAD'],
    ]);
    expect(rows[1].last_error).toMatch(/^too-large/);
    expect(rows[2].last_error).toMatch(/state version differs/);
    expect(await stateDrain(d, 5000)).toBeNull(); // DEAD rows do not keep the drain looping
  }, 60_000);
});
