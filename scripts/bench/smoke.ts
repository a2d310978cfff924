// CI smoke of the benches (`npm run bench:smoke`, run by .ci/run after the tests; no time limit
// of its own): fails only on an order-of-magnitude regression. Every check is a RATIO of two
// figures measured in this run on this machine, never an absolute time, so a slow or busy
// machine passes and a regression of the code's shape fails. The three yardstick ratios of
// BENCHMARKS.md (each against the machine's own limit, scripts/bench/write-limit.ts and
// msg-outbox.ts) are bounded so that a tenfold regression from their usual value breaches and
// a threefold swing of a busy machine does not:
//   pump-limit  the pump at K = 200 (6,000 FLOPs over 500 flights) ÷ the batched write limit of
//               the same batches: ≥ 0.15 (0.38–0.62 in runs at load 5–25; B1's target 0.5).
//   snapshot-limit  a 2,000-flight SCHD DNLD's first apply (the process's first) ÷ its write
//               limit (the same rows, one statement per table): ≤ 8 (2.9–3.9 in runs at load 5–25,
//               18–28 with the plant below; B2's target 3).
//   dispatch-limit  msg dispatch at batch 500 ÷ the raw send rate of the same events in sends of
//               500 (no Postgres): ≥ 0.06 (0.16–0.25 in runs at load 5–25).
// and, as before:
//   dispatch  msg dispatch at batch 2,000 ≥ 0.8 × batch 500 (best of two drains each, sizes
//             alternated): a statement whose cost grows with the square of the batch breaks it.
//   pump      pump at K = 200 ≥ 0.15 × the single-client commit rate of this Postgres (`pgbench -N -c1`).
//   snapshot  the snapshot's RSS growth (peak sampled every 10 ms, minus the RSS before) ≤ 100 ×
//             the message size + 64 MB: holding a few more representations of every flight breaks it.
//   no-op     the same snapshot again, as a new message (0 events): its business and mirror steps
//             ≤ 0.25 × the first apply's (the snapshot digest; without it 0.4–0.7 ×).
//   no-op-decode  the same two: the no-op's read and decode step ≤ 0.75 × the first apply's (the
//             decode hints: ~0.3–0.4 ×; decoding every record again: ~1.0 ×).
// One line per check with its figures and ratio; exit code 1 when a check breaches.
// Self-test of the guard: BENCH_SMOKE_PLANT=snapshot plants a tenfold regression in the snapshot
// path — every statement of the pump's session during the first apply takes ten times as long
// (the wait is added on the smoke's own connection, lib/ is untouched) — and the snapshot-limit
// check must breach (exit 1).
// Its own databases (the bench set-up's: msgx_bench, aodbinterface_bench, Redis db 11) and its own
// Kafka topics (smoke.<random>.msg/.schd/.raw, deleted at the end). Run under `flock /tmp/bench.lock` beside other benches.
import { randomUUID } from 'node:crypto';
import kafkajs from '../../lib/db/kafkajs.ts';
import { benchKafka } from './workers.ts';
import type pg from 'pg';
import { connectClient } from '../../lib/db/postgres.ts';
import { createQuerySessionDb } from '../../lib/db/kysely.ts';
import { sql } from 'kysely';
import { systemClock } from '../../lib/core/clock.ts';
import { type Config, loadConfig, slices } from '../../lib/core/config.ts';
import { createKafkaEdge, kafkaOptions } from '../../lib/dispatch/kafka.ts';
import { msgRound, type DispatchDeps } from '../../lib/dispatch/msg.ts';
import { insertInboxRow } from '../../lib/pipeline/inbox.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { drain, tick } from '../../lib/pipeline/pump/loop.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { sisMessage } from '../../test/support/services.ts';
import { drainMsg, fillMsgOutbox, msgEvents, rawSendRate } from './msg-outbox.ts';
import { BENCH_INBOX, BENCH_PG, BENCH_REDIS, type Bench, commitRate, emptyAll, openBench, pumpDeps } from './setup.ts';
import { emptySnapshotTables, flopWorkloadLimit, runLimit, snapshotWrites } from './write-limit.ts';

