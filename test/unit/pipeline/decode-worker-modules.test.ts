// What the pump's decode worker loads (lib/app/decode-worker.ts; docs/decisions.md "Footprint"):
// the handler registry and the decoders, never the drivers or the metrics. A snapshot gets a worker
// of its own, so every module the worker loads is paid again before each snapshot is decoded, and
// the ordinary worker keeps its modules in the pump's memory at rest. The worker is started here as
// the pump starts it, with a module-resolution hook that reports every module it loads.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { slices } from '../../../lib/core/config.ts';
import { testConfig } from '../../support/env.ts';

// in the worker thread only: post each resolved URL to the parent through a broadcast channel, and
// answer 'flush' with 'flushed' on it (one sender's messages arrive in order: every URL posted before)
const HOOK = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from 'node:module';
import { isMainThread } from 'node:worker_threads';
const seen = new BroadcastChannel('decode-worker-modules');
if (!isMainThread) {
  registerHooks({ resolve(spec, ctx, next) { const r = next(spec, ctx); seen.postMessage(r.url); return r; } });
  seen.onmessage = (e) => { if (e.data === 'flush') seen.postMessage('flushed'); };
}
seen.unref();
`)}`;

describe('the decode worker', () => {
  it('answers ready having loaded neither pg, prom-client, mysql2, ioredis nor kafkajs, nor lib/db or lib/runtime/metrics.ts', async () => {
    const config = testConfig();
    const urls: string[] = [];
    const channel = new BroadcastChannel('decode-worker-modules');
    let flushed: () => void = () => {};
    channel.onmessage = (e) => {
      const data = String((e as MessageEvent).data);
      if (data === 'flushed') flushed();
      else if (data !== 'flush') urls.push(data);
    };
    const worker = new Worker(new URL('../../../lib/app/decode-worker.ts', import.meta.url), {
      workerData: { settings: { airport: slices(config).airport, includeDayBoundary: true }, registry: {} },
      execArgv: [...process.execArgv, '--import', HOOK],
    });
    try {
      const ready = await new Promise((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      expect(ready).toEqual({ ready: true });
      // the last URLs may still be in the channel: ask the worker, whose answer comes after them
      await new Promise<void>((resolve) => {
        flushed = resolve;
        channel.postMessage('flush');
      });
      const project = urls.filter((u) => u.startsWith('file:')).map((u) => u.replace(/^.*?\/(lib|node_modules)\//, '$1/'));
      expect(project).toContain('lib/flight/decode.ts'); // the hook saw the worker's modules
      expect(project.filter((p) => /^node_modules\/(pg|pg-[a-z]+|prom-client|mysql2|ioredis|kafkajs)\//.test(p) || /^lib\/(db\/(?!statement\.ts)|runtime\/metrics\.ts)/.test(p))).toEqual([]);
    } finally {
      channel.close();
      await worker.terminate();
    }
  });
});
