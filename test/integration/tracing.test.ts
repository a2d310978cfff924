// One trace per message, against a real trace backend the test starts itself (Zipkin's server,
// test/support/zipkin.ts): the gateway's processes run as `npm start` runs them, with tracing on
// (MSGX_TRACING=on, OTEL_TRACES_EXPORTER=zipkin). One message injected (a schedule of two flights:
// msg, schd and state records) → one trace holding spans of intake, pump, backfill and the three
// dispatchers; every Kafka record's traceparent names that trace (read with Kafka's console
// consumer); the reference consumer's span joins it; msg-dispatch killed between a send and its
// SENT mark and started again sends the record again in the same trace; the api's message trace
// names the trace and links to its page at the backend (msgx.tracing.link). Without Java: SKIPPED.
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contract } from '../support/contract.ts';
import { TEST_KAFKA } from '../support/env.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { consoleConsume } from '../support/kafka-tools.ts';
import { startWorker, stopAll, waitFor, waitForLog, type Proc } from '../support/processes.ts';
import { openServices, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { startZipkin, zipkinMissing, type Zipkin, type ZipkinSpan } from '../support/zipkin.ts';
import { deleteTopics } from './dispatch-support.ts';

const missing = zipkinMissing();
if (missing) console.warn(`SKIPPED(${missing}): the tracing test needs Java to run Zipkin's server`);

const run = randomUUID().slice(0, 8);
const topics = { MSGX_KAFKA_MSG_TOPIC: `trace.${run}.msg`, MSGX_KAFKA_SCHD_TOPIC: `trace.${run}.schd`, MSGX_KAFKA_STATE_TOPIC: `trace.${run}.state` };
const TRACE_ID = /^00-([0-9a-f]{32})-[0-9a-f]{16}-01$/;
const PROCESSES = ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch'];
const CONSUMER = `trace-example-${run}`;

let s: TestServices;
let zipkin: Zipkin;
let api: Proc;
const procs: Proc[] = [];
const dir = mkdtempSync(join(tmpdir(), 'msgx-tracing-'));
let env: Record<string, string>;
let seqn = 710_000;

const q = async <T>(text: string, params: unknown[] = []) => (await s.pool.query(text, params)).rows as T[];
const traceOf = (ctx: string | null) => (ctx ? TRACE_ID.exec(ctx.split(' ')[0])?.[1] : undefined);
const asyncapi = contract();
const channel = (topic: string) =>
  Object.entries(topics)
    .find(([, t]) => t === topic)![0]
    .split('_')[2]
    .toLowerCase() as 'msg' | 'schd' | 'state';
const services = (spans: ZipkinSpan[]) => [...new Set(spans.map((x) => x.localEndpoint?.serviceName ?? '?'))].sort();

/** Waits until the message is terminal, backfilled and every outbox row of it SENT; returns its trace ID. */
async function settled(msgId: number): Promise<string> {
  await waitFor(
    `message ${msgId} applied, backfilled, published`,
    async () => {
      const [p] = await q<{ state: string; backfill_at: Date | null }>('select state, backfill_at from proc_state where msg_id = $1', [msgId]);
      const open = await q<{ n: number }>(`select count(*)::int n from msg_event where state <> 'SENT'`);
      return p?.state === 'SUCCEEDED' && p.backfill_at !== null && open[0].n === 0;
    },
    120_000,
    250,
  );
  const [p] = await q<{ trace_context: string | null }>('select trace_context from proc_state where msg_id = $1', [msgId]);
  const id = traceOf(p.trace_context);
  if (!id) throw new Error(`message ${msgId} has no sampled trace context: ${p.trace_context}`);
  return id;
}

/** The trace as Zipkin holds it once every name in `want` has a span there (export is batched, each second). */
async function traceWith(traceId: string, want: (spans: ZipkinSpan[]) => boolean): Promise<ZipkinSpan[]> {
  let last: ZipkinSpan[] = [];
  try {
    return await waitFor('the trace complete in Zipkin', async () => ((last = await zipkin.trace(traceId)), want(last) ? last : false), 60_000, 500);
  } catch (e) {
    const warned = procs.flatMap((p) => p.logs.filter((l) => /"level":(40|50|60)/.test(l)).map((l) => `${p.name}: ${l.slice(0, 400)}`));
    throw new Error(
      `${(e as Error).message}; Zipkin holds ${last.length} span(s): ${last.map((x) => `${x.localEndpoint?.serviceName}:${x.name}`).join(', ')}; warnings: ${warned.slice(-10).join('\n')}`,
    );
  }
}

function startConsumer(): { logs: string[]; stop: () => Promise<void> } {
  const child = spawn(process.execPath, ['examples/consumer/consumer.ts'], {
    env: { ...process.env, KAFKA_BROKERS: TEST_KAFKA, STATE_TOPIC: topics.MSGX_KAFKA_STATE_TOPIC, TABLE_FILE: join(dir, 'table.json'), GROUP_ID: CONSUMER, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  child.stdout!.on('data', (b: Buffer) => logs.push(...b.toString().split('\n').filter(Boolean)));
  child.stderr!.on('data', (b: Buffer) => logs.push(...b.toString().split('\n').filter(Boolean)));
  const exited = new Promise((r) => child.on('exit', r));
  const stop = async () => {
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
  };
  return { logs, stop };
}

describe.skipIf(missing)('one trace per message, from the inbox to the consumer (Zipkin)', () => {
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
    zipkin = await startZipkin();
    env = {
      ...topics,
      MSGX_TRACING: 'on',
      MSGX_TRACING_LINK: `${zipkin.url}/zipkin/traces/{traceId}`,
      OTEL_TRACES_EXPORTER: 'zipkin',
      OTEL_EXPORTER_ZIPKIN_ENDPOINT: zipkin.spansEndpoint,
      OTEL_TRACES_SAMPLER: 'always_on',
    };
    for (const name of PROCESSES) procs.push(startWorker(name, env));
    api = startWorker('api', env);
    procs.push(api);
    for (const p of procs.filter((x) => x !== api)) await waitForLog(p, 'tracing on (OpenTelemetry)', `${p.name} tracing`, 60_000);
  });
  afterAll(async () => {
    await stopAll(procs);
    await zipkin?.stop();
    await deleteTopics(Object.values(topics)).catch(() => {});
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('one message → one trace with spans of six processes; every record names it; the consumer joins it', async () => {
    const msgId = await putInbox(s.inbox, bigSnapshot(2, 7100, { seqn: ++seqn }));
    const traceId = await settled(msgId);

    // the context travelled with the data: every outbox row of the message carries its trace
    const rows = await q<{ target: string; trace_context: string | null }>('select target, trace_context from msg_event order by event_id');
    expect(rows.map((r) => r.target).sort()).toEqual(['msg', 'msg', 'schd', 'schd', 'state', 'state']);
    expect(rows.map((r) => traceOf(r.trace_context))).toEqual(rows.map(() => traceId));

    // each record's traceparent names the trace, as Kafka's own console consumer prints it
    for (const topic of Object.values(topics)) {
      const records = await consoleConsume(topic, TEST_KAFKA);
      console.log(
        `kafka-console-consumer --property print.headers=true --topic ${topic}:\n${records
          .map(
            (r) =>
              `  ${Object.entries(r.headers)
                .map(([k, v]) => `${k}:${v}`)
                .join(',')}\t${r.key}`,
          )
          .join('\n')}`,
      );
      expect(records.length).toBeGreaterThan(0);
      for (const r of records) expect(TRACE_ID.exec(r.headers.traceparent ?? '')?.[1], `${topic} ${r.key}`).toBe(traceId);
      // and the records, headers included, are what docs/asyncapi.yaml says
      for (const r of records) expect(asyncapi.check(channel(topic), r.key, r.value, r.headers)).toEqual([]);
    }

    // the reference consumer continues the trace from the state records' headers
    const consumer = startConsumer();
    await waitFor('the consumer read the state records', () => consumer.logs.some((l) => l.includes('"msg":"batch"')), 60_000, 200);
    await consumer.stop();

    const spans = await traceWith(traceId, (x) => services(x).length >= 7 && x.some((y) => y.name.startsWith('process')));
    expect(new Set(spans.map((x) => x.traceId))).toEqual(new Set([traceId]));
    expect(services(spans)).toEqual([CONSUMER, ...PROCESSES.map((p) => `msgx-${p}`)].sort());
    const named = (service: string, name: string) => spans.filter((x) => x.localEndpoint?.serviceName === `msgx-${service}` && x.name === name);
    const [take] = named('intake', 'intake take');
    expect(take.parentId).toBeUndefined(); // the root
    const [apply] = named('pump', 'pump apply');
    expect(apply.parentId).toBe(take.id);
    expect(apply.tags).toMatchObject({ 'msgx.msg_id': String(msgId), 'msgx.type': 'SCHD', 'msgx.styp': 'DNLD', 'msgx.outcome': 'SUCCEEDED' });
    expect(apply.annotations?.map((a) => a.value)).toEqual(['decode', 'business', 'mirror', 'terminal']);
    expect(named('backfill', 'backfill')[0].tags?.['msgx.outcome']).toBe('MARKED');
    for (const [p, n] of [
      ['msg-dispatch', 2],
      ['schd-dispatch', 1],
      ['state-dispatch', 2],
    ] as const) {
      const sends = spans.filter((x) => x.localEndpoint?.serviceName === `msgx-${p}`);
      expect(sends.length, p).toBe(n);
      for (const x of sends) expect([x.kind, x.parentId, x.tags?.['msgx.outcome']]).toEqual(['PRODUCER', take.id, 'SENT']);
    }
    const processed = spans.filter((x) => x.localEndpoint?.serviceName === CONSUMER);
    expect(processed.length).toBe(2);
    const stateSends = new Set(spans.filter((x) => x.localEndpoint?.serviceName === 'msgx-state-dispatch').map((x) => x.id));
    for (const x of processed) expect(stateSends.has(x.parentId!)).toBe(true);
    // the console's message trace names the trace and links to its page at the backend
    const view = (await (await fetch(`http://127.0.0.1:${api.port}/ops/messages/${msgId}`, { headers: { authorization: 'Bearer test-token' } })).json()) as { traceId: string; traceUrl: string };
    expect(view).toMatchObject({ traceId, traceUrl: `${zipkin.url}/zipkin/traces/${traceId}` });
    expect((await fetch(view.traceUrl)).status).toBe(200);
    // no message content on a span: only IDs, kinds, outcomes
    expect(JSON.stringify(spans)).not.toContain('<FLTR>');
    console.log(
      `Zipkin /api/v2/trace/${traceId}:\n${spans
        .sort((a, b) => a.timestamp - b.timestamp)
        .map((x) => `  ${x.localEndpoint?.serviceName}\t${x.name}\t${x.kind ?? 'INTERNAL'}\tid=${x.id} parent=${x.parentId ?? '-'}\t${JSON.stringify(x.tags ?? {})}`)
        .join('\n')}`,
    );
  }, 300_000);

  it('a dispatcher killed between a send and its SENT mark continues the trace after its restart', async () => {
    const i = procs.findIndex((p) => p.name === 'msg-dispatch');
    procs[i].child.kill('SIGTERM');
    await procs[i].exited;
    const crashing = startWorker('msg-dispatch', { ...env, MSGX_TEST_CRASH_AT: 'dispatch.after-send' });
    procs.push(crashing);
    const msgId = await putInbox(s.inbox, sisMessage({ type: 'FLOP', styp: 'STND', seqn: ++seqn, body: '<FLOP><FLID>7100</FLID><FFID>X</FFID><STND>K9</STND></FLOP>' }));
    await waitFor('msg-dispatch killed after its send', () => crashing.child.signalCode === 'SIGKILL', 60_000, 100);
    const [pending] = await q<{ state: string; event_id: number }>(`select state, event_id from msg_event where target = 'msg' and payload->>'MSG_ID' = $1`, [String(msgId)]);
    expect(pending.state).toBe('PENDING'); // sent, never marked
    procs.push(startWorker('msg-dispatch', env));
    const traceId = await settled(msgId);

    // the record went out twice (at least once), both times in the message's trace
    const records = (await consoleConsume(topics.MSGX_KAFKA_MSG_TOPIC, TEST_KAFKA)).filter((r) => r.value?.includes(`"EVENT_ID":${pending.event_id},`));
    expect(records.length).toBe(2);
    for (const r of records) expect(TRACE_ID.exec(r.headers.traceparent ?? '')?.[1]).toBe(traceId);
    const spans = await traceWith(traceId, (x) => x.some((y) => y.localEndpoint?.serviceName === 'msgx-msg-dispatch'));
    const [take] = spans.filter((x) => x.name === 'intake take');
    const sends = spans.filter((x) => x.localEndpoint?.serviceName === 'msgx-msg-dispatch');
    // the killed instance's span never ended (never exported); the restarted one's continues the trace
    expect(sends.map((x) => [x.parentId, x.tags?.['msgx.outcome'], x.tags?.['msgx.event_id']])).toEqual([[take.id, 'SENT', String(pending.event_id)]]);
  }, 300_000);
});
