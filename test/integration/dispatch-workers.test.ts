// The two dispatcher processes for real (the Procfile entry files): woken by the pump's job,
// topic created at start, events delivered, /metrics shows the dispatch series, SIGTERM exits
// cleanly. Plus the retention of SENT rows.
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import type { QueryDb } from '../../lib/db/kysely.ts';
import { purgeSentEvents } from '../../lib/dispatch/retention.ts';
import { writePlan } from '../../lib/flight/store.ts';
import { wake } from '../../lib/sql/jobs.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { consume, createdTopics, deleteTopics, NOW, openDb, payloadOf, putMsgEvents, resetOutbox, rows, stateCounts, uniqueTopic } from './dispatch-support.ts';

let db: QueryDb;
let close: () => Promise<void>;
const procs: Proc[] = [];

beforeAll(async () => {
  ({ db, close } = openDb());
});
afterAll(async () => {
  await stopAll(procs);
  await deleteTopics(createdTopics());
  await close();
});
beforeEach(async () => resetOutbox(db));

const port = 19640 + Math.floor(Math.random() * 50);
async function metric(p: number, name: string, target: string): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${p}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{target="${target}"}`));
  return line ? Number(line.split(' ').pop()) : undefined;
}

describe('worker processes', () => {
  it('msg-dispatch: creates its topic, sends on wake-up, metrics, clean shutdown', async () => {
    const topic = uniqueTopic('proc-msg');
    const p = startWorker('msg-dispatch', { MSGX_KAFKA_MSG_TOPIC: topic, MSGX_KAFKA_PARTITIONS: '3', MSGX_HTTP_PORT_MSG_DISPATCH: String(port) });
    procs.push(p);
    await waitFor('topic ready', () => p.logs.some((l) => l.includes('kafka topic ready')), 60_000);
    const ids = await putMsgEvents(db, ['7', '8', '7'], new Date());
    await db.transaction().execute((tx) => wake(tx, 'msg-dispatch'));
    await waitFor('all SENT', async () => (await stateCounts(db)).SENT === 3, 30_000);
    const got = await consume(topic, (g) => g.length >= 3);
    expect(got.filter((c) => c.key === '7').map((c) => payloadOf(c).EVENT_ID)).toEqual([ids[0], ids[2]]);
    expect(await metric(port, 'msgx_dispatch_sent_total', 'msg')).toBe(3);
    expect(await metric(port, 'msgx_dispatch_pending', 'msg')).toBe(0);
    expect(await metric(port, 'msgx_dispatch_dead', 'msg')).toBe(0);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(p.logs.some((l) => /"level":(50|60)/.test(l))).toBe(false);
  });

  it('schd-dispatch: sends complete states of flights written meanwhile', async () => {
    const topic = uniqueTopic('proc-schd');
    const p = startWorker('schd-dispatch', { MSGX_KAFKA_SCHD_TOPIC: topic, MSGX_HTTP_PORT_SCHD_DISPATCH: String(port + 1) });
    procs.push(p);
    await waitFor('topic ready', () => p.logs.some((l) => l.includes('kafka topic ready')), 60_000);
    // a flight row + its schd row, as the pump writes them
    await sql`truncate flight_schd cascade`.execute(db);
    await sql`insert into flight_schd (flid, state, state_version, created_at, updated_at, mafl) values ('55', 'ACTIVE', 3, now(), now(), '[]')`.execute(db);
    await db.transaction().execute(async (tx) => {
      await writePlan(tx, { flights: [], events: [{ target: 'schd', flid: '55', stateVersion: 3 }], schdRemovals: [], changes: [] }, new Date());
      await wake(tx, 'schd-dispatch');
    });
    await waitFor('SENT', async () => (await rows(db, 'schd'))[0]?.state === 'SENT', 30_000);
    const [r] = await consume(topic, (g) => g.length >= 1);
    expect(JSON.parse(r.value)).toMatchObject({ SCHD: { RECS: 1, FLTR: [{ FLID: '55', STATE: 'ACTIVE', STATE_VERSION: 3 }] } });
    expect(await metric(port + 1, 'msgx_dispatch_sent_total', 'schd')).toBe(1);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });
});

describe('retention', () => {
  it('deletes SENT rows older than msgx.pipeline.event-retention in batches; PENDING, DEAD, SKIPPED and recent SENT stay', async () => {
    const ids = await putMsgEvents(
      db,
      Array.from({ length: 25 }, (_, i) => String(i)),
    );
    const day = 86_400_000;
    await sql`update msg_event set state = 'SENT', sent_at = ${new Date(NOW.getTime() - 8 * day)} where event_id <= ${ids[19]}`.execute(db);
    await sql`update msg_event set state = 'SENT', sent_at = ${new Date(NOW.getTime() - 6 * day)} where event_id = ${ids[20]}`.execute(db);
    await sql`update msg_event set state = 'DEAD' where event_id = ${ids[21]}`.execute(db);
    await sql`update msg_event set state = 'SKIPPED' where event_id = ${ids[22]}`.execute(db);
    const n = await purgeSentEvents(db, new ManualClock(NOW), { retentionMs: 7 * day, batch: 6 });
    expect(n).toBe(20);
    expect((await rows(db)).map((r) => r.state)).toEqual(['SENT', 'DEAD', 'SKIPPED', 'PENDING', 'PENDING']);
  });
});