const DISPATCH_MIN_RATIO = 0.8;
const PUMP_MIN_RATIO = 0.15;
const PUMP_LIMIT_MIN_RATIO = 0.15;
const SNAPSHOT_LIMIT_MAX_RATIO = 8;
const DISPATCH_LIMIT_MIN_RATIO = 0.06;
const SNAPSHOT_FLIGHTS = 2000;
const SNAPSHOT_COPIES = 100;
const SNAPSHOT_ALLOWANCE = 64 * 2 ** 20;
const NOOP_MAX_RATIO = 0.25;
const NOOP_DECODE_MAX_RATIO = 0.75;
const EVENTS = 20_000;
const FLIDS = 2_000;
const PUMP_MESSAGES = 6_000;
const PUMP_FLIGHTS = 500;
const COMMIT_SECONDS = 5;

const started = performance.now();
const tag = randomUUID().slice(0, 8);
const msgTopic = `smoke.${tag}.msg`;
const schdTopic = `smoke.${tag}.schd`;
const rawTopic = `smoke.${tag}.raw`;
const plant = process.env.BENCH_SMOKE_PLANT;
if (plant !== undefined && plant !== 'snapshot') throw new Error(`BENCH_SMOKE_PLANT: only 'snapshot' is known, not ${plant}`);
const b = await openBench({ MSGX_KAFKA_MSG_TOPIC: msgTopic, MSGX_KAFKA_SCHD_TOPIC: schdTopic });
const log = createLogger('smoke', process.env.BENCH_LOG ?? 'silent');
const breaches: string[] = [];
const mb = (n: number) => `${(n / 2 ** 20).toFixed(0)} MB`;

function report(check: string, figures: string, ratio: number, bound: string, ok: boolean): void {
  console.log(`${ok ? 'ok    ' : 'BREACH'} ${check.padEnd(12)} ${figures}; ratio ${ratio.toFixed(2)} (bound ${bound})`);
  if (!ok) breaches.push(check);
}

// ---------------------------------------------------------------------------------------------
// snapshot memory: first, while the process holds nothing else of size
{
  await emptyAll(b);
  const xml = bigSnapshot(SNAPSHOT_FLIGHTS, 1, { seqn: 1 });
  await insertInboxRow(b.inbox, { body: xml, received: '2026-12-01 08:00:00' });
  await insertInboxRow(b.inbox, { body: xml.replace(/<SEQN>\d+/, '<SEQN>2'), received: '2026-12-01 08:00:00' });
  await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(b.config).intake, log });
  const timings: Record<string, number> = {};
  const planted = plant === 'snapshot' ? await tenfoldSession() : null;
  let deps = pumpDeps(planted ? { ...b, session: planted.db } : b, { log, timings });
  const before = process.memoryUsage().rss;
  const t0 = performance.now();
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const r = await tick(deps);
  const firstMs = performance.now() - t0;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  if (r.kind !== 'processed' || r.state !== 'SUCCEEDED') throw new Error(`snapshot: ${JSON.stringify(r)}`);
  await planted?.client.end();
  if (planted) deps = pumpDeps(b, { log, timings }); // the rest on the ordinary session
  const writes = await snapshotWrites(b, r.msgId, systemClock.now());
  const growth = peak - before;
  const size = Buffer.byteLength(xml);
  const bound = SNAPSHOT_COPIES * size + SNAPSHOT_ALLOWANCE;
  report(
    'snapshot',
    `${SNAPSHOT_FLIGHTS} flights, message ${mb(size)}, RSS growth ${mb(growth)}`,
    growth / size,
    `≤ ${SNAPSHOT_COPIES} × message + ${mb(SNAPSHOT_ALLOWANCE)} = ${mb(bound)}`,
    growth <= bound,
  );
  // the same content again: what the merge and write path costs, first apply against no-op
  const applySteps = () => (timings.business ?? 0) + (timings.mirror ?? 0);
  const first = applySteps();
  const firstDecode = timings['bodies+decode'] ?? 0;
  const again = await tick(deps);
  if (again.kind !== 'processed' || again.state !== 'SUCCEEDED') throw new Error(`snapshot again: ${JSON.stringify(again)}`);
  const noop = applySteps() - first;
  report('no-op', `business + mirror steps: first apply ${Math.round(first)} ms, the same content again ${Math.round(noop)} ms`, noop / first, `≤ ${NOOP_MAX_RATIO}`, noop <= NOOP_MAX_RATIO * first);
  const noopDecode = (timings['bodies+decode'] ?? 0) - firstDecode;
  report(
    'no-op-decode',
    `read and decode: first apply ${Math.round(firstDecode)} ms, the same content again ${Math.round(noopDecode)} ms`,
    noopDecode / firstDecode,
    `≤ ${NOOP_DECODE_MAX_RATIO}`,
    noopDecode <= NOOP_DECODE_MAX_RATIO * firstDecode,
  );
  // the first apply against its write limit: the same rows written again, one statement per table
  await emptySnapshotTables(b, r.msgId);
  const limit = await runLimit(BENCH_PG, [writes], 1);
  const limitMs = limit.seconds * 1000;
  report(
    'snapshot-limit',
    `first apply ${Math.round(firstMs)} ms${planted ? ' (PLANTED: every statement ten times as long)' : ''}, write limit ${Math.round(limitMs)} ms for ${Object.values(limit.rows).reduce((a, x) => a + x, 0)} rows`,
    firstMs / limitMs,
    `≤ ${SNAPSHOT_LIMIT_MAX_RATIO}`,
    firstMs <= SNAPSHOT_LIMIT_MAX_RATIO * limitMs,
  );
}

