// B1: N FLOP messages (default 20,000) over F flights (default 2,000) waiting in the inbox →
// pump throughput for each batch size K (msgx.pipeline.apply-batch), against the single-client
// Postgres commit rate (`pgbench -N -c1`, setup.ts commitRate) measured in the
// same run. The pump runs as in production: XML parse + decode in its decode worker thread, the
// next batch decoded while this one's business transaction runs. Also: where the pump's time goes
// (CPU of the whole process = both threads, per wall second = cores in use; the main thread's;
// XML parse + decode and planning measured apart), and backfill throughput. The Kafka leg is
// measured by the dispatch benchmark. Flights are created by snapshots of at most 9,999 flights
// (one day each), so F > 9,999 works.
// The yardstick (target: pump ≥ 0.5 × it at the default K): the batched write limit of the same
// workload (scripts/bench/write-limit.ts): the rows each batch of K writes, one multi-row
// statement per table, one transaction per batch. Pump and limit run in alternated pairs (BENCH_PAIRS,
// default 3) at the default K; the ratio is of their medians. Beside each, the CPU time of the
// run's Postgres backends per message (the connections to the bench's database, /proc): a
// figure that load on the machine hardly moves. Last lines: one summary line, one JSON line.
//   npm run bench:pump -- [messages=20000] [flights=2000] [K list=1,10,50,200,1000]
import { scriptHelp } from '../args.ts';
import { sql } from 'kysely';
import { systemClock } from '../../lib/core/clock.ts';
import { buildDecoder, buildRegistry } from '../../lib/app/composition.ts';
import { loadConfig, slices } from '../../lib/core/config.ts';
import { decodeFlightCommand } from '../../lib/flight/handlers.ts';
import { isEmpty } from '../../lib/flight/overlay.ts';
import { FlightPlan, Loaded } from '../../lib/flight/plan.ts';
import { loadStates } from '../../lib/flight/store.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { drain, tick } from '../../lib/pipeline/pump/loop.ts';
import { backfillRound } from '../../lib/pipeline/backfill.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { decodeEnvelope } from '../../lib/sis/envelope.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { sisMessage } from '../../test/support/services.ts';
import { BENCH_PG, BENCH_INBOX, BENCH_REDIS, backendCpu, backendCpuSince, commitRate, cpuName, emptyAll, machine, median, openBench, pumpDeps, stateCounts, summary } from './setup.ts';
import { flopWorkloadLimit } from './write-limit.ts';

scriptHelp(import.meta.url);
const N = Number(process.argv[2] ?? 20_000);
const F = Number(process.argv[3] ?? 2_000);
const KS = (process.argv[4] ?? '1,10,50,200,1000').split(',').map(Number);
const PAIRS = Number(process.env.BENCH_PAIRS ?? 3);
const b = await openBench({ MSGX_PIPELINE_CLAIM_BATCH: '5000', MSGX_PIPELINE_BACKFILL_BATCH: '2000' });
const log = createLogger('bench', 'silent');

// Flights 1..F from one snapshot, then N FLOPs cycling through STYPs and flights.
const FLOPS: ((flid: number, i: number) => [string, string])[] = [
  (_flid, i) => ['STND', `<STND>S${i % 97}</STND>`],
  (_flid, i) => ['GTDT', `<GTDT GTNO="1"><GATE>G${i % 53}</GATE><PGOT>01DEC260800</PGOT><PGCT>01DEC260830</PGCT><GTYP>D</GTYP></GTDT>`],
  (_flid, i) => ['ESTT', `<ESTT>01DEC26${String(8 + (i % 12)).padStart(2, '0')}${String(i % 60).padStart(2, '0')}</ESTT>`],
  (_flid, i) => ['REMC', `<REMC>R${i}</REMC>`],
];
// one snapshot per 9,999 flights (the most a SCHD DNLD carries), each on its own day
const DAY = 9_999;
const snapshots = Array.from({ length: Math.ceil(F / DAY) }, (_, d) =>
  bigSnapshot(Math.min(DAY, F - d * DAY), 1 + d * DAY, { seqn: 1 + d }).replace(/01DEC26/g, `${String(1 + d).padStart(2, '0')}DEC26`),
);
const flops: string[] = [];
for (let i = 0; i < N; i++) {
  const flid = 1 + (i % F);
  const [styp, body] = FLOPS[i % FLOPS.length](flid, i);
  flops.push(
    sisMessage({
      type: 'FLOP',
      styp,
      seqn: 2 + snapshots.length + (i % 999_000),
      dttm: `202612${String(1 + Math.floor(i / 999_000)).padStart(2, '0')}083000`,
      body: `<FLOP><FLID>${flid}</FLID><FFID>x</FFID>${body}</FLOP>`,
    }),
  );
}

