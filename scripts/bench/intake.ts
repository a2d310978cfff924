// B7: an intake round stays O(batch), not O(inbox) or O(lag). For each inbox size (default
// 10,000 / 100,000 / 1,000,000 retained rows) the inbox is built in bulk (INSERT … SELECT from
// MariaDB's sequence engine, a FLOP body of realistic size per row) with PROC_STATE rows for all
// of them: the last 10 % (at most 100,000) processed by the pipeline but still waiting for the
// backfill (CMINMSGS_DATE_PROCESSED NULL, PROC_STATE SUCCEEDED, BACKFILL_AT NULL), the rest
// terminal and backfilled; the watermark stands at the last retained ID. Then, with claim-batch
// fresh unprocessed rows arriving before each round (default configuration, claim-batch 500):
//   - watermark rounds (no full scan due);
//   - rounds that also run one full-scan chunk over the rows waiting for backfill (the worst
//     chunk: every row of it is unprocessed, so it is read and offered to PROC_STATE again);
//   - rounds with the first full-scan chunk (ids from 0: processed rows);
//   - one whole full scan, chunk by chunk (rounds needed, slowest round);
//   - the O(inbox) reference: one `COUNT(*) … WHERE CMINMSGS_DATE_PROCESSED IS NULL` (no index).
// Rows examined = the InnoDB handler reads of the round's MariaDB session (Handler_read_*,
// measured on the single connection the round uses, minus the cost of reading the counters).
//   npm run bench:intake -- [rounds=7] [sizes=10000,100000,1000000]
import { scriptHelp } from '../args.ts';
import { sql } from 'kysely';
import type mysql from 'mysql2/promise';
import { systemClock } from '../../lib/core/clock.ts';
import { createAodbPool } from '../../lib/db/mysql.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { sisMessage } from '../../test/support/services.ts';
import { BENCH_INBOX, emptyAll, machine, median, openBench } from './setup.ts';
import { slices } from '../../lib/core/config.ts';

scriptHelp(import.meta.url);
const ROUNDS = Number(process.argv[2] ?? 7);
const SIZES = (process.argv[3] ?? '10000,100000,1000000').split(',').map(Number);

const b = await openBench();
const log = createLogger('bench', process.env.BENCH_LOG ?? 'silent');
// one connection: the handler counters of the session are exactly the round's reads
const inbox = createAodbPool(BENCH_INBOX, { timeoutMs: 120_000, connectionLimit: 1 });
const deps = { db: b.db, inbox, clock: systemClock, intake: slices(b.config).intake, log };
const batch = b.config['msgx.pipeline.claim-batch'];
const CHUNK = batch * 20; // FULL_SCAN_CHUNK_FACTOR in lib/pipeline/intake.ts

const body = sisMessage({
  type: 'FLOP',
  styp: 'GTDT',
  seqn: 7,
  dttm: '20261201083000',
  body: '<FLOP><FLID>1234</FLID><FFID>CA1234-D-20261201</FFID><GTDT GTNO="1"><GATE>G12</GATE><PGOT>01DEC260800</PGOT><PGCT>01DEC260830</PGCT><GTYP>D</GTYP></GTDT></FLOP>',
});
const COLS = `CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_DATE_PROCESSED, CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,
  CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_STATUS`;

async function handlerReads(): Promise<number> {
  const [rows] = await inbox.query<mysql.RowDataPacket[]>(`SHOW SESSION STATUS LIKE 'Handler_read%'`);
  return rows.reduce((s, r) => s + Number(r.Value), 0);
}
// cost of reading the counters themselves (SHOW STATUS materialises a table)
const overhead = await (async () => {
  const xs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const a = await handlerReads();
    xs.push((await handlerReads()) - a);
  }
  return median(xs);
})();

async function build(n: number, waiting: number): Promise<number> {
  const t = performance.now();
  await emptyAll(b);
  for (let from = 1; from <= n; from += 100_000) {
    const to = Math.min(n, from + 99_999);
    await inbox.query(
      `INSERT INTO cminmsgs (${COLS})
       SELECT seq, ?, '2026-12-01 08:00:00', IF(seq > ?, NULL, '2026-12-01 08:00:01'), 'AODB', seq % 999999, 'FLOP', 'GTDT', 'VALID'
       FROM seq_${from}_to_${to}`,
      [body, n - waiting],
    );
  }
  await sql`
    insert into proc_state (msg_id, state, kind, received_at, enqueued_at, terminal_at, backfill_next_at, backfill_at, updated_at, identity_key)
    select g, 'SUCCEEDED', 'FLOP/GTDT', '2026-12-01 08:00:00', now(), now(), now(), case when g > ${n - waiting} then null else now() end, now(), 'bench-' || g
    from generate_series(1, ${n}) g`.execute(b.db);
  await sql`vacuum analyze proc_state`.execute(b.db);
  await inbox.query('ANALYZE TABLE cminmsgs');
  return (performance.now() - t) / 1000;
}

