// B2: one SCHD DNLD of N flights (default 4,000) from pump pick-up to SUCCEEDED; the same
// content again as a new message (0 events); parse share; peak RSS. Median of RUNS runs, in two
// passes, each in a process of its own (RSS is the process's): decode inline on the pump's thread
// (as the B2 bar was first measured), and decode in the decode worker thread, as the pump process
// runs it (its heap and the structured clone of the decoded command count in the same RSS).
//   npm run bench:snapshot -- [flights=4000] [runs=3]
import { scriptHelp } from '../args.ts';
import { sql } from 'kysely';
import { systemClock } from '../../lib/core/clock.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { tick } from '../../lib/pipeline/pump.ts';
import { decodeEnvelope } from '../../lib/sis/envelope.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { insertInboxRow } from '../../lib/pipeline/inbox.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { emptyAll, machine, median, openBench, pumpDeps } from './setup.ts';
import { slices } from '../../lib/core/config.ts';
import { execFileSync } from 'node:child_process';
import { buildDecoder } from '../../lib/app/composition.ts';

scriptHelp(import.meta.url);
const flights = Number(process.argv[2] ?? 4000);
const runs = Number(process.argv[3] ?? 3);
const mode = process.env.BENCH_SNAPSHOT_DECODE;
if (mode === undefined) {
  // the parent: one child process per mode, nothing of its own in either's RSS
  const pass = (m: string) =>
    JSON.parse(execFileSync(process.execPath, [import.meta.filename, String(flights), String(runs)], { env: { ...process.env, BENCH_SNAPSHOT_DECODE: m }, encoding: 'utf8', maxBuffer: 1 << 24 }));
  const inline = pass('inline');
  const worker = pass('worker');
  console.log(JSON.stringify({ bench: 'B2 snapshot', machine: machine(), flights, runs, decodeInline: inline, decodeWorker: worker }, null, 2));
  process.exit(0);
}
const b = await openBench();
const log = createLogger('bench', process.env.BENCH_LOG ?? 'silent');
const first: number[] = [];
const again: number[] = [];
const parse: number[] = [];
let peakRss = 0;
let secondEvents = -1;
const timings: Record<string, number> = {};
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
const xml = bigSnapshot(flights);
for (let r = 0; r < runs; r++) {
  await emptyAll(b);
  for (const seqn of [1, 2]) await insertInboxRow(b.inbox, { body: xml.replace(/<SEQN>\d+/, `<SEQN>${seqn}`), received: '2026-12-01 08:00:00' });
  await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(b.config).intake, log });
  const decoder = mode === 'worker' ? buildDecoder(slices(b.config).pump, slices(b.config).airport) : undefined;
  const deps = pumpDeps(b, { log, timings, ...(decoder ? { decoder } : {}) });

  let t = performance.now();
  const r1 = await tick(deps);
  first.push(performance.now() - t);
  const afterFirst = (await sql<{ n: number }>`select count(*)::int n from msg_event where target = 'msg'`.execute(b.db)).rows[0].n;
  t = performance.now();
  const r2 = await tick(deps);
  again.push(performance.now() - t);
  if (r1.kind !== 'processed' || r1.state !== 'SUCCEEDED' || r2.kind !== 'processed' || r2.state !== 'SUCCEEDED') throw new Error(`unexpected ${JSON.stringify([r1, r2])}`);
  const ev = await sql<{ n: number }>`select count(*)::int n from msg_event where target = 'msg'`.execute(b.db);
  if (afterFirst !== flights) throw new Error(`expected ${flights} events from the first snapshot, got ${afterFirst}`);
  secondEvents = ev.rows[0].n - afterFirst;
  t = performance.now();
  decodeEnvelope(xml);
  parse.push(performance.now() - t);
  await decoder?.close();
}
clearInterval(rssTimer);
console.log(
  JSON.stringify(
    {
      decode: mode,
      bytes: xml.length,
      runs,
      firstApplyMsMedian: Math.round(median(first)),
      sameContentAgainMsMedian: Math.round(median(again)),
      eventsSecondMessage: secondEvents,
      parseMsMedian: Math.round(median(parse)),
      parseShareOfSecond: +(median(parse) / median(again)).toFixed(2), // parse measured on this thread in both modes
      peakRssMb: Math.round(peakRss / 2 ** 20),
      wallSecondsPerStepAllRuns: Object.fromEntries(Object.entries(timings).map(([n, ms]) => [n, +(ms / 1000).toFixed(2)])),
    },
    null,
    2,
  ),
);
await b.close();