/** Fresh stores, the inbox filled, everything enqueued and the snapshot applied: the FLOPs wait. */
async function prepare(k: number, changeRecords = true) {
  await emptyAll(b);
  const rows = [...snapshots, ...flops];
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    await b.inbox.query(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES ${chunk.map(() => "(?, '2026-12-01 08:00:00', 'VALID')").join(',')}`, chunk);
  }
  const config = loadConfig({
    DATABASE_URL: BENCH_PG,
    INBOX_URL: BENCH_INBOX,
    REDIS_URL: BENCH_REDIS,
    MSGX_LOG_LEVEL: 'silent',
    MSGX_PIPELINE_CLAIM_BATCH: '5000',
    MSGX_PIPELINE_APPLY_BATCH: String(k),
  });
  while ((await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(config).intake, log })).enqueued.length > 0);
  const decoder = buildDecoder(slices(config).pump, slices(config).airport, { changeRecords });
  const deps = pumpDeps(b, { log, config, registry: buildRegistry({ changeRecords }), decoder });
  for (const _ of snapshots) await tick(deps); // the snapshots
  await sql`vacuum analyze proc_state`.execute(b.db);
  return { deps, config, decoder };
}

async function runPump(k: number, changeRecords = true) {
  const { deps, config, decoder } = await prepare(k, changeRecords);
  const timings: Record<string, number> = {};
  deps.timings = timings;
  const pg0 = await backendCpu(b);
  const cpu0 = process.cpuUsage();
  const main0 = process.threadCpuUsage();
  const t = performance.now();
  let processed = 0;
  for (;;) {
    const r = await drain(deps, 600_000);
    processed += r.processed;
    if (r.next !== 'now') break;
  }
  const wall = (performance.now() - t) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const main = process.threadCpuUsage(main0);
  const pgCpu = await backendCpuSince(b, pg0);
  await decoder.close();
  return {
    k,
    processed,
    wall,
    pgCpu,
    nodeCpu: (cpu.user + cpu.system) / 1e6,
    mainCpu: (main.user + main.system) / 1e6,
    config,
    steps: Object.fromEntries(Object.entries(timings).map(([n, ms]) => [n, +(ms / 1000).toFixed(2)])),
  };
}

/** The batched write limit of the same workload at K (write-limit.ts), on stores prepared as the pump's run finds them. */
const runLimit = (k: number) => flopWorkloadLimit(b, { snapshots, flops, flights: F, k }, log);

// One untimed run first: the JIT and the server's caches warm up, so the first K of the list is
// not measured cold (it came out ~10 % below the same K measured later in the same run).
await runPump(KS[0]);
const commitsBefore = await commitRate();
const runs = [];
for (const k of KS) {
  const r = await runPump(k);
  runs.push(r);
  console.error(`K=${k}: ${Math.round(r.processed / r.wall)} msg/s, CPU ${(r.nodeCpu / r.wall).toFixed(2)} cores (main thread ${(r.mainCpu / r.wall).toFixed(2)})`);
}
// the yardstick at the default K: pump and batched write limit in alternated pairs
const DEFAULT_K = b.config['msgx.pipeline.apply-batch'];
const pairs: { pump: number; limit: number; pumpPgCpuMsPerMsg: number | null; limitPgCpuMsPerMsg: number | null }[] = [];
for (let i = 0; i < PAIRS; i++) {
  // A B, B A, A B …: whatever the run before leaves (a checkpoint, dead rows) falls on both
  const l0 = i % 2 === 1 ? await runLimit(DEFAULT_K) : null;
  const p = await runPump(DEFAULT_K);
  const l = l0 ?? (await runLimit(DEFAULT_K));
  const pair = {
    pump: p.processed / p.wall,
    limit: l.perSecond,
    pumpPgCpuMsPerMsg: p.pgCpu === null ? null : +((p.pgCpu * 1000) / p.processed).toFixed(3),
    limitPgCpuMsPerMsg: l.backendCpuSeconds === null ? null : +((l.backendCpuSeconds * 1000) / l.messages).toFixed(3),
    limitRows: l.rows,
  };
  pairs.push(pair);
  console.error(
    `pair ${i + 1}: pump ${Math.round(pair.pump)} msg/s, limit ${Math.round(pair.limit)} msg/s (${(pair.pump / pair.limit).toFixed(2)} ×); Postgres CPU ms/msg pump ${pair.pumpPgCpuMsPerMsg}, limit ${pair.limitPgCpuMsPerMsg}`,
  );
}
// B8: the change records' cost at K = 200, runs alternated (with, without) × 2
const B8_K = 200;
const withRecords: number[] = [];
const withoutRecords: number[] = [];
for (let i = 0; i < 2; i++) {
  for (const on of [true, false]) {
    const r = await runPump(B8_K, on);
    (on ? withRecords : withoutRecords).push(r.processed / r.wall);
  }
}
const commits = { rate: (commitsBefore.rate + (await commitRate()).rate) / 2, how: commitsBefore.how };
const tps = commits.rate;

// CPU split of the largest-K run's work, measured apart: parse (XML + envelope + decode) and plan
const config = runs.at(-1)!.config;
let t = performance.now();
const cmds = flops.map((x) => {
  const env = decodeEnvelope(x);
  return { env, cmd: decodeFlightCommand(env, slices(config).airport) };
});
const parseSec = (performance.now() - t) / 1000;
const loaded = new Loaded();
for (const [f, s] of await loadStates(
  b.db,
  Array.from({ length: F }, (_, i) => String(i + 1)),
  config['msgx.airport.timezone'],
))
  loaded.states.set(f, s);
for (let i = 1; i <= F; i++) loaded.sharedByMaster.set(String(i), []);
t = performance.now();
const K = runs.at(-1)!.k;
let unplanned = 0;
for (let i = 0; i < cmds.length; i += K) {
  const plan = new FlightPlan(loaded, { timeZone: config['msgx.airport.timezone'], cutover: config['msgx.airport.day-cutover'] });
  cmds.slice(i, i + K).forEach((c, j) => {
    const m = { msgId: 10 + i + j, kind: `FLOP/${c.env.styp}`, type: 'FLOP', styp: c.env.styp, now: new Date(), cmd: c.cmd };
    const n = plan.needs(m);
    if (isEmpty(n)) plan.apply(m);
    else {
      // a flight the last run does not have (it should: every FLOP addresses a snapshot's flight): counted, not planned
      unplanned++;
      for (const f of n.flids) loaded.absent.add(f);
      for (const master of n.masters) loaded.sharedByMaster.set(master, []);
    }
  });
  plan.result();
}
const planSec = (performance.now() - t) / 1000;

// backfill of the last run's rows
t = performance.now();
let marked = 0;
for (;;) {
  const r = await backfillRound({ clock: systemClock, backfill: slices(config).backfill, log, db: b.db, inbox: b.inbox });
  marked += r.written + r.alreadyMarked;
  if (r.candidates === 0) break;
}
const backfillSec = (performance.now() - t) / 1000;

const states = await stateCounts(b);
const last = runs.at(-1)!;
const pumpRate = median(pairs.map((x) => x.pump));
const limitRate = median(pairs.map((x) => x.limit));
const ratio = pumpRate / limitRate;
const nums = (xs: (number | null)[]) => xs.map((x) => (x === null ? 'n/a' : x)).join(' / ');
summary(
  `B1 pump: ${Math.round(pumpRate)} msg/s at K=${DEFAULT_K}; batched write limit ${Math.round(limitRate)} msg/s; ratio ${ratio.toFixed(2)} (target ≥ 0.5, ${ratio >= 0.5 ? 'met' : 'MISSED'}); ` +
    `single-client commits ${Math.round(tps)}/s (${commits.how}; pump ${(pumpRate / tps).toFixed(2)} ×); Postgres CPU ms/msg pump ${nums(pairs.map((x) => x.pumpPgCpuMsPerMsg))}, limit ${nums(pairs.map((x) => x.limitPgCpuMsPerMsg))}; ${cpuName()}`,
  {
    bench: 'B1 pump',
    machine: machine(),
    cpu: cpuName(),
    messages: N,
    flights: F,
    K: DEFAULT_K,
    pumpMsgPerSec: Math.round(pumpRate),
    batchedWriteLimitMsgPerSec: Math.round(limitRate),
    ratio: +ratio.toFixed(3),
    target: 0.5,
    singleClientCommitsPerSec: Math.round(tps),
    commitRateHow: commits.how,
    pairs: pairs.map((x) => ({ ...x, pump: Math.round(x.pump), limit: Math.round(x.limit), ratio: +(x.pump / x.limit).toFixed(3) })),
    byBatchSize: runs.map((r) => ({
      K: r.k,
      processed: r.processed,
      seconds: +r.wall.toFixed(2),
      msgPerSec: Math.round(r.processed / r.wall),
      ratioToCommitRate: +(r.processed / r.wall / tps).toFixed(2),
      coresInUse: +(r.nodeCpu / r.wall).toFixed(2),
      mainThreadCores: +(r.mainCpu / r.wall).toFixed(2),
      postgresCpuMsPerMessage: r.pgCpu === null ? null : +((r.pgCpu * 1000) / r.processed).toFixed(3),
      wallSecondsPerStep: r.steps,
    })),
    lastRunStates: states,
    cpuSplitAtK: {
      K: last.k,
      wallSeconds: +last.wall.toFixed(2),
      processCpuSeconds: +last.nodeCpu.toFixed(2),
      coresInUse: +(last.nodeCpu / last.wall).toFixed(2),
      mainThreadCpuSeconds: +last.mainCpu.toFixed(2),
      otherThreadsCpuSeconds: +(last.nodeCpu - last.mainCpu).toFixed(2),
      cpuMsPerMessage: +((last.nodeCpu * 1000) / last.processed).toFixed(3),
      parseAndDecodeSeconds: +parseSec.toFixed(2),
      planSeconds: +planSec.toFixed(2),
      unplannedMessages: unplanned,
      mainThreadIdleSeconds: +(last.wall - last.mainCpu).toFixed(2),
    },
    backfillRowsPerSec: Math.round(marked / backfillSec),
    changeRecordCostAtK200: {
      withMsgPerSec: withRecords.map(Math.round),
      withoutMsgPerSec: withoutRecords.map(Math.round),
      slowerBy: +(1 - median(withRecords) / median(withoutRecords)).toFixed(3),
    },
  },
);
await b.close();