let nextId = 0;
async function arrive(k: number): Promise<void> {
  await inbox.query(`INSERT INTO cminmsgs (${COLS}) SELECT ? + seq, ?, '2026-12-01 08:30:00', NULL, 'AODB', (? + seq) % 999999, 'FLOP', 'GTDT', 'VALID' FROM seq_1_to_${k}`, [nextId, body, nextId]);
  nextId += k;
}

const setCursor = (fullFrom: number | null, fullAt: 'now' | 'never') =>
  sql`update intake_cursor set full_scan_from = ${fullFrom}, full_scan_at = ${fullAt === 'now' ? sql`now()` : sql`null`}, gap_id = null, gap_seen_at = null`.execute(b.db);

interface Measured {
  msMedian: number;
  ms: number[];
  examinedMedian: number;
  scannedMedian: number;
  enqueuedMedian: number;
}

async function measure(prepare: () => Promise<unknown>): Promise<Measured> {
  const ms: number[] = [];
  const examined: number[] = [];
  const scanned: number[] = [];
  const enqueued: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await prepare();
    await arrive(batch);
    const before = await handlerReads();
    const t = performance.now();
    const r = await intakeRound(deps);
    ms.push(performance.now() - t);
    examined.push((await handlerReads()) - before - overhead);
    scanned.push(r.scanned);
    enqueued.push(r.enqueued.length);
  }
  return { msMedian: +median(ms).toFixed(1), ms: ms.map((x) => +x.toFixed(1)), examinedMedian: median(examined), scannedMedian: median(scanned), enqueuedMedian: median(enqueued) };
}

const results = [];
for (const n of SIZES) {
  const waiting = Math.min(100_000, Math.floor(n / 10));
  const buildSec = await build(n, waiting);
  nextId = n;
  await sql`update intake_cursor set watermark = ${n}`.execute(b.db);

  // warm-up round (statements, buffer pool for the tail)
  await setCursor(null, 'now');
  await arrive(batch);
  await intakeRound(deps);

  const watermarkOnly = await measure(() => setCursor(null, 'now'));
  const chunkOverWaiting = await measure(() => setCursor(n - waiting, 'now'));
  const firstChunk = await measure(() => setCursor(0, 'now'));

  // one whole full scan, chunk by chunk (fresh rows keep arriving)
  await setCursor(null, 'never');
  let fullRounds = 0;
  let slowest = 0;
  let fullMs = 0;
  for (;;) {
    await arrive(batch);
    const t = performance.now();
    await intakeRound(deps);
    const dt = performance.now() - t;
    fullMs += dt;
    slowest = Math.max(slowest, dt);
    fullRounds++;
    const cur = await sql<{ full_scan_from: string | null }>`select full_scan_from from intake_cursor`.execute(b.db);
    if (cur.rows[0].full_scan_from === null) break;
  }

  // O(inbox) reference: the unindexed IS NULL predicate over the whole table
  const t = performance.now();
  const before = await handlerReads();
  await inbox.query('SELECT COUNT(*) AS n FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NULL');
  const fullTableMs = performance.now() - t;
  const fullTableExamined = (await handlerReads()) - before - overhead;

  const res = {
    retained: n,
    waitingForBackfill: waiting,
    buildSec: +buildSec.toFixed(1),
    watermarkRound: watermarkOnly,
    roundWithChunkOverWaiting: chunkOverWaiting,
    roundWithFirstChunk: firstChunk,
    wholeFullScan: { rounds: fullRounds, totalMs: Math.round(fullMs), slowestRoundMs: +slowest.toFixed(1) },
    reference: { fullTableIsNullScanMs: +fullTableMs.toFixed(1), rowsExamined: fullTableExamined },
  };
  console.error(JSON.stringify(res));
  results.push(res);
}

console.log(JSON.stringify({ bench: 'B7 intake', machine: machine(), claimBatch: batch, fullScanChunkIds: CHUNK, roundsPerCase: ROUNDS, counterOverhead: overhead, results }, null, 2));
await inbox.end();
await b.close();
