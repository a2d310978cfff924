// End to end: corpus + fixtures into the inbox, all six processes running, a real Kafka
// consumer applying the rules of docs/consumers.md to both topics ends with exactly the flights
// and states of GET /all/flights. Every record it reads is validated against the contract,
// docs/asyncapi.yaml (ajv), key and value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { renumberSeqn } from '../../lib/inject/files.ts';
import { corpusMessages, corpusPresent } from '../support/corpus.ts';
import { contract } from '../support/contract.ts';
import { TEST_KAFKA } from '../support/env.ts';
import { deleteTopics } from './dispatch-support.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';

type State = Record<string, unknown> & { FLID: string; STATE_VERSION: number; UPDATED_AT: string };

/** The consumer rules of docs/consumers.md, and nothing else. */
class Consumer {
  seenEvents = new Set<number>();
  flights = new Map<string, State>();
  tombstones = new Map<string, number>(); // FLID → version of its deletion
  private newer(flid: string, v: number, at: string): boolean {
    const held = this.flights.get(flid);
    const tomb = this.tombstones.get(flid);
    if (tomb !== undefined && v <= tomb) return false;
    return !held || v > held.STATE_VERSION || (v === held.STATE_VERSION && at > held.UPDATED_AT);
  }
  onMsg(e: { EVENT_ID: number; FLID: string; STATE_VERSION: number; UPDATED_AT: string; DELETED?: boolean }) {
    if (this.seenEvents.has(e.EVENT_ID)) return; // rule 1
    this.seenEvents.add(e.EVENT_ID);
    if (e.DELETED && this.newer(e.FLID, e.STATE_VERSION, e.UPDATED_AT)) {
      this.flights.delete(e.FLID); // rule 3
      this.tombstones.set(e.FLID, e.STATE_VERSION);
    }
  }
  onSchd(batch: { SCHD: { RECS: number; FLTR: State[] } }) {
    expect(batch.SCHD.RECS).toBe(batch.SCHD.FLTR.length);
    for (const st of batch.SCHD.FLTR) if (this.newer(st.FLID, st.STATE_VERSION, st.UPDATED_AT)) this.flights.set(st.FLID, st); // rules 2, 4
  }
}

let s: TestServices;
const procs: Proc[] = [];
const run = randomUUID().slice(0, 8);
const topics = { MSGX_KAFKA_MSG_TOPIC: `e2e.${run}.msg`, MSGX_KAFKA_SCHD_TOPIC: `e2e.${run}.schd`, MSGX_KAFKA_PARTITIONS: '3' };

