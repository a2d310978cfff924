// The compacted state topic seen by Kafka's own console consumer (kafka-console-consumer
// --from-beginning --property print.key=true): after a snapshot, FLOPs, FDELs (plus the sample
// corpus when it is present) went through the real processes, and the state-dispatch process was
// SIGKILLed in the middle of its backlog and started again, the last record per key is exactly
// GET /all/flights: every live flight with its complete state (the GET /flights/:flid JSON) and
// STATE_VERSION, a tombstone (null value) with the deletion's STATE_VERSION for every deleted one.
// Every record satisfies docs/asyncapi.yaml. Also GET /all/flights' msgPosition once the msg
// topic is drained: the topic's end offsets.
import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renumberSeqn } from '../../lib/inject/files.ts';
import { contract } from '../support/contract.ts';
import { CORPUS_ADFT_FIXTURE, corpusMessages, corpusPresent } from '../support/corpus.ts';
import { TEST_KAFKA } from '../support/env.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { consoleConsume, type ConsoleRecord } from '../support/kafka-tools.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { deleteTopics } from './dispatch-support.ts';

type Flight = Record<string, unknown> & { FLID: string; STATE: string; STATE_VERSION: number };

let s: TestServices;
const procs: Proc[] = [];
const run = randomUUID().slice(0, 8);
const env = {
  MSGX_KAFKA_MSG_TOPIC: `state.${run}.msg`,
  MSGX_KAFKA_SCHD_TOPIC: `state.${run}.schd`,
  MSGX_KAFKA_STATE_TOPIC: `state.${run}.state`,
  MSGX_KAFKA_PARTITIONS: '3',
};

/** A snapshot of 1,200 flights, FLOPs on 40 of them, FDELs of three; the sample corpus (and its ADFT fixture) after them when present. */
function workload(): string[] {
  let seqn = 700_000;
  const flop = (styp: string, f: number, inner: string) => sisMessage({ type: 'FLOP', styp, seqn: ++seqn, body: `<FLOP><FLID>${f}</FLID><FFID>X</FFID>${inner}</FLOP>` });
  const out = [bigSnapshot(1200, 1000, { seqn: ++seqn })];
  for (let i = 0; i < 80; i++) out.push(flop('STND', 1000 + (i % 40), `<STND>S${i}</STND>`));
  for (const f of [1003, 1004, 1100]) out.push(flop('FDEL', f, '<FDEL></FDEL>'));
  if (corpusPresent) for (const xml of [...corpusMessages().map((m) => m.xml), CORPUS_ADFT_FIXTURE]) out.push(renumberSeqn(xml, ++seqn));
  return out;
}