// ---------------------------------------------------------------------------------------------
// msg dispatch: batch 2,000 against batch 500
{
  const kafka = createKafkaEdge(kafkaOptions(slices(b.config).kafka, log));
  await kafka.ensureTopics([msgTopic, schdTopic, rawTopic]);
  const depsWith = (o: Partial<Config>): DispatchDeps => ({ db: b.db, kafka, dispatch: slices({ ...b.config, ...o } as Config).dispatch, clock: systemClock, log });
  const now = new Date();
  const events = msgEvents(EVENTS, FLIDS, now);
  await fillMsgOutbox(b, events, now);
  await msgRound(depsWith({ 'msgx.msg.batch': 500 })); // warm the producer and the statements
  const best = new Map<number, number>();
  let raw = 0;
  for (const batch of [500, 2000, 2000, 500]) {
    await fillMsgOutbox(b, events, now);
    const { sent, sec } = await drainMsg(b, depsWith({ 'msgx.msg.batch': batch }), EVENTS);
    best.set(batch, Math.max(best.get(batch) ?? 0, sent / sec));
    if (batch === 500) raw = Math.max(raw, await rawSendRate(kafka, rawTopic, events, 500));
  }
  await kafka.close();
  await deleteTopics([msgTopic, schdTopic, rawTopic]);
  const [small, large] = [best.get(500)!, best.get(2000)!];
  report(
    'dispatch',
    `msg ${EVENTS} events: batch 500 ${Math.round(small)} events/s, batch 2000 ${Math.round(large)} events/s`,
    large / small,
    `≥ ${DISPATCH_MIN_RATIO}`,
    large >= DISPATCH_MIN_RATIO * small,
  );
  report(
    'dispatch-limit',
    `msg at batch 500 ${Math.round(small)} events/s, raw send of the same events ${Math.round(raw)} events/s`,
    small / raw,
    `≥ ${DISPATCH_LIMIT_MIN_RATIO}`,
    small >= DISPATCH_LIMIT_MIN_RATIO * raw,
  );
  await sql`truncate msg_event`.execute(b.db);
}

