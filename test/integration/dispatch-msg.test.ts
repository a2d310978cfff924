// msg dispatch against the real Postgres and the real Kafka: order per FLID across partitions,
// recorded partition/offset = where the record really is, the hold rule (SQL = plan.ts model),
// dead letters held and released by dispatch-replay / dispatch-skip (functions and HTTP).
import Fastify from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import type { QueryDb } from '../../lib/db/kysely.ts';
import { dispatchReplay, dispatchSkip } from '../../lib/dispatch/actions.ts';
import type { KafkaEdge } from '../../lib/dispatch/kafka.ts';
import { msgDrain, msgRound } from '../../lib/dispatch/msg.ts';
import { freezeMsgBatch } from '../../lib/dispatch/outbox.ts';
import { releasable, type OutboxEvent } from '../../lib/dispatch/plan.ts';
import { dispatchRoutes } from '../../lib/api/dispatch-routes.ts';
import { consume, createdTopics, deadAddress, deleteTopics, deps, edge, NOW, openDb, payloadOf, putMsgEvents, refusingTopic, resetOutbox, rows, uniqueTopic } from './dispatch-support.ts';

let db: QueryDb;
let close: () => Promise<void>;
let kafka: KafkaEdge;
const edges: KafkaEdge[] = [];

beforeAll(async () => {
  ({ db, close } = openDb());
  kafka = edge();
  edges.push(kafka);
});
afterAll(async () => {
  for (const e of edges) await e.close();
  await deleteTopics(createdTopics());
  await close();
});
beforeEach(async () => resetOutbox(db));

async function freshTopic(what: string, partitions = 6): Promise<string> {
  const topic = uniqueTopic(what);
  const admin = edge({ partitions });
  await admin.ensureTopics([topic]);
  await admin.close();
  return topic;
}

describe('ordering', () => {
  it('3,000 events over 300 FLIDs on 6 partitions arrive per FLID in EVENT_ID order, key = FLID, offsets recorded truly', async () => {
    const topic = await freshTopic('order');
    // interleave FLIDs pseudo-randomly so one batch mixes many FLIDs and partitions
    const flids = Array.from({ length: 3000 }, (_, i) => String(((i * 7919) % 300) + 1));
    const ids = await putMsgEvents(db, flids);
    const d = deps(db, kafka, { 'msgx.kafka.msg-topic': topic, 'msgx.msg.batch': '500' });

    expect(await msgDrain(d, 60_000)).toBeNull();
    const after = await rows(db);
    expect(after.every((r) => r.state === 'SENT' && r.sent_at !== null && r.kafka_partition !== null && r.kafka_offset !== null && r.attempts === 1)).toBe(true);

    const got = await consume(topic, (g) => g.length >= 3000);
    expect(got).toHaveLength(3000); // no duplicates without failures
    expect(new Set(got.map((c) => c.partition)).size).toBe(6);
    const byFlid = new Map<string, number[]>();
    for (const c of got) {
      const p = payloadOf(c);
      expect(c.key).toBe(p.FLID);
      byFlid.set(p.FLID, [...(byFlid.get(p.FLID) ?? []), p.EVENT_ID]);
    }
    expect(byFlid.size).toBe(300);
    for (const [flid, seen] of byFlid) {
      expect(seen, `FLID ${flid}`).toEqual([...seen].sort((a, b) => a - b));
      expect(seen).toHaveLength(10);
    }
    // the partition/offset recorded on each row is where Kafka really put that event
    const at = new Map(got.map((c) => [`${c.partition}/${c.offset}`, payloadOf(c).EVENT_ID]));
    for (const r of after) expect(at.get(`${r.kafka_partition}/${r.kafka_offset}`)).toBe(r.event_id);
    expect(after.map((r) => r.event_id)).toEqual(ids);
  });

  it('the value is the stored payload, as compact JSON in the contract key order (tombstones are a JSON value, not null)', async () => {
    const topic = await freshTopic('payload', 1);
    await db.transaction().execute((tx) =>
      sql`insert into msg_event (event_id, target, flid, state_version, payload, created_at)
          select x.id, 'msg', '42', 7, jsonb_build_object('EVENT_ID', x.id, 'FLID', '42', 'DELETED', true, 'STATE_VERSION', 7,
                 'UPDATED_AT', '2026-12-01T08:00:00+08:00', 'MSG_ID', 9), now()
          from (select nextval('msg_event_id_seq') as id) x`.execute(tx),
    );
    const d = deps(db, kafka, { 'msgx.kafka.msg-topic': topic });
    expect(await msgRound(d)).toMatchObject({ picked: 1, sent: 1 });
    const [c] = await consume(topic, (g) => g.length >= 1);
    const [r] = await rows(db);
    expect(payloadOf(c)).toEqual({ EVENT_ID: r.event_id, FLID: '42', DELETED: true, STATE_VERSION: 7, UPDATED_AT: '2026-12-01T08:00:00+08:00', MSG_ID: 9 });
    // the same style as schd values (JSON.stringify): no whitespace, not Postgres jsonb text
    expect(c.value).toBe(`{"EVENT_ID":${r.event_id},"FLID":"42","STATE_VERSION":7,"UPDATED_AT":"2026-12-01T08:00:00+08:00","DELETED":true,"MSG_ID":9}`);
    expect(c.key).toBe('42');
  });
});

