// B1: N FLOP messages (default 20,000) over F flights (default 2,000) waiting in the inbox →
// pump throughput for each batch size K (msgx.pipeline.apply-batch), against the single-client
// Postgres commit rate (pgbench, one connection, one-row insert per transaction) measured in the
// same run. The pump runs as in production: XML parse + decode in its decode worker thread, the
// next batch decoded while this one's business transaction runs. Also: where the pump's time goes
// (CPU of the whole process = both threads, per wall second = cores in use; the main thread's;
// XML parse + decode and planning measured apart), and backfill throughput. The Kafka leg is
// measured by the dispatch benchmark. Flights are created by snapshots of at most 9,999 flights
// (one day each), so F > 9,999 works.
//   npm run bench:pump -- [messages=20000] [flights=2000] [K list=1,10,50,200,1000]
import { scriptHelp } from '../args.ts';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
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
import { BENCH_PG, BENCH_INBOX, BENCH_REDIS, emptyAll, machine, median, openBench, pumpDeps, stateCounts } from './setup.ts';

scriptHelp(import.meta.url);
const N = Number(process.argv[2] ?? 20_000);
const F = Number(process.argv[3] ?? 2_000);
const KS = (process.argv[4] ?? '1,10,50,200,1000').split(',').map(Number);
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
  await decoder.close();
  return {
    k,
    processed,
    wall,
    nodeCpu: (cpu.user + cpu.system) / 1e6,
    mainCpu: (main.user + main.system) / 1e6,
    config,
    steps: Object.fromEntries(Object.entries(timings).map(([n, ms]) => [n, +(ms / 1000).toFixed(2)])),
  };
}

// pgbench: single client, one-row insert per transaction, same server, same run.
function pgbench(): number {
  const script = '/tmp/msgx-bench-insert.sql';
  writeFileSync(script, 'insert into bench_commit (v) values (1);\n');
  execFileSync('psql', [BENCH_PG, '-qc', 'create table if not exists bench_commit (id bigserial primary key, v int); truncate bench_commit;']);
  const out = execFileSync('pgbench', ['-n', '-c', '1', '-T', '10', '-f', script, BENCH_PG], { encoding: 'utf8' });
  return Number(/tps = ([\d.]+)/.exec(out)?.[1]);
}

// One untimed run first: the JIT and the server's caches warm up, so the first K of the list is
// not measured cold (it came out ~10 % below the same K measured later in the same run).
await runPump(KS[0]);
const tpsBefore = pgbench();
const runs = [];
for (const k of KS) {
  const r = await runPump(k);
  runs.push(r);
  console.error(`K=${k}: ${Math.round(r.processed / r.wall)} msg/s, CPU ${(r.nodeCpu / r.wall).toFixed(2)} cores (main thread ${(r.mainCpu / r.wall).toFixed(2)})`);
}
// B8: the change records' cost at the default batch size, runs alternated (with, without) × 2
const DEFAULT_K = 200;
const withRecords: number[] = [];
const withoutRecords: number[] = [];
for (let i = 0; i < 2; i++) {
  for (const on of [true, false]) {
    const r = await runPump(DEFAULT_K, on);
    (on ? withRecords : withoutRecords).push(r.processed / r.wall);
  }
}
const tps = (tpsBefore + pgbench()) / 2;

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
console.log(
  JSON.stringify(
    {
      bench: 'B1 pump',
      machine: machine(),
      messages: N,
      flights: F,
      pgbenchSingleClientCommitsPerSec: Math.round(tps),
      byBatchSize: runs.map((r) => ({
        K: r.k,
        processed: r.processed,
        seconds: +r.wall.toFixed(2),
        msgPerSec: Math.round(r.processed / r.wall),
        ratioToCommitRate: +(r.processed / r.wall / tps).toFixed(2),
        coresInUse: +(r.nodeCpu / r.wall).toFixed(2),
        mainThreadCores: +(r.mainCpu / r.wall).toFixed(2),
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
    null,
    2,
  ),
);
await b.close();
