// B1: N FLOP messages (default 20,000) over F flights (default 2,000) waiting in the inbox →
// pump throughput, against the single-client Postgres commit rate (pgbench, one connection,
// one-row insert per transaction) measured in the same run. Backfill throughput is reported
// too. The Kafka leg is measured by the dispatch benchmark.
//   npm run bench:pump -- [messages=20000] [flights=2000]
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { systemClock } from '../../lib/clock.ts';
import { buildMirror, buildRegistry } from '../../lib/app/composition.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { drain, tick } from '../../lib/pipeline/pump.ts';
import { backfillRound } from '../../lib/pipeline/backfill.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { sisMessage } from '../../test/support/services.ts';
import { BENCH_PG, emptyAll, machine, openBench } from './setup.ts';

const N = Number(process.argv[2] ?? 20_000);
const F = Number(process.argv[3] ?? 2_000);
const b = await openBench({ MSGX_PIPELINE_CLAIM_BATCH: '5000', MSGX_PIPELINE_BACKFILL_BATCH: '2000' });
const log = createLogger('bench', 'silent');
const base = { clock: systemClock, config: b.config, log };
await emptyAll(b);

// Flights 1..F from one snapshot, then N FLOPs cycling through STYPs and flights.
const FLOPS: ((flid: number, i: number) => [string, string])[] = [
  (f, i) => ['STND', `<STND>S${i % 97}</STND>`],
  (f, i) => ['GTDT', `<GTDT GTNO="1"><GATE>G${i % 53}</GATE><PGOT>01DEC260800</PGOT><PGCT>01DEC260830</PGCT><GTYP>D</GTYP></GTDT>`],
  (f, i) => ['ESTT', `<ESTT>01DEC26${String(8 + (i % 12)).padStart(2, '0')}${String(i % 60).padStart(2, '0')}</ESTT>`],
  (f, i) => ['REMC', `<REMC>R${i}</REMC>`],
];
const rows: string[] = [bigSnapshot(F, 1, { seqn: 1 })];
for (let i = 0; i < N; i++) {
  const flid = 1 + (i % F);
  const [styp, body] = FLOPS[i % FLOPS.length](flid, i);
  rows.push(sisMessage({ type: 'FLOP', styp, seqn: 2 + (i % 999_000), dttm: `202612${String(1 + Math.floor(i / 999_000)).padStart(2, '0')}083000`, body: `<FLOP><FLID>${flid}</FLID><FFID>x</FFID>${body}</FLOP>` }));
}
for (let i = 0; i < rows.length; i += 500) {
  const chunk = rows.slice(i, i + 500);
  await b.inbox.query(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES ${chunk.map(() => "(?, '2026-12-01 08:00:00', 'VALID')").join(',')}`, chunk);
}
while ((await intakeRound({ ...base, db: b.db, inbox: b.inbox })).enqueued.length > 0);
const deps = { ...base, session: b.session, inbox: b.inbox, registry: buildRegistry(), mirror: buildMirror({ db: b.db, redis: b.redis, config: b.config }) };
await tick(deps); // the snapshot

let t = performance.now();
let processed = 0;
for (;;) {
  const r = await drain(deps, 600_000);
  processed += r.processed;
  if (r.next !== 'now') break;
}
const pumpSec = (performance.now() - t) / 1000;

t = performance.now();
let marked = 0;
for (;;) {
  const r = await backfillRound({ ...base, db: b.db, inbox: b.inbox });
  marked += r.written + r.alreadyMarked;
  if (r.candidates === 0) break;
}
const backfillSec = (performance.now() - t) / 1000;

// pgbench: single client, one-row insert per transaction, same server, same run.
const script = '/tmp/msgx-bench-insert.sql';
writeFileSync(script, 'insert into bench_commit (v) values (1);\n');
execFileSync('psql', [BENCH_PG, '-qc', 'create table if not exists bench_commit (id bigserial primary key, v int); truncate bench_commit;']);
const out = execFileSync('pgbench', ['-n', '-c', '1', '-T', '10', '-f', script, BENCH_PG], { encoding: 'utf8' });
const tps = Number(/tps = ([\d.]+)/.exec(out)?.[1]);

const states = await b.db.selectFrom('proc_state').select(['state']).select((eb) => eb.fn.countAll<number>().as('n')).groupBy('state').execute();
const pumpRate = processed / pumpSec;
console.log(
  JSON.stringify(
    {
      bench: 'B1 pump',
      machine: machine(),
      messages: N,
      flights: F,
      processed,
      states: Object.fromEntries(states.map((s) => [s.state, Number(s.n)])),
      pumpMsgPerSec: Math.round(pumpRate),
      pgbenchSingleClientCommitsPerSec: Math.round(tps),
      ratioToCommitRate: +(pumpRate / tps).toFixed(2),
      backfillRowsPerSec: Math.round(marked / backfillSec),
    },
    null,
    2,
  ),
);
await b.close();