describe('the hold rule in SQL is the plan.ts model', () => {
  it('random outbox states: freezeMsgBatch = releasable', async () => {
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 8; round++) {
      await resetOutbox(db);
      const flids = Array.from({ length: 400 }, () => String(Math.floor(rnd() * 40)));
      const ids = await putMsgEvents(db, flids);
      const model: OutboxEvent[] = [];
      const states = ids.map((id, i) => {
        const x = rnd();
        const state = x < 0.35 ? 'SENT' : x < 0.42 ? 'DEAD' : x < 0.47 ? 'SKIPPED' : 'PENDING';
        const y = rnd();
        const next = state !== 'PENDING' || y < 0.6 ? null : new Date(NOW.getTime() + (y < 0.8 ? -1000 : 1000));
        model.push({ eventId: id, flid: flids[i], state, nextAttemptAt: next });
        return { id, state, next: next?.toISOString() ?? null };
      });
      await sql`update msg_event m set state = u.st, next_attempt_at = u.nxt
        from unnest(${states.map((s) => s.id)}::bigint[], ${states.map((s) => s.state)}::text[], ${states.map((s) => s.next)}::timestamptz[]) as u(id, st, nxt)
        where m.event_id = u.id`.execute(db);
      for (const limit of [1, 17, 100, 1000]) {
        const frozen = (await freezeMsgBatch(db, NOW, limit)).map((r) => r.eventId);
        expect(frozen, `round ${round} limit ${limit}`).toEqual(releasable(model, NOW, limit));
      }
    }
  });
});

