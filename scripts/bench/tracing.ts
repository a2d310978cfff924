// B12: what tracing costs the pump. B1's work (FLOPs over flights made by a snapshot, the decode
// worker, K = msgx.pipeline.apply-batch, default 500) drained with tracing off and on, in
// alternated pairs (off-on, on-off, …); on = every message sampled (always_on), intake's contexts
// stored with PROC_STATE, the pump's spans (a batch span with its steps, one span per message)
// exported over OTLP/HTTP to a sink in a process of its own (a collector's stand-in), the outbox
// rows taking their message's context (msgx.trace_outbox). The exporter's last flush is timed too.
// Target: on ≤ 5 % slower than off (median of the pairs' ratios); off is today's B1.
//   npm run bench:tracing -- [messages=20000] [flights=2000] [pairs=4]
import { spawn } from 'node:child_process';
import { sql } from 'kysely';
import { buildDecoder, buildRegistry } from '../../lib/app/composition.ts';
import { systemClock } from '../../lib/core/clock.ts';
import { loadConfig, slices } from '../../lib/core/config.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { drain, tick } from '../../lib/pipeline/pump/loop.ts';
import { PumpTrace } from '../../lib/pipeline/pump/trace.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { openTelemetry } from '../../lib/runtime/otel.ts';
import type { Tracing } from '../../lib/runtime/tracing.ts';
import * as Locks from '../../lib/sql/locks.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { sisMessage } from '../../test/support/services.ts';
import { scriptHelp } from '../args.ts';
import { BENCH_INBOX, BENCH_PG, BENCH_REDIS, emptyAll, machine, median, openBench, pumpDeps } from './setup.ts';

scriptHelp(import.meta.url);
const N = Number(process.argv[2] ?? 20_000);
const F = Math.min(9_999, Number(process.argv[3] ?? 2_000));
const PAIRS = Number(process.argv[4] ?? 4);
const b = await openBench({ MSGX_PIPELINE_CLAIM_BATCH: '5000' });
const log = createLogger('bench', 'silent');
const config = loadConfig({ DATABASE_URL: BENCH_PG, INBOX_URL: BENCH_INBOX, REDIS_URL: BENCH_REDIS, MSGX_LOG_LEVEL: 'silent', MSGX_PIPELINE_CLAIM_BATCH: '5000' });
const settings = { ...slices(config).tracing, on: true, exporter: 'otlp' as const, sampler: 'always_on' as const };

// the collector's stand-in: answers every OTLP export 200, in a process of its own
const sink = spawn(
  process.execPath,
  [
    '-e',
    "require('http').createServer((q,r)=>{q.resume();q.on('end',()=>{r.writeHead(200,{'content-type':'application/json'});r.end('{}')})}).listen(0,'127.0.0.1',function(){console.log(this.address().port)})",
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const sinkPort = await new Promise<string>((ok) => sink.stdout!.once('data', (d: Buffer) => ok(d.toString().trim())));
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${sinkPort}`; // read by the OTLP exporter as it is made

const kinds: ((i: number) => [string, string])[] = [
  (i) => ['STND', `<STND>B${i % 89}</STND>`],
  (i) => ['REMC', `<REMC>T${i}</REMC>`],
  (i) => ['ESTT', `<ESTT>01DEC26${String(6 + (i % 14)).padStart(2, '0')}${String(i % 60).padStart(2, '0')}</ESTT>`],
];
const inbox = [
  bigSnapshot(F, 1, { seqn: 1 }),
  ...Array.from({ length: N }, (_, i) => {
    const [styp, body] = kinds[i % kinds.length](i);
    return sisMessage({ type: 'FLOP', styp, seqn: 2 + (i % 999_000), body: `<FLOP><FLID>${1 + (i % F)}</FLID><FFID>b</FFID>${body}</FLOP>` });
  }),
];

/** Fresh stores, the inbox taken in (with intake's spans and contexts when `on`), the snapshot applied: the FLOPs wait. */
async function prepare(on: boolean) {
  await emptyAll(b);
  for (let i = 0; i < inbox.length; i += 500) {
    const chunk = inbox.slice(i, i + 500);
    await b.inbox.query(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES ${chunk.map(() => "(?, '2026-12-01 08:00:00', 'VALID')").join(',')}`, chunk);
  }
  // intake is a process of its own in production: its spans are exported (and done with) before the pump runs
  const intakeTracing = on ? await openTelemetry(settings, 'intake', log) : undefined;
  while ((await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(config).intake, log, tracing: intakeTracing })).enqueued.length > 0);
  await intakeTracing?.shutdown(60_000);
  await Locks.traceOutbox(b.session, on ? 'on' : 'off');
  await tick(pumpDeps(b, { log, config })); // the snapshot
  await sql`vacuum analyze proc_state`.execute(b.db);
}

