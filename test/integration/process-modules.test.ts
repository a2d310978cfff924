// Each process loads the drivers of its own duty only (docs/decisions.md "Footprint"): a driver
// loaded by a process that never uses it costs every start its CPU (ioredis ≈ 0.1 s) and the
// process its memory at rest. Each worker is started through its entry point with a resolve hook
// (test/support/module-report.mjs) and asked once it is ready which packages it loaded. Tracing
// off (msgx.tracing, the default) loads nothing of OpenTelemetry's SDK in any process; on, the pump loads it.
import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openEmptyServices, type TestServices } from '../support/services.ts';
import { TEST_KAFKA } from '../support/env.ts';
import { deleteTopics } from './dispatch-support.ts';

const HOOK = pathToFileURL(new URL('../support/module-report.mjs', import.meta.url).pathname).href;

/** Per process, drivers it must never load (what its duty needs is loaded on first use). */
const NEVER: Record<string, string[]> = {
  intake: ['ioredis', 'kafkajs', 'fastify'],
  pump: ['fastify'],
  backfill: ['ioredis', 'kafkajs', 'fastify'],
  api: ['ioredis', 'kafkajs'],
  retention: ['kafkajs', 'fastify'],
  'msg-dispatch': ['mysql2', 'ioredis', 'fastify'],
  'schd-dispatch': ['mysql2', 'ioredis', 'fastify'],
  'state-dispatch': ['mysql2', 'ioredis', 'fastify'],
};

/** Topics of this file's own (the dispatchers create them at start; deleted afterwards). */
const run = randomUUID().slice(0, 8);
const topics = { MSGX_KAFKA_MSG_TOPIC: `modules.${run}.msg`, MSGX_KAFKA_SCHD_TOPIC: `modules.${run}.schd`, MSGX_KAFKA_STATE_TOPIC: `modules.${run}.state` };

const procs: Proc[] = [];
let s: TestServices;
// empty stores: a process whose restore check finds Redis ahead of Postgres (another file's flights) is held, not ready
beforeAll(async () => {
  s = await openEmptyServices();
});
afterAll(async () => {
  await stopAll(procs);
  await deleteTopics(Object.values(topics));
  await s?.close();
});

const OTEL = (loaded: Set<string>) => [...loaded].filter((d) => d.startsWith('@opentelemetry/')).sort();

/** Started with the module hook, ready: the packages it loaded. */
async function loadedBy(name: string, env: Record<string, string> = {}): Promise<Set<string>> {
  const p = startWorker(name, { ...topics, ...env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${HOOK}`.trim() });
  procs.push(p);
  await waitFor(`${name} ready`, async () => (await fetch(`http://127.0.0.1:${p.port}/healthz`, { signal: AbortSignal.timeout(3000) })).status === 200, 60_000, 250).catch((e: Error) => {
    throw new Error(
      `${e.message}\n${p.logs
        .filter((l) => !l.startsWith('module-report '))
        .slice(-10)
        .join('\n')}`,
    );
  });
  return packages(p);
}

const packages = (p: Proc) => new Set(p.logs.flatMap((l) => (l.startsWith('module-report ') ? [/\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(l)?.[1] ?? ''] : [])));

describe('the drivers each process loads', () => {
  it.each(Object.entries(NEVER))(
    '%s, ready, has loaded none of %j',
    async (name, never) => {
      const loaded = await loadedBy(name);
      expect(loaded.has('pg')).toBe(true); // the hook saw the process's packages
      expect(never.filter((d) => loaded.has(d))).toEqual([]);
      // tracing off: nothing of OpenTelemetry's SDK; its API facade (no-op without an SDK) was
      // loaded before tracing existed, by prom-client's process_cpu metrics
      expect(OTEL(loaded).filter((d) => d !== '@opentelemetry/api')).toEqual([]);
    },
    90_000,
  );

  it('with MSGX_TRACING=on the pump loads OpenTelemetry (the check above is not vacuous)', async () => {
    const loaded = await loadedBy('pump', { MSGX_TRACING: 'on', OTEL_TRACES_EXPORTER: 'none' });
    expect(OTEL(loaded)).toEqual(expect.arrayContaining(['@opentelemetry/api', '@opentelemetry/core', '@opentelemetry/resources', '@opentelemetry/sdk-trace']));
  }, 90_000);

  // the dispatchers create their topics at start: this file's own, never the installation's defaults on the machine's broker
  it("the dispatchers ran on this file's own topics", async () => {
    const admin = new kafkajs.Kafka({ clientId: 'process-modules-test', brokers: [TEST_KAFKA], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      const existing = new Set(await admin.listTopics());
      expect(Object.values(topics).filter((t) => !existing.has(t))).toEqual([]);
    } finally {
      await admin.disconnect();
    }
  });
});