describe('dead letters', () => {
  /** Make these FLIDs' first events DEAD through real failed sends (a topic that refuses every record), max-attempts 2. */
  async function killFirstEvents(_topic: string, clock: ManualClock, flids: string[]): Promise<number[]> {
    const ids = await putMsgEvents(db, flids);
    const refusing = await refusingTopic('dead');
    const d = deps(db, kafka, { 'msgx.kafka.msg-topic': refusing, 'msgx.dispatch.max-attempts': '2', 'msgx.dispatch.backoff': '1s' }, clock);
    expect(await msgRound(d)).toMatchObject({ picked: flids.length, sent: 0, failed: flids.length, dead: 0 });
    const first = await rows(db);
    expect(first.every((r) => r.state === 'PENDING' && r.attempts === 1 && r.next_attempt_at?.getTime() === NOW.getTime() + 1000 && r.last_error)).toBe(true);
    expect(await msgRound(d)).toMatchObject({ picked: 0 }); // backing off
    clock.advance(1000);
    expect(await msgRound(d)).toMatchObject({ picked: flids.length, failed: flids.length, dead: flids.length });
    const dead = await rows(db);
    expect(dead.every((r) => r.state === 'DEAD' && r.attempts === 2 && /larger than the max message size|MESSAGE_TOO_LARGE/i.test(r.last_error ?? ''))).toBe(true);
    return ids;
  }

  it('an unreachable broker never turns events DEAD: they back off without counting attempts and go out once it answers', async () => {
    const topic = await freshTopic('unreachable');
    const clock = new ManualClock(NOW);
    const ids = await putMsgEvents(db, ['U1', 'U2']);
    const down = edge({ brokers: await deadAddress(), timeoutMs: 2000 });
    edges.push(down);
    const d = deps(db, down, { 'msgx.kafka.msg-topic': topic, 'msgx.dispatch.max-attempts': '2', 'msgx.dispatch.backoff': '1s' }, clock);
    for (let i = 0; i < 4; i++) {
      expect(await msgRound(d)).toMatchObject({ picked: 2, sent: 0, failed: 2, dead: 0 });
      clock.advance(1000);
    }
    expect((await rows(db)).map((r) => [r.state, r.attempts])).toEqual([
      ['PENDING', 0],
      ['PENDING', 0],
    ]); // no attempt counted: nobody answered
    expect((await rows(db)).every((r) => /^broker unreachable: /.test(r.last_error ?? ''))).toBe(true);
    expect(await msgRound(deps(db, kafka, { 'msgx.kafka.msg-topic': topic }, clock))).toMatchObject({ sent: 2 });
    const got = await consume(topic, (g) => g.length >= 2);
    expect(got.map((c) => payloadOf(c).EVENT_ID).sort((a, b) => a - b)).toEqual(ids); // two FLIDs: no order between them
  });

  it('later events of a DEAD FLID are held, other FLIDs flow; dispatch-replay releases them in order', async () => {
    const topic = await freshTopic('dead-replay');
    const clock = new ManualClock(NOW);
    const [deadA] = await killFirstEvents(topic, clock, ['A']);
    const later = await putMsgEvents(db, ['A', 'B', 'A', 'C']);
    const d = deps(db, kafka, { 'msgx.kafka.msg-topic': topic, 'msgx.dispatch.max-attempts': '2' }, clock);

    expect(await msgDrain(d, 10_000)).toBeNull();
    const held = await rows(db);
    expect(held.map((r) => [r.flid, r.state])).toEqual([
      ['A', 'DEAD'],
      ['A', 'PENDING'],
      ['B', 'SENT'],
      ['A', 'PENDING'],
      ['C', 'SENT'],
    ]);

    // the HTTP view shows the dead letter and what it holds
    const app = Fastify();
    await app.register(dispatchRoutes, { db });
    const list = (await app.inject('/ops/dispatch/dead?target=msg')).json();
    expect(list.dead).toHaveLength(1);
    expect(list.dead[0]).toMatchObject({ event_id: deadA, flid: 'A', target: 'msg', attempts: 2, held: 2 });
    expect((await app.inject({ method: 'POST', url: '/ops/dispatch-replay', payload: {} })).statusCode).toBe(400);
    expect((await app.inject({ method: 'POST', url: '/ops/dispatch-replay', payload: { eventIds: [deadA], flid: 'A' } })).statusCode).toBe(400);

    const replayed = (await app.inject({ method: 'POST', url: '/ops/dispatch-replay', payload: { eventIds: [deadA] } })).json();
    expect(replayed).toEqual({ replayed: [deadA], untouched: [] });
    const job = await sql<{ n: number }>`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'msg-dispatch' and key = 'msg-dispatch'`.execute(db);
    expect(job.rows[0].n).toBe(1); // woken in the same transaction
    const replayedRow = (await rows(db))[0];
    expect(replayedRow).toMatchObject({ state: 'PENDING', attempts: 0, next_attempt_at: null });
    await app.close();

    expect(await msgDrain(d, 10_000)).toBeNull();
    expect((await rows(db)).every((r) => r.state === 'SENT')).toBe(true);
    const got = await consume(topic, (g) => g.length >= 5);
    expect(got.filter((c) => c.key === 'A').map((c) => payloadOf(c).EVENT_ID)).toEqual([deadA, later[0], later[2]]);
    // a replayed event that is not DEAD is left alone
    expect(await dispatchReplay(db, { eventIds: [deadA] })).toEqual([]);
  });

  it('dispatch-skip marks it SKIPPED (kept, never sent) and releases the FLID; by FLID and for all', async () => {
    const topic = await freshTopic('dead-skip');
    const clock = new ManualClock(NOW);
    const [deadA, deadB, deadC] = await killFirstEvents(topic, clock, ['A', 'B', 'C']);
    const later = await putMsgEvents(db, ['A', 'B', 'C']);
    const d = deps(db, kafka, { 'msgx.kafka.msg-topic': topic }, clock);
    expect(await msgRound(d)).toMatchObject({ picked: 0 });

    await expect(dispatchSkip(db, {})).rejects.toThrow(/exactly one/);
    expect(await dispatchSkip(db, { eventIds: [deadA, later[0]] })).toEqual([deadA]); // only DEAD rows change
    expect(await dispatchReplay(db, { flid: 'B' })).toEqual([deadB]);
    expect(await msgDrain(d, 10_000)).toBeNull();
    expect((await rows(db)).map((r) => [r.event_id, r.state])).toEqual([
      [deadA, 'SKIPPED'],
      [deadB, 'SENT'],
      [deadC, 'DEAD'],
      [later[0], 'SENT'],
      [later[1], 'SENT'],
      [later[2], 'PENDING'],
    ]);
    expect(await dispatchReplay(db, { all: true, target: 'msg' })).toEqual([deadC]);
    expect(await msgDrain(d, 10_000)).toBeNull();
    const got = await consume(topic, (g) => g.length >= 5);
    expect(got.map((c) => payloadOf(c).EVENT_ID).sort((a, b) => a - b)).toEqual([deadB, deadC, ...later]);
    expect(got.filter((c) => c.key === 'C').map((c) => payloadOf(c).EVENT_ID)).toEqual([deadC, later[2]]);
  });

  it('a backing-off event holds its FLID until its retry is due, then goes first', async () => {
    const topic = await freshTopic('backoff');
    const clock = new ManualClock(NOW);
    const down = edge({ brokers: await deadAddress(), timeoutMs: 2000 });
    edges.push(down);
    const [a1] = await putMsgEvents(db, ['A']);
    await msgRound(deps(db, down, { 'msgx.kafka.msg-topic': topic, 'msgx.dispatch.backoff': '5s' }, clock));
    const [a2, b1] = await putMsgEvents(db, ['A', 'B']);
    const d = deps(db, kafka, { 'msgx.kafka.msg-topic': topic, 'msgx.dispatch.backoff': '5s' }, clock);
    const next = await msgDrain(d, 10_000);
    expect(next).toEqual(new Date(NOW.getTime() + 5000)); // the task re-adds itself for the retry
    expect((await rows(db)).map((r) => r.state)).toEqual(['PENDING', 'PENDING', 'SENT']);
    clock.advance(5000);
    expect(await msgDrain(d, 10_000)).toBeNull();
    const got = await consume(topic, (g) => g.length >= 3);
    expect(got.filter((c) => c.key === 'A').map((c) => payloadOf(c).EVENT_ID)).toEqual([a1, a2]);
    expect(got.map((c) => payloadOf(c).EVENT_ID)).toContain(b1);
    expect((await rows(db))[0]).toMatchObject({ state: 'SENT', attempts: 1 }); // the unreachable try counted no attempt
  });
});
