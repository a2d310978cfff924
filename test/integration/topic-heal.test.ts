// The derived topics heal themselves (state topic) or are reported (msg topic), through the real
// processes with messages flowing (a snapshot, then FLOPs fed all along): the state topic
// deleted; recreated empty; recreated with cleanup.policy=delete; the msg topic deleted. Each
// case prints the seconds to detection and to the healed state. After each state case the last
// record per key, read with Kafka's own console consumer, equals GET /all/flights (tombstones for
// the deleted flights); after the msg case the loss is named in /healthz, dispatch-resend puts the
// lost range back, the condition clears, and every event of the outbox is on the topic at least
// once, the last copies in EVENT_ID order per FLID; no event burnt an attempt or went DEAD.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contract } from '../support/contract.ts';
import { TEST_KAFKA, testEnv } from '../support/env.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { consoleConsume, type ConsoleRecord } from '../support/kafka-tools.ts';
import { metricValue, runCli, startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { deleteTopics } from './dispatch-support.ts';

type Flight = Record<string, unknown> & { FLID: string; STATE: string; STATE_VERSION: number };

let s: TestServices;
const procs: Proc[] = [];
const run = randomUUID().slice(0, 8);
const env = {
  MSGX_KAFKA_MSG_TOPIC: `heal.${run}.msg`,
  MSGX_KAFKA_SCHD_TOPIC: `heal.${run}.schd`,
  MSGX_KAFKA_STATE_TOPIC: `heal.${run}.state`,
  MSGX_KAFKA_PARTITIONS: '3',
  MSGX_DISPATCH_RESEED_GAP: '5s', // each case waits out the gap since the last re-seed (below)
};
const RESEED_GAP_MS = 5_000;
const STATE = env.MSGX_KAFKA_STATE_TOPIC;
const MSG = env.MSGX_KAFKA_MSG_TOPIC;
const measured: string[] = [];

let seqn = 900_000;
let put = 0;
const flop = (styp: string, f: number, inner: string) => sisMessage({ type: 'FLOP', styp, seqn: ++seqn, body: `<FLOP><FLID>${f}</FLID><FFID>X</FFID>${inner}</FLOP>` });
async function inbox(xml: string) {
  await putInbox(s.inbox, xml);
  put++;
}

/** FLOPs on 40 flights, one every 100 ms, until stopped. */
function feed(): () => Promise<void> {
  let on = true;
  let i = 0;
  const done = (async () => {
    while (on) {
      await inbox(flop('STND', 1000 + (i % 40), `<STND>F${run}${i++}</STND>`));
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return async () => {
    on = false;
    await done; // a second call just awaits the same end
  };
}

const admin = () => new kafkajs.Kafka({ clientId: `heal-${run}`, brokers: [TEST_KAFKA], logLevel: kafkajs.logLevel.NOTHING }).admin();
async function withAdmin<T>(f: (a: kafkajs.Admin) => Promise<T>): Promise<T> {
  const a = admin();
  await a.connect();
  try {
    return await f(a);
  } finally {
    await a.disconnect();
  }
}

/** Deletes the topic and creates it again at once with these settings. Returns false when it existed again before (the gateway re-created it first). */
async function recreate(topic: string, configs: Record<string, string>): Promise<boolean> {
  return withAdmin(async (a) => {
    await a.deleteTopics({ topics: [topic], timeout: 10_000 });
    let created = false;
    for (let i = 0; i < 40 && !created; i++) {
      try {
        created = await a.createTopics({
          waitForLeaders: false,
          topics: [{ topic, numPartitions: 3, replicationFactor: 1, configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
        });
        if (!created) break;
      } catch (e) {
        if ((e as { type?: string }).type !== 'TOPIC_ALREADY_EXISTS') throw e;
        await new Promise((r) => setTimeout(r, 50)); // the deletion is still completing, or the gateway was first
      }
    }
    await waitFor('the topic answers', async () => (await a.fetchTopicOffsets(topic)).length === 3, 10_000, 100);
    return created;
  });
}

async function policyOf(topic: string): Promise<string | undefined> {
  return withAdmin(async (a) => {
    const d = await a.describeConfigs({ resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ['cleanup.policy'] }], includeSynonyms: false });
    return d.resources[0].configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue;
  });
}

async function healthz(p: Proc): Promise<{ status: number; body: { conditions?: { name: string; reason: string }[]; reason?: string } }> {
  const res = await fetch(`http://127.0.0.1:${p.port}/healthz`);
  return { status: res.status, body: (await res.json()) as never };
}

/** Time of the first log line of `p` at or after `since` containing `text` (pino ISO time). */
function logAt(p: Proc, text: string, since: number): number | undefined {
  for (const l of p.logs) {
    if (!l.includes(text)) continue;
    try {
      const t = Date.parse((JSON.parse(l) as { time: string }).time);
      if (t >= since) return t;
    } catch {
      // not a JSON line
    }
  }
  return undefined;
}

async function allFlights(port: number): Promise<Flight[]> {
  const flights: Flight[] = [];
  let cursor: string | null = null;
  do {
    const res = await fetch(`http://127.0.0.1:${port}/all/flights?limit=1000&includeDeleted=true${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { flights: Flight[]; nextCursor: string | null };
    flights.push(...body.flights);
    cursor = body.nextCursor;
  } while (cursor);
  return flights;
}

const count = async (q: string) => Number((await s.pool.query(q)).rows[0].n);

async function drained() {
  await waitFor(
    'every message terminal and the msg and state outbox drained',
    async () => {
      const rows = await procRows(s.db);
      if (rows.length !== put || rows.some((r) => ['PENDING', 'FAILED'].includes(r.state))) return false;
      return (await count(`select count(*)::int n from msg_event where target in ('msg', 'state') and state <> 'SENT'`)) === 0;
    },
    120_000,
    250,
  );
}

/** The state topic's last record per key = GET /all/flights (values, versions, tombstones). */
async function stateTopicEqualsFlights(api: Proc) {
  const flights = await allFlights(api.port);
  const records = await consoleConsume(STATE, TEST_KAFKA, { idleMs: 8_000 });
  const asyncapi = contract();
  expect(records.flatMap((r) => asyncapi.check('state', r.key, r.value, r.headers).map((p) => `${r.key}: ${p}`))).toEqual([]);
  const last = new Map<string, ConsoleRecord>();
  const versions = new Map<string, number>();
  for (const r of records) {
    const v = Number(r.headers.STATE_VERSION);
    expect(v, r.key).toBeGreaterThanOrEqual(versions.get(r.key) ?? 0);
    versions.set(r.key, v);
    last.set(r.key, r);
  }
  expect([...last.keys()].sort()).toEqual(flights.map((f) => f.FLID).sort());
  for (const f of flights) {
    const r = last.get(f.FLID)!;
    expect(Number(r.headers.STATE_VERSION), f.FLID).toBe(f.STATE_VERSION);
    if (f.STATE === 'ACTIVE') expect(JSON.parse(r.value!), f.FLID).toEqual(f);
    else expect(r.value, f.FLID).toBeNull();
  }
  return { records: records.length, flights: flights.length };
}

describe('derived topics heal (state) or are reported and resent (msg), with messages flowing', () => {
  let api: Proc;
  let stateProc: Proc;
  let msgProc: Proc;

  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
    await inbox(bigSnapshot(1200, 1000, { seqn: ++seqn }));
    for (const f of [1003, 1004, 1100]) await inbox(flop('FDEL', f, '<FDEL></FDEL>'));
    for (const name of ['intake', 'pump', 'backfill']) procs.push(startWorker(name, env));
    msgProc = startWorker('msg-dispatch', env);
    stateProc = startWorker('state-dispatch', env);
    api = startWorker('api', env);
    procs.push(msgProc, stateProc, api);
    await drained();
    for (const p of [stateProc, msgProc]) await waitFor(`${p.name} ready`, async () => (await healthz(p)).status === 200, 30_000, 250);
  }, 180_000);

  afterAll(async () => {
    await stopAll(procs);
    // TOPIC_HEAL_LOGS=<dir>: every process's log lines, to look at timings
    if (process.env.TOPIC_HEAL_LOGS) for (const [i, p] of procs.entries()) writeFileSync(`${process.env.TOPIC_HEAL_LOGS}/${i}-${p.name}.log`, `${p.logs.join('\n')}\n`);
    await deleteTopics([env.MSGX_KAFKA_MSG_TOPIC, env.MSGX_KAFKA_SCHD_TOPIC, env.MSGX_KAFKA_STATE_TOPIC]).catch(() => {});
    await s?.close();
    console.log(`\ntopic-heal measurements:\n  ${measured.join('\n  ')}\n`);
  });

  /** Disrupt the state topic while FLOPs flow; measure detection and the re-seed; compare with Kafka's console consumer. */
  async function stateCase(name: string, disrupt: () => Promise<string>) {
    // at most one re-seed starts per msgx.dispatch.reseed-gap: the disruption comes after the gap since the
    // last one began, so that each case times its own detection, not the gap (the cases used to be
    // that far apart only because the console consumer waited out 8 s of idle time)
    const last = Math.max(0, ...stateProc.logs.map((l) => (l.includes('state topic re-seed started') ? Date.parse((JSON.parse(l) as { time: string }).time) : 0)));
    await waitFor('the re-seed gap since the last re-seed start', () => Date.now() >= last + RESEED_GAP_MS + 1000, RESEED_GAP_MS + 5000, 250);
    const rebuildsBefore = (await metricValue(stateProc, 'msgx_mirror_rebuilds_total')) ?? 0;
    const stop = feed();
    try {
      await stateCaseFlowing(name, disrupt, stop, rebuildsBefore);
    } finally {
      await stop();
    }
  }

  async function stateCaseFlowing(name: string, disrupt: () => Promise<string>, stop: () => Promise<void>, rebuildsBefore: number) {
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = Date.now();
    const how = await disrupt();
    let seen503: number | undefined;
    let behindGauge = false;
    const started = await waitFor(
      `${name}: detected`,
      async () => {
        const h = await healthz(stateProc);
        if (h.status === 503 && h.body.conditions?.some((c) => c.name === 'state-topic')) seen503 ??= Date.now();
        if ((await metricValue(stateProc, 'msgx_mirror_behind')) === 1) behindGauge = true;
        return logAt(stateProc, 'state topic re-seed started', t0);
      },
      60_000,
      200,
    );
    const done = await waitFor(`${name}: re-seed done`, async () => logAt(stateProc, 'state topic re-seed done', t0), 120_000, 200);
    await stop();
    await drained();
    await waitFor(`${name}: ready again`, async () => (await healthz(stateProc)).status === 200, 30_000, 250);
    expect(seen503 ?? started, 'the condition was named in /healthz or the re-seed began at once').toBeDefined();
    expect(behindGauge || seen503 === undefined).toBe(true);
    expect(await metricValue(stateProc, 'msgx_mirror_behind')).toBe(0);
    expect(await metricValue(stateProc, 'msgx_mirror_rebuilds_total')).toBeGreaterThanOrEqual(rebuildsBefore + 1);
    expect(await policyOf(STATE)).toBe('compact');
    // one line when the re-seed starts, one when it ends
    const lines = (text: string) => stateProc.logs.filter((l) => l.includes(text) && Date.parse((JSON.parse(l) as { time: string }).time) >= t0).length;
    expect([lines('state topic re-seed started'), lines('state topic re-seed done')]).toEqual([1, 1]);
    const detect = (Math.min(started, seen503 ?? started) - t0) / 1000;
    const healed = (done - t0) / 1000;
    const cmp = await stateTopicEqualsFlights(api);
    measured.push(`state topic ${name} (${how}): detected ${detect.toFixed(1)} s, re-seed done ${healed.toFixed(1)} s after the disruption; ${cmp.records} records, ${cmp.flights} flights`);
    expect(detect).toBeLessThan(30);
    expect(await count(`select count(*)::int n from msg_event where state = 'DEAD'`)).toBe(0);
  }

  it('state topic deleted: re-created and re-seeded', async () => {
    await stateCase('deleted', async () => {
      await deleteTopics([STATE]);
      return 'deleteTopics';
    });
  }, 300_000);

  it('state topic recreated empty: re-seeded', async () => {
    await stateCase('recreated empty', async () => ((await recreate(STATE, { 'cleanup.policy': 'compact' })) ? 'deleted and created again, empty' : 'deleted; the gateway re-created it first'));
  }, 300_000);

  it('state topic recreated with cleanup.policy=delete: policy set back, re-seeded', async () => {
    await stateCase('recreated with cleanup.policy=delete', async () => {
      if (await recreate(STATE, { 'cleanup.policy': 'delete' })) return 'deleted and created again with cleanup.policy=delete';
      // the gateway won the race: set the wrong policy on its new topic instead
      await withAdmin((a) =>
        a.alterConfigs({ validateOnly: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: STATE, configEntries: [{ name: 'cleanup.policy', value: 'delete' }] }] }),
      );
      return 'deleted; re-created by the gateway, then set to cleanup.policy=delete';
    });
  }, 300_000);

  it('state topic deleted while state-dispatch was stopped: not ready at start until the re-seed is done', async () => {
    stateProc.child.kill('SIGTERM');
    await stateProc.exited;
    await deleteTopics([STATE]);
    const stop = feed();
    try {
      const t0 = Date.now();
      stateProc = startWorker('state-dispatch', env);
      procs.push(stateProc);
      const statuses: { at: number; status: number }[] = [];
      await waitFor(
        'state-dispatch ready',
        async () => {
          const h = await healthz(stateProc).catch(() => null);
          if (h) statuses.push({ at: Date.now(), status: h.status });
          return h?.status === 200;
        },
        120_000,
        100,
      );
      const started = logAt(stateProc, 'state topic re-seed started', t0);
      const done = logAt(stateProc, 'state topic re-seed done', t0);
      expect(started, 'the first check at start found the topic behind').toBeDefined();
      expect(done).toBeDefined();
      const firstOk = statuses.find((x) => x.status === 200)!.at;
      expect(statuses.filter((x) => x.status === 503).length, 'answered 503 before').toBeGreaterThan(0);
      expect(firstOk).toBeGreaterThanOrEqual(done!);
      await stop();
      await drained();
      const cmp = await stateTopicEqualsFlights(api);
      measured.push(
        `state topic deleted while state-dispatch was down: started, /healthz 503 until the re-seed was done (${((done! - t0) / 1000).toFixed(1)} s after the start), first 200 at ${((firstOk - t0) / 1000).toFixed(1)} s; ${cmp.records} records, ${cmp.flights} flights`,
      );
    } finally {
      await stop();
    }
  }, 300_000);

  it('msg topic deleted: condition, topic re-created, dispatch-resend puts the lost range back', async () => {
    const stop = feed();
    try {
      await msgCase(stop);
    } finally {
      await stop();
    }
  }, 300_000);

  async function msgCase(stop: () => Promise<void>) {
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = Date.now();
    await deleteTopics([MSG]);
    const cond = await waitFor(
      'msg-topic condition',
      async () => {
        const h = await healthz(msgProc);
        return h.status === 503 ? h.body.conditions?.find((c) => c.name === 'msg-topic') : undefined;
      },
      60_000,
      200,
    );
    const detect = (Date.now() - t0) / 1000;
    expect(cond.reason).toContain('npm run dispatch-resend -- --from');
    expect(await metricValue(msgProc, 'msgx_mirror_behind')).toBeGreaterThanOrEqual(1);
    const loss = (await s.pool.query('select first_event_id, last_event_id, events from topic_loss where resolved_at is null')).rows[0] as {
      first_event_id: string;
      last_event_id: string;
      events: number;
    };
    expect(loss.events).toBeGreaterThan(0);
    // new events flow into the re-created topic meanwhile, no attempt burnt
    await waitFor(
      'new events SENT on the re-created topic',
      async () => (await count(`select count(*)::int n from msg_event where target = 'msg' and state = 'SENT' and kafka_offset is not null`)) > 0,
      30_000,
      250,
    );
    await new Promise((r) => setTimeout(r, 2000));
    const still = await healthz(msgProc);
    expect(still.status, 'the loss stays open until the operator acts').toBe(503);

    const t1 = Date.now();
    const r = await cli(['--from', String(loss.first_event_id)]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^resent \d+ event\(s\) of \d+ flight\(s\), EVENT_ID \d+\.\.\d+; closed 1 loss\(es\)/);
    await waitFor('msg-topic condition cleared', async () => (await healthz(msgProc)).status === 200, 30_000, 200);
    const cleared = (Date.now() - t1) / 1000;
    await stop();
    await drained();
    const resent = (Date.now() - t1) / 1000;
    expect(await metricValue(msgProc, 'msgx_mirror_behind')).toBe(0);
    expect(await count(`select count(*)::int n from msg_event where target = 'msg' and (state <> 'SENT' or attempts > 1)`)).toBe(0);

    // every event of the outbox is on the topic at least once; per FLID the last copies are in EVENT_ID order
    const outbox = (await s.pool.query(`select event_id from msg_event where target = 'msg' order by event_id`)).rows.map((x) => Number(x.event_id));
    const records = await consoleConsume(MSG, TEST_KAFKA, { idleMs: 8_000 });
    const onTopic = records.map((x) => ({ flid: x.key, id: Number((JSON.parse(x.value!) as { EVENT_ID: number }).EVENT_ID) }));
    const ids = new Set(onTopic.map((x) => x.id));
    expect(outbox.filter((id) => !ids.has(id))).toEqual([]);
    // (records of one FLID share a partition: the console consumer keeps their order)
    const lastPos = new Map<number, number>();
    onTopic.forEach((x, i) => lastPos.set(x.id, i));
    const byFlid = new Map<string, number[]>();
    onTopic.forEach((x, i) => {
      if (lastPos.get(x.id) === i) byFlid.set(x.flid, [...(byFlid.get(x.flid) ?? []), x.id]);
    });
    for (const [flid, seq] of byFlid) expect(seq, flid).toEqual([...seq].sort((a, b) => a - b));
    measured.push(
      `msg topic deleted: condition in /healthz ${detect.toFixed(1)} s after the deletion (${loss.events} sent events lost, EVENT_ID ${loss.first_event_id}..${loss.last_event_id}); after dispatch-resend the condition cleared in ${cleared.toFixed(1)} s, everything resent in ${resent.toFixed(1)} s; ${records.length} records for ${outbox.length} events`,
    );
    expect(detect).toBeLessThan(30);
  }

  it('dispatch-resend: a range beyond retention is refused; bad usage exits 2', async () => {
    const low = Number((await s.pool.query(`select min(event_id) as n from msg_event where target = 'msg'`)).rows[0].n);
    await s.pool.query(`delete from msg_event where target = 'msg' and event_id = $1`, [low]); // as the dispatch retention would
    const r = await cli(['--from', String(low)]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`EVENT_ID ${low} is beyond retention`);
    const bad = await cli(['--to', '5']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/^dispatch-resend: --to needs --from\n/);
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('usage: npm run dispatch-resend');
    const ack = await cli(['--acknowledge']);
    expect(ack.code, 'nothing open: nothing done').toBe(1);
    expect(ack.out).toBe('resent nothing; closed 0 loss(es)\n');
  }, 60_000);
});

function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return runCli(process.execPath, ['scripts/dispatch-resend.ts', ...args], { ...process.env, ...testEnv(env) });
}