async function allFlights(port: number): Promise<{ flights: Flight[]; msgPosition: { partition: number; offset: string }[] }> {
  const flights: Flight[] = [];
  let cursor: string | null = null;
  let msgPosition: { partition: number; offset: string }[] | null = null;
  do {
    const res = await fetch(`http://127.0.0.1:${port}/all/flights?limit=1000&includeDeleted=true${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { flights: Flight[]; nextCursor: string | null; msgPosition: { partition: number; offset: string }[] };
    msgPosition ??= body.msgPosition;
    flights.push(...body.flights);
    cursor = body.nextCursor;
  } while (cursor);
  return { flights, msgPosition: msgPosition! };
}

const count = async (sql: string) => Number((await s.pool.query(sql)).rows[0].n);

describe('state topic through Kafka’s console consumer', () => {
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
  });
  afterAll(async () => {
    await stopAll(procs);
    await deleteTopics([env.MSGX_KAFKA_MSG_TOPIC, env.MSGX_KAFKA_SCHD_TOPIC, env.MSGX_KAFKA_STATE_TOPIC]).catch(() => {});
    await s?.close();
  });

  it(`last record per key = GET /all/flights (tombstones for deleted flights), state-dispatch SIGKILLed mid-run${corpusPresent ? ', with the sample corpus' : ' (sample corpus absent: fixtures only)'}`, async () => {
    const messages = workload();
    for (const xml of messages) await putInbox(s.inbox, xml);
    for (const name of ['intake', 'pump', 'backfill', 'msg-dispatch']) procs.push(startWorker(name, env));
    const api = startWorker('api', env);
    procs.push(api);
    await waitFor(
      'every message terminal',
      async () => {
        const rows = await procRows(s.db);
        return rows.length === messages.length && rows.every((r) => !['PENDING', 'FAILED'].includes(r.state));
      },
      120_000,
      250,
    );
    const rows = await count(`select count(*)::int n from msg_event where target = 'state'`);
    expect(rows).toBeGreaterThanOrEqual(1200);

    // small rounds, so that the kill lands in the middle of the backlog
    const small = { ...env, MSGX_MSG_BATCH: '5' };
    const first = startWorker('state-dispatch', small);
    procs.push(first);
    await waitFor('some state rows SENT', async () => (await count(`select count(*)::int n from msg_event where target = 'state' and state = 'SENT'`)) >= 20, 60_000, 20);
    first.child.kill('SIGKILL');
    await first.exited;
    const pendingAtKill = await count(`select count(*)::int n from msg_event where target = 'state' and state = 'PENDING'`);
    expect(pendingAtKill).toBeGreaterThan(0);

    const second = startWorker('state-dispatch', small);
    procs.push(second);
    await waitFor('the msg and state outbox drained', async () => (await count(`select count(*)::int n from msg_event where target in ('msg', 'state') and state <> 'SENT'`)) === 0, 180_000, 250);

    const { flights, msgPosition } = await allFlights(api.port);
    const live = flights.filter((f) => f.STATE === 'ACTIVE');
    const deleted = flights.filter((f) => f.STATE === 'DELETED');
    expect(deleted.map((f) => f.FLID)).toEqual(expect.arrayContaining(['1003', '1004', '1100']));
    expect(live.length).toBeGreaterThan(1000);

    const records = await consoleConsume(env.MSGX_KAFKA_STATE_TOPIC, TEST_KAFKA, { idleMs: 10_000 });
    expect(records.length).toBeGreaterThanOrEqual(flights.length); // a resend after the kill may repeat a record, compaction may not have run
    // every record as docs/asyncapi.yaml describes it: key, value (or tombstone) and headers
    const asyncapi = contract();
    expect(records.flatMap((r) => asyncapi.check('state', r.key, r.value, r.headers).map((p) => `${r.key}: ${p}`))).toEqual([]);
    const last = new Map<string, ConsoleRecord>();
    const versions = new Map<string, number>();
    for (const r of records) {
      const v = Number(r.headers.STATE_VERSION);
      // per key, in STATE_VERSION order (a resend repeats a version, never goes back)
      expect(v).toBeGreaterThanOrEqual(versions.get(r.key) ?? 0);
      versions.set(r.key, v);
      expect(Number(r.headers.EVENT_ID)).toBeGreaterThan(0);
      last.set(r.key, r);
    }
    expect([...last.keys()].sort()).toEqual(flights.map((f) => f.FLID).sort());
    for (const f of live) {
      const r = last.get(f.FLID)!;
      expect(r.value, f.FLID).not.toBeNull();
      expect(JSON.parse(r.value!)).toEqual(f); // the GET /flights/:flid JSON, to the last key
      expect(Number(r.headers.STATE_VERSION)).toBe(f.STATE_VERSION);
    }
    for (const f of deleted) {
      const r = last.get(f.FLID)!;
      expect(r.value, f.FLID).toBeNull();
      expect(Number(r.headers.STATE_VERSION)).toBe(f.STATE_VERSION);
    }
    // one flight through GET /flights/:flid: the same JSON as its record
    const one = live[live.length - 1];
    expect(JSON.parse(last.get(one.FLID)!.value!)).toEqual(await (await fetch(`http://127.0.0.1:${api.port}/flights/${one.FLID}`)).json());

    // msgPosition with the msg topic drained: per partition the offset after its last record
    const admin = new kafkajs.Kafka({ clientId: `state-${run}`, brokers: [TEST_KAFKA], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const ends = (await admin.fetchTopicOffsets(env.MSGX_KAFKA_MSG_TOPIC)).filter((e) => e.high !== '0');
      expect(msgPosition.map((p) => `${p.partition}:${p.offset}`).sort()).toEqual(ends.map((e) => `${e.partition}:${e.high}`).sort());
    } finally {
      await admin.disconnect();
    }
  }, 420_000);
});