// ---------------------------------------------------------------------------------------------
// pump at K = 200 against the single-client commit rate
{
  const commits = await commitRate(COMMIT_SECONDS);
  const flops: string[] = [];
  for (let i = 0; i < PUMP_MESSAGES; i++) {
    const flid = 1 + (i % PUMP_FLIGHTS);
    flops.push(sisMessage({ type: 'FLOP', styp: 'STND', seqn: 2 + i, dttm: '20261201083000', body: `<FLOP><FLID>${flid}</FLID><FFID>x</FFID><STND>S${i % 97}</STND></FLOP>` }));
  }
  const config = loadConfig({ DATABASE_URL: BENCH_PG, INBOX_URL: BENCH_INBOX, REDIS_URL: BENCH_REDIS, MSGX_LOG_LEVEL: 'silent', MSGX_PIPELINE_CLAIM_BATCH: '5000', MSGX_PIPELINE_APPLY_BATCH: '200' });
  /** Fresh stores, the FLOPs waiting behind their flights' snapshot (applied). */
  const prepare = async () => {
    await emptyAll(b);
    const rows = [bigSnapshot(PUMP_FLIGHTS, 1, { seqn: 1 }), ...flops];
    for (let i = 0; i < rows.length; i += 500) {
      const chunk = rows.slice(i, i + 500);
      await b.inbox.query(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES ${chunk.map(() => "(?, '2026-12-01 08:00:00', 'VALID')").join(',')}`, chunk);
    }
    while ((await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(config).intake, log })).enqueued.length > 0);
    const deps = pumpDeps(b, { log, config });
    await tick(deps); // the snapshot: the FLOPs' flights exist
    await sql`vacuum analyze proc_state`.execute(b.db);
    return deps;
  };
  // the batched write limit of the same batches first (on stores as the pump finds them)
  const limit = await flopWorkloadLimit(b, { snapshots: [bigSnapshot(PUMP_FLIGHTS, 1, { seqn: 1 })], flops, flights: PUMP_FLIGHTS, k: 200 }, log);
  const deps = await prepare();
  const t = performance.now();
  await drain(deps, 120_000);
  const sec = (performance.now() - t) / 1000;
  const done = await sql<{ n: number }>`select count(*)::int n from proc_state where state = 'SUCCEEDED'`.execute(b.db);
  if (done.rows[0].n !== PUMP_MESSAGES + 1) throw new Error(`pump: ${done.rows[0].n} of ${PUMP_MESSAGES + 1} messages SUCCEEDED`);
  const rate = PUMP_MESSAGES / sec;
  report(
    'pump',
    `K=200 ${PUMP_MESSAGES} messages ${Math.round(rate)} msg/s, single-client commits ${Math.round(commits.rate)}/s (${commits.how})`,
    rate / commits.rate,
    `≥ ${PUMP_MIN_RATIO}`,
    rate >= PUMP_MIN_RATIO * commits.rate,
  );
  report(
    'pump-limit',
    `K=200 ${Math.round(rate)} msg/s, batched write limit of the same batches ${Math.round(limit.perSecond)} msg/s`,
    rate / limit.perSecond,
    `≥ ${PUMP_LIMIT_MIN_RATIO}`,
    rate >= PUMP_LIMIT_MIN_RATIO * limit.perSecond,
  );
}

await emptyAll(b);
await b.close();
console.log(`smoke: ${breaches.length ? `BREACHED ${breaches.join(', ')}` : 'all checks within bounds'} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
process.exit(breaches.length ? 1 : 0);

/** The smoke's Kafka topics, deleted afterwards (it leaves nothing on the broker). */
async function deleteTopics(topics: string[]): Promise<void> {
  const admin = new kafkajs.Kafka({ clientId: 'msgx-smoke-cleanup', ...benchKafka(b.config), logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics, timeout: 10_000 });
  } finally {
    await admin.disconnect();
  }
}

/**
 * The planted regression of the self-test (BENCH_SMOKE_PLANT=snapshot): a session of its own
 * whose every statement resolves only after nine times its own duration more, i.e. takes ten
 * times as long.
 */
async function tenfoldSession(): Promise<{ client: pg.Client; db: Bench['session'] }> {
  const client = await connectClient(BENCH_PG, 'smoke-planted');
  const query = client.query.bind(client) as (...a: unknown[]) => Promise<unknown>;
  Object.assign(client, {
    query: async (...a: unknown[]) => {
      const t = performance.now();
      const r = await query(...a);
      await new Promise((resolve) => setTimeout(resolve, 9 * (performance.now() - t)));
      return r;
    },
  });
  return { client, db: createQuerySessionDb(client) };
}