describe.runIf(corpusPresent)('end to end: inbox → six processes → Kafka consumer = GET /all/flights', () => {
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
  });
  afterAll(async () => {
    await stopAll(procs);
    await deleteTopics([topics.MSGX_KAFKA_MSG_TOPIC, topics.MSGX_KAFKA_SCHD_TOPIC]).catch(() => {});
    await s?.close();
    // the two topics of this run (created by the dispatchers) go with it
    const admin = new kafkajs.Kafka({ clientId: `e2e-${run}-admin`, brokers: [TEST_KAFKA], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const existing = new Set(await admin.listTopics());
      const mine = [topics.MSGX_KAFKA_MSG_TOPIC, topics.MSGX_KAFKA_SCHD_TOPIC].filter((t) => existing.has(t));
      if (mine.length) await admin.deleteTopics({ topics: mine });
    } finally {
      await admin.disconnect();
    }
  });

  it('a consumer applying the contract holds exactly the flights and states the api serves', async () => {
    let seqn = 800_000;
    const all = corpusMessages();
    const schd = all.filter((m) => m.xml.includes('<TYPE>SCHD</TYPE>'));
    const flops = all.filter((m) => m.xml.includes('<TYPE>FLOP</TYPE>') && !m.xml.includes('<STYP>FDEL</STYP>'));
    const fdel = all.filter((m) => m.xml.includes('<STYP>FDEL</STYP>'));
    const fixture = sisMessage({
      type: 'SCHD',
      styp: 'ADFT',
      body: `<SCHD><RECS>2</RECS>
        <FLTR><FLID>121112312</FLID><ALCD>CA</ALCD><FLNO>CA101</FLNO><MVIN>D</MVIN><SODT>15DEC031345</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>333</ACFT></FLTR>
        <FLTR><FLID>7610151</FLID><ALCD>MU</ALCD><FLNO>MU5101</FLNO><MVIN>A</MVIN><SODT>15DEC031100</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>321</ACFT></FLTR></SCHD>`,
    });
    for (const xml of [...schd.map((m) => m.xml), fixture, ...flops.map((m) => m.xml), ...fdel.map((m) => m.xml)]) await putInbox(s.inbox, renumberSeqn(xml, seqn++));
    const total = schd.length + 1 + flops.length + fdel.length;

    for (const name of ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch']) procs.push(startWorker(name, topics));
    const api = startWorker('api', topics);
    procs.push(api);
    await waitFor(
      'every message terminal',
      async () => {
        const rows = await procRows(s.db);
        return rows.length === total && rows.every((r) => !['PENDING', 'FAILED'].includes(r.state));
      },
      90_000,
      250,
    );
    await waitFor(
      'the outbox drained',
      async () => {
        const r = await s.pool.query(`select count(*)::int n from msg_event where target in ('msg', 'schd') and state <> 'SENT'`);
        return r.rows[0].n === 0;
      },
      90_000,
      250,
    );

    const kafka = new kafkajs.Kafka({ clientId: `e2e-${run}`, brokers: [TEST_KAFKA], logLevel: kafkajs.logLevel.NOTHING });
    const consumer = kafka.consumer({ groupId: `e2e-${run}` });
    const c = new Consumer();
    let received = 0;
    const expected = Number((await s.pool.query(`select count(*)::int n from msg_event where target in ('msg', 'schd')`)).rows[0].n);
    let schdStates = 0;
    const asyncapi = contract();
    const checked = { msg: 0, schd: 0 };
    const violations: string[] = [];
    await consumer.connect();
    await consumer.subscribe({ topics: [topics.MSGX_KAFKA_MSG_TOPIC, topics.MSGX_KAFKA_SCHD_TOPIC], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic, message }) => {
        const raw = message.value!.toString();
        const channel = topic === topics.MSGX_KAFKA_MSG_TOPIC ? 'msg' : 'schd';
        const key = message.key?.toString() ?? null;
        for (const p of asyncapi.check(channel, key, raw)) violations.push(`${channel} ${key}: ${p} in ${raw.slice(0, 300)}`);
        checked[channel]++;
        const v = JSON.parse(raw);
        if (topic === topics.MSGX_KAFKA_MSG_TOPIC) {
          expect(message.key!.toString()).toBe(v.FLID);
          c.onMsg(v);
          received++;
        } else {
          c.onSchd(v);
          schdStates += v.SCHD.RECS;
          received += v.SCHD.RECS;
        }
      },
    });
    try {
      await waitFor('every outbox row consumed', () => received >= expected, 60_000, 200);
    } finally {
      await consumer.disconnect();
    }
    expect(schdStates).toBeGreaterThan(0);
    expect(violations).toEqual([]);
    expect(checked.msg).toBeGreaterThanOrEqual(expected - schdStates);
    expect(checked.schd).toBeGreaterThan(0);

    const res = await fetch(`http://127.0.0.1:${api.port}/all/flights?limit=1000`);
    const body = (await res.json()) as { flights: State[] };
    const byFlid = (xs: State[]) => Object.fromEntries([...xs].sort((a, b) => a.FLID.localeCompare(b.FLID)).map((f) => [f.FLID, f]));
    expect(Object.keys(byFlid(body.flights)).sort()).toEqual(['121112312', '16', '7610151']); // 15 was deleted by the FDEL sample
    expect(byFlid([...c.flights.values()])).toEqual(byFlid(body.flights));
    expect(c.tombstones.get('15')).toBeGreaterThan(1);
  }, 240_000); // its own waits allow 90 + 90 + 60 s (a loaded machine needs more than the default 60 s)
});