/** A run's messages per wall second, and the process's CPU milliseconds per message (both threads: less blurred by a busy machine). */
async function pumpRun(on: boolean): Promise<{ rate: number; cpuMs: number }> {
  await prepare(on);
  const tracing: Tracing | undefined = on ? await openTelemetry(settings, 'pump', log) : undefined;
  const decoder = buildDecoder(slices(config).pump, slices(config).airport);
  const deps = { ...pumpDeps(b, { log, config, registry: buildRegistry(), decoder }), tracer: tracing && new PumpTrace(tracing) };
  const t = performance.now();
  const cpu0 = process.cpuUsage();
  let processed = 0;
  let next: Awaited<ReturnType<typeof drain>>['next'] = 'now';
  while (next === 'now') ({ processed, next } = await drain(deps, 600_000).then((r) => ({ processed: processed + r.processed, next: r.next })));
  await tracing?.shutdown(60_000); // every span exported
  const wall = (performance.now() - t) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await decoder.close();
  return { rate: processed / wall, cpuMs: (cpu.user + cpu.system) / 1000 / processed };
}

await pumpRun(false); // warm-up (JIT, caches), not counted
const off: number[] = [];
const on: number[] = [];
const ratios: number[] = [];
const cpuRatios: number[] = [];
const cpu: Record<'off' | 'on', number[]> = { off: [], on: [] };
for (let i = 0; i < PAIRS; i++) {
  const order = i % 2 === 0 ? [false, true] : [true, false];
  const pair: Record<string, { rate: number; cpuMs: number }> = {};
  for (const o of order) pair[String(o)] = await pumpRun(o);
  off.push(pair.false.rate);
  on.push(pair.true.rate);
  ratios.push(pair.true.rate / pair.false.rate);
  cpu.off.push(pair.false.cpuMs);
  cpu.on.push(pair.true.cpuMs);
  cpuRatios.push(pair.true.cpuMs / pair.false.cpuMs);
  console.error(
    `pair ${i + 1}: off ${Math.round(pair.false.rate)} msg/s, on ${Math.round(pair.true.rate)} msg/s (${(pair.true.rate / pair.false.rate).toFixed(3)} ×); CPU ${pair.false.cpuMs.toFixed(3)} / ${pair.true.cpuMs.toFixed(3)} ms per message`,
  );
}
console.log(
  JSON.stringify(
    {
      bench: 'B12 tracing',
      machine: machine(),
      messages: N,
      flights: F,
      K: slices(config).pump.applyBatch,
      offMsgPerSec: off.map(Math.round),
      onMsgPerSec: on.map(Math.round),
      onOverOff: ratios.map((r) => +r.toFixed(3)),
      slowerBy: +(1 - median(ratios)).toFixed(3),
      cpuMsPerMessage: { off: cpu.off.map((x) => +x.toFixed(3)), on: cpu.on.map((x) => +x.toFixed(3)), onOverOff: +median(cpuRatios).toFixed(3) },
      target: 'slowerBy ≤ 0.05',
    },
    null,
    2,
  ),
);
sink.kill();
await b.close();
