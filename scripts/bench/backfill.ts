// B4: backfill throughput (target: ≥ 5,000 inbox rows/s marked). ROWS terminal PROC_STATE rows
// (default 100,000; SUCCEEDED, terminal, no BACKFILL_AT) whose inbox rows still have
// CMINMSGS_DATE_PROCESSED NULL, written in bulk straight into both databases (a FLOP body of
// realistic size per inbox row); then backfillRound until nothing is owed, with each batch size
// (msgx.pipeline.backfill-batch) in turn, the order alternating between runs. Between
// measurements both sides are set back to "owed". Medians over RUNS runs.
//   npm run bench:backfill -- [runs=3] [batches=500,2000] [rows=100000]
import { scriptHelp } from '../args.ts';
import { sql } from 'kysely';
import { systemClock } from '../../lib/core/clock.ts';
import { backfillRound } from '../../lib/pipeline/backfill.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { sisMessage } from '../../test/support/services.ts';
import { emptyAll, machine, median, openBench } from './setup.ts';
import { slices } from '../../lib/core/config.ts';

scriptHelp(import.meta.url);
const runs = Number(process.argv[2] ?? 3);
const batches = (process.argv[3] ?? '500,2000').split(',').map(Number);
const ROWS = Number(process.argv[4] ?? 100_000);

const b = await openBench();
const log = createLogger('bench', process.env.BENCH_LOG ?? 'silent');
await emptyAll(b);

// inbox: ids 1..ROWS, unprocessed
const body = sisMessage({ type: 'FLOP', styp: 'ESTT', seqn: 7, dttm: '20261201083000', body: '<FLOP><FLID>1234</FLID><FFID>CA1234-D-20261201</FFID><ESTT>01DEC260915</ESTT></FLOP>' });
let t = performance.now();
await b.inbox.query(
  `INSERT INTO cminmsgs (CMINMSGS_ID, CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_SUBSYSTEM_NAME, CMINMSGS_SUBSYSTEM_SEQUENCE,
     CMINMSGS_SUBSYSTEM_TYPE, CMINMSGS_SUBSYSTEM_SUBTYPE, CMINMSGS_STATUS)
   SELECT seq, ?, '2026-12-01 08:00:00', 'AODB', seq % 999999, 'FLOP', 'ESTT', 'VALID' FROM seq_1_to_${ROWS}`,
  [body],
);
// PROC_STATE: the same ids, SUCCEEDED and owed a backfill (as markTerminal leaves them)
await sql`
  insert into proc_state (msg_id, state, kind, received_at, enqueued_at, terminal_at, backfill_next_at, updated_at, identity_key)
  select g, 'SUCCEEDED', 'FLOP/ESTT', '2026-12-01 08:00:00', now() - interval '1 minute', now(), now(), now(), 'bench-' || g
  from generate_series(1, ${ROWS}) g`.execute(b.db);
await sql`vacuum analyze proc_state`.execute(b.db);
const buildSec = (performance.now() - t) / 1000;

async function reset(): Promise<void> {
  await b.inbox.query('UPDATE cminmsgs SET CMINMSGS_DATE_PROCESSED = NULL');
  await sql`update proc_state set backfill_at = null, backfill_next_at = now(), backfill_attempts = 0`.execute(b.db);
  await sql`vacuum analyze proc_state`.execute(b.db);
}

const rates = new Map<number, number[]>(batches.map((n) => [n, []]));
const roundsOf = new Map<number, number>();
for (let run = 0; run < runs; run++) {
  const order = run % 2 === 0 ? batches : [...batches].reverse();
  for (const batch of order) {
    await reset();
    const d = { db: b.db, inbox: b.inbox, clock: systemClock, backfill: { ...slices(b.config).backfill, batch }, log };
    let written = 0;
    let rounds = 0;
    t = performance.now();
    for (;;) {
      const r = await backfillRound(d);
      if (r.transient.length || r.missing.length) throw new Error(`backfill round: ${JSON.stringify({ ...r, transient: r.transient.length, missing: r.missing.length })}`);
      if (r.candidates === 0) break;
      written += r.written;
      rounds++;
    }
    const sec = (performance.now() - t) / 1000;
    const [[left]] = (await b.inbox.query('SELECT COUNT(*) AS n FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NULL')) as unknown as [[{ n: number }]];
    const owed = await sql<{ n: number }>`select count(*)::int n from proc_state where backfill_at is null`.execute(b.db);
    if (written !== ROWS || Number(left.n) !== 0 || owed.rows[0].n !== 0) throw new Error(`backfill: wrote ${written} of ${ROWS}; ${left.n} inbox rows unmarked, ${owed.rows[0].n} owed`);
    rates.get(batch)!.push(written / sec);
    roundsOf.set(batch, rounds);
    console.error(`run ${run + 1} batch ${batch}: ${Math.round(written / sec)} rows/s (${rounds} rounds, ${sec.toFixed(2)} s)`);
  }
}

console.log(
  JSON.stringify(
    {
      bench: 'B4 backfill',
      machine: machine(),
      rows: ROWS,
      runs,
      buildSec: +buildSec.toFixed(1),
      byBatch: [...rates].map(([batch, xs]) => ({ batch, rowsPerSecMedian: Math.round(median(xs)), runs: xs.map(Math.round), rounds: roundsOf.get(batch) })),
    },
    null,
    2,
  ),
);
await b.close();
