// B2: one SCHD DNLD of N flights (default 4,000) from pump pick-up to SUCCEEDED; the same
// content again as a new message (0 events); parse share; peak RSS of the pump. Median of RUNS
// runs, in two passes: decode inline on the pump's thread (as the B2 bar was first measured), and
// decode in the decode worker thread, as the pump process runs it (its heap and the structured
// clone of the decoded command count in the same RSS). Each run's pump is a process of its own
// that holds what the pump process holds — the message is generated and put in the inbox by its
// parent — and reports its peak RSS as the kernel's high-water mark (ru_maxrss), not a sample.
// BENCH_SNAPSHOT_OLDER_DAYS=n: Postgres holds n older days of as many flights before each run, each
// with its snapshot's digests and ledger row, as a week of retained flights does in production
// (msgx.history.purge-after 7d); default 0. The first apply's CPU time is reported beside its
// wall time: the pump process's (its threads included) and Postgres's (postgresCpuMs, null when the
// server is not on this machine); on two cores their sum halved is a floor no overlap goes below.
// The yardstick (target: first apply ≤ 3 × it): the snapshot's write limit (write-limit.ts), the
// rows the first apply left on empty stores written again in one transaction, one multi-row
// statement per table, measured after each run (alternated with them). Last lines: one summary
// line (first apply, decode, limit, ratio; the worker mode's), one JSON line.
//   npm run bench:snapshot -- [flights=4000] [runs=3]
import { scriptHelp } from '../args.ts';
import { sql } from 'kysely';
import { systemClock } from '../../lib/core/clock.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { tick } from '../../lib/pipeline/pump/loop.ts';
import { decodeEnvelope } from '../../lib/sis/envelope.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { insertInboxRow } from '../../lib/pipeline/inbox.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { sisMessage } from '../../test/support/services.ts';
import { BENCH_PG, cpuName, emptyAll, machine, median, openBench, postgresCpuMs, pumpDeps, summary } from './setup.ts';
import { emptySnapshotTables, type Limit, runLimit, snapshotWrites } from './write-limit.ts';
import { slices } from '../../lib/core/config.ts';
import { execFileSync } from 'node:child_process';
import { buildDecoder } from '../../lib/app/composition.ts';
import { fillCompileCache, processEnv, procfileArgs } from '../start.ts';

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
  const ratio = worker.firstApplyMsMedian / worker.writeLimitMsMedian;
  summary(
    `B2 snapshot: ${flights} flights, first apply ${worker.firstApplyMsMedian} ms (decode ${worker.decodeMsMedian} ms, worker; inline ${inline.firstApplyMsMedian} ms); ` +
      `write limit ${worker.writeLimitMsMedian} ms for ${worker.writeLimitRows} rows; ratio ${ratio.toFixed(2)} (target ≤ 3, ${ratio <= 3 ? 'met' : 'MISSED'}); ` +
      `again ${worker.sameContentAgainMsMedian} ms; peak RSS ${worker.peakRssMbMedian} MB; ${cpuName()}`,
    {
      bench: 'B2 snapshot',
      machine: machine(),
      cpu: cpuName(),
      flights,
      runs,
      firstApplyMs: worker.firstApplyMsMedian,
      writeLimitMs: worker.writeLimitMsMedian,
      ratio: +ratio.toFixed(3),
      target: 3,
      decodeInline: inline,
      decodeWorker: worker,
    },
  );
  process.exit(0);
}
const b = await openBench();
const log = createLogger('bench', process.env.BENCH_LOG ?? 'silent');
const role = process.env.BENCH_SNAPSHOT_ROLE;
if (role === 'pump') {
  // one run's pump: a process that holds what the pump process holds (its modules, connections,
  // the decode worker in 'worker' mode) and applies the two snapshots the parent put in the
  // inbox; its peak RSS is the kernel's high-water mark (ru_maxrss) of this process
  const timings: Record<string, number> = {};
  const decoder = mode === 'worker' ? buildDecoder(slices(b.config).pump, slices(b.config).airport) : undefined;
  const deps = pumpDeps(b, { log, timings, ...(decoder ? { decoder } : {}) });
  // as in a running pump, the ordinary decode worker exists and has decoded FLOPs (it waits while a snapshot's own worker runs)
  if (decoder)
    await decoder.decode(Array.from({ length: 500 }, (_, i) => sisMessage({ type: 'FLOP', styp: 'STND', seqn: 100 + i, body: `<FLOP><FLID>${i}</FLID><FFID>X</FFID><STND>S${i}</STND></FLOP>` })));
  const cpu = process.cpuUsage();
  const pgCpu = postgresCpuMs();
  let t = performance.now();
  const r1 = await tick(deps);
  const first = performance.now() - t;
  const pumpCpu = process.cpuUsage(cpu);
  const pgCpuAfter = postgresCpuMs();
  const firstCpu = { pump: (pumpCpu.user + pumpCpu.system) / 1000, postgres: pgCpu === null || pgCpuAfter === null ? null : pgCpuAfter - pgCpu };
  const rssAfterFirst = process.memoryUsage.rss(); // after the release that follows a large message
  const afterFirst = (await sql<{ n: number }>`select count(*)::int n from msg_event where target = 'msg'`.execute(b.db)).rows[0].n;
  const firstTimings = { ...timings };
  t = performance.now();
  const r2 = await tick(deps);
  const again = performance.now() - t;
  if (r1.kind !== 'processed' || r1.state !== 'SUCCEEDED' || r2.kind !== 'processed' || r2.state !== 'SUCCEEDED') throw new Error(`unexpected ${JSON.stringify([r1, r2])}`);
  const ev = await sql<{ n: number }>`select count(*)::int n from msg_event where target = 'msg'`.execute(b.db);
  if (afterFirst !== flights) throw new Error(`expected ${flights} events from the first snapshot, got ${afterFirst}`);
  await decoder?.close();
  await b.close();
  const againTimings = Object.fromEntries(Object.entries(timings).map(([n, ms]) => [n, ms - (firstTimings[n] ?? 0)]));
  console.log(
    JSON.stringify({
      first,
      firstCpu,
      firstRelease: firstTimings.release ?? 0,
      rssAfterFirst,
      again,
      secondEvents: ev.rows[0].n - afterFirst,
      peakRss: process.resourceUsage().maxRSS * 1024,
      timings,
      againTimings,
    }),
  );
  process.exit(0);
}
// the parent of one mode: puts the two messages in the inbox, runs each run's pump in a process of its own,
// with the environment and node flags `npm start` gives the pump (scripts/start.ts processEnv: its compile cache filled first; the Procfile's flags)
const startEnv = processEnv(process.env);
const pumpEnv = { ...process.env, ...startEnv, BENCH_SNAPSHOT_ROLE: 'pump' };
const nodeFlags = procfileArgs('pump').filter((a) => a.startsWith('--'));
fillCompileCache(startEnv);
const xml = bigSnapshot(flights);
const first: number[] = [];
const pumpCpu: number[] = [];
const pgCpu: (number | null)[] = [];
const release: number[] = [];
const again: number[] = [];
const parse: number[] = [];
const peaks: number[] = [];
const rssAfter: number[] = [];
let secondEvents = -1;
const timings: Record<string, number> = {};
const againTimings: Record<string, number> = {};
const decode: number[] = [];
const limits: Limit[] = [];
const olderDays = Number(process.env.BENCH_SNAPSHOT_OLDER_DAYS ?? 0);
/** `olderDays` days before the snapshot's (2026-12-01) of `flights` flights each, their digests and ledger rows (older snapshots: lower message IDs). */
async function seedOlderDays(): Promise<void> {
  for (let d = 1; d <= olderDays; d++) {
    const from = 10_000_000 + d * 100_000;
    await sql`insert into flight_schd (flid, state, state_version, operation_day, created_at, updated_at)
      select (${from}::int + g)::text, 'ACTIVE', 2, date '2026-12-01' - ${d}::int, now(), now() from generate_series(1, ${flights}::int) g`.execute(b.db);
    await sql`insert into flight_snap_digest (flid, digest, state_version)
      select (${from}::int + g)::text, encode(sha256((${from}::int + g)::text::bytea), 'base64'), 2 from generate_series(1, ${flights}::int) g`.execute(b.db);
    await sql`insert into schd_gen (operation_day, version, last_message_id, updated_at) values (date '2026-12-01' - ${d}::int, 1, ${-d}, now())`.execute(b.db);
  }
  if (olderDays > 0) for (const t of ['flight_schd', 'flight_snap_digest', 'schd_gen']) await sql`analyze ${sql.table(t)}`.execute(b.db);
}
/** The snapshot's write limit: the first message applied here (untimed) on empty stores, its rows written again the fastest plain way. */
async function writeLimit(): Promise<Limit> {
  await emptyAll(b);
  await insertInboxRow(b.inbox, { body: xml, received: '2026-12-01 08:00:00' });
  await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(b.config).intake, log });
  const r = await tick(pumpDeps(b, { log }));
  if (r.kind !== 'processed' || r.state !== 'SUCCEEDED') throw new Error(`write limit: the snapshot was not applied: ${JSON.stringify(r)}`);
  const writes = await snapshotWrites(b, r.msgId, systemClock.now());
  await emptySnapshotTables(b, r.msgId);
  return runLimit(BENCH_PG, [writes], 1);
}
for (let r = 0; r < runs; r++) {
  await emptyAll(b);
  await seedOlderDays();
  for (const seqn of [1, 2]) await insertInboxRow(b.inbox, { body: xml.replace(/<SEQN>\d+/, `<SEQN>${seqn}`), received: '2026-12-01 08:00:00' });
  await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(b.config).intake, log });
  const run = JSON.parse(execFileSync(process.execPath, [...nodeFlags, import.meta.filename, String(flights), String(runs)], { env: pumpEnv, encoding: 'utf8', maxBuffer: 1 << 24 }));
  first.push(run.first);
  pumpCpu.push(run.firstCpu.pump);
  pgCpu.push(run.firstCpu.postgres);
  release.push(run.firstRelease);
  again.push(run.again);
  peaks.push(run.peakRss);
  rssAfter.push(run.rssAfterFirst);
  secondEvents = run.secondEvents;
  for (const [n, ms] of Object.entries(run.timings as Record<string, number>)) timings[n] = (timings[n] ?? 0) + ms;
  for (const [n, ms] of Object.entries(run.againTimings as Record<string, number>)) againTimings[n] = (againTimings[n] ?? 0) + ms;
  decode.push((run.timings['bodies+decode'] ?? 0) - (run.againTimings['bodies+decode'] ?? 0));
  limits.push(await writeLimit());
  const t = performance.now();
  decodeEnvelope(xml);
  parse.push(performance.now() - t);
}
console.log(
  JSON.stringify(
    {
      decode: mode,
      bytes: xml.length,
      olderDays,
      runs,
      firstApplyMsMedian: Math.round(median(first)),
      firstApplyMsEachRun: first.map(Math.round),
      // the read and decode step of the first apply
      decodeMsMedian: Math.round(median(decode)),
      writeLimitMsMedian: Math.round(median(limits.map((l) => l.seconds * 1000))),
      writeLimitMsEachRun: limits.map((l) => Math.round(l.seconds * 1000)),
      writeLimitBackendCpuMsMedian: limits.some((l) => l.backendCpuSeconds === null) ? null : Math.round(median(limits.map((l) => l.backendCpuSeconds! * 1000))),
      writeLimitRows: Object.values(limits[0].rows).reduce((a, x) => a + x, 0),
      writeLimitRowsPerTable: limits[0].rows,
      writeLimitSecondsPerTable: limits[0].secondsPerTable,
      firstOverLimit: +(median(first) / median(limits.map((l) => l.seconds * 1000))).toFixed(2),
      // CPU time of the first apply (ms): the pump process's, Postgres's (null: not on this machine)
      firstApplyCpuMsMedian: { pump: Math.round(median(pumpCpu)), postgres: pgCpu.includes(null) ? null : Math.round(median(pgCpu as number[])) },
      // of which the full garbage collection after SUCCEEDED (lib/runtime/gc.ts): the message is applied before it
      firstReleaseGcMsMedian: Math.round(median(release)),
      sameContentAgainMsMedian: Math.round(median(again)),
      eventsSecondMessage: secondEvents,
      parseMsMedian: Math.round(median(parse)),
      parseShareOfSecond: +(median(parse) / median(again)).toFixed(2), // parse measured on the parent's thread in both modes
      peakRssMbMedian: Math.round(median(peaks) / 2 ** 20),
      // the pump's RSS once the first apply and its release are done (what the next message starts from)
      rssAfterFirstMbMedian: Math.round(median(rssAfter) / 2 ** 20),
      peakRssMbEachRun: peaks.map((p) => Math.round(p / 2 ** 20)),
      wallSecondsPerStepAllRuns: Object.fromEntries(Object.entries(timings).map(([n, ms]) => [n, +(ms / 1000).toFixed(2)])),
      sameContentAgainMsPerStepMean: Object.fromEntries(Object.entries(againTimings).map(([n, ms]) => [n, Math.round(ms / runs)])),
    },
    null,
    2,
  ),
);
await b.close();
