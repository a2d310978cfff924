// CI smoke of the benches (`npm run bench:smoke`, run by .ci/run after the tests; 10–14 s in
// BENCHMARKS.md's runs, no time limit of its own): fails only on an order-of-magnitude
// regression. Every check is a RATIO of two figures measured in this run on this machine, never
// an absolute time, so a slow or busy machine passes and a regression of the code's shape fails:
//   dispatch  msg dispatch at batch 2,000 ≥ 0.8 × batch 500 (the same code as the B3 bench,
//             scripts/bench/msg-outbox.ts; best of two drains each, sizes alternated). A
//             statement whose cost grows with the square of the batch breaks it.
//   pump      pump at K = 200 ≥ 0.15 × the single-client commit rate of this Postgres (pgbench,
//             one connection, a one-row insert per transaction; without pgbench the same
//             transactions from one node-postgres connection, a few % slower).
//   snapshot  a 2,000-flight SCHD DNLD (1.1 MB) through the pump: the process's RSS growth (peak
//             sampled every 10 ms, minus the RSS before) ≤ 100 × the message size + 64 MB. The
//             decoded flights weigh far more than their XML: the growth was ~100 MB (≈ 85 ×) when
//             this was written; the bound lets it double, not more — holding a few more
//             representations of every flight at once breaks it.
//   no-op     the same snapshot again, as a new message (0 events): its business and mirror steps
//             ≤ 0.25 × the first apply's. With the snapshot digest (docs/decisions.md "Snapshot
//             digest") an unchanged flight costs a hash and a lookup; without it the second apply
//             paid the whole merge and write path again (0.4–0.7 × the first).
//   no-op-decode  the same two: the no-op's read and decode step ≤ 0.75 × the first apply's. With
//             the decode hints an unchanged record is hashed, not decoded (~0.3–0.4 ×); decoding
//             every record again costs as much as the first time (~1.0 ×).
// One line per check with its figures and ratio; exit code 1 when a check breaches.
// Its own databases (the bench set-up's: msgx_bench, aodbinterface_bench, Redis db 11) and its own
// Kafka topics (smoke.<random>.msg/.schd, deleted at the end). Run under `flock /tmp/bench.lock` beside other benches.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import kafkajs from '../../lib/db/kafkajs.ts';
import { benchKafka } from './workers.ts';
import pg from 'pg';
import { connectionSettings } from '../../lib/db/postgres.ts';
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
import { drainMsg, fillMsgOutbox, msgEvents } from './msg-outbox.ts';
import { BENCH_INBOX, BENCH_PG, BENCH_REDIS, emptyAll, openBench, pumpDeps } from './setup.ts';

const DISPATCH_MIN_RATIO = 0.8;
const PUMP_MIN_RATIO = 0.15;
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
  const deps = pumpDeps(b, { log, timings });
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const r = await tick(deps);
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  if (r.kind !== 'processed' || r.state !== 'SUCCEEDED') throw new Error(`snapshot: ${JSON.stringify(r)}`);
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
}

// ---------------------------------------------------------------------------------------------
// msg dispatch: batch 2,000 against batch 500
{
  const kafka = createKafkaEdge(kafkaOptions(slices(b.config).kafka, log));
  await kafka.ensureTopics([msgTopic, schdTopic]);
  const depsWith = (o: Partial<Config>): DispatchDeps => ({ db: b.db, kafka, dispatch: slices({ ...b.config, ...o } as Config).dispatch, clock: systemClock, log });
  const now = new Date();
  const events = msgEvents(EVENTS, FLIDS, now);
  await fillMsgOutbox(b, events, now);
  await msgRound(depsWith({ 'msgx.msg.batch': 500 })); // warm the producer and the statements
  const best = new Map<number, number>();
  for (const batch of [500, 2000, 2000, 500]) {
    await fillMsgOutbox(b, events, now);
    const { sent, sec } = await drainMsg(b, depsWith({ 'msgx.msg.batch': batch }), EVENTS);
    best.set(batch, Math.max(best.get(batch) ?? 0, sent / sec));
  }
  await kafka.close();
  await deleteTopics([msgTopic, schdTopic]);
  const [small, large] = [best.get(500)!, best.get(2000)!];
  report(
    'dispatch',
    `msg ${EVENTS} events: batch 500 ${Math.round(small)} events/s, batch 2000 ${Math.round(large)} events/s`,
    large / small,
    `≥ ${DISPATCH_MIN_RATIO}`,
    large >= DISPATCH_MIN_RATIO * small,
  );
  await sql`truncate msg_event`.execute(b.db);
}

// ---------------------------------------------------------------------------------------------
// pump at K = 200 against the single-client commit rate
{
  const commits = await commitRate();
  await emptyAll(b);
  const rows = [bigSnapshot(PUMP_FLIGHTS, 1, { seqn: 1 })];
  for (let i = 0; i < PUMP_MESSAGES; i++) {
    const flid = 1 + (i % PUMP_FLIGHTS);
    rows.push(sisMessage({ type: 'FLOP', styp: 'STND', seqn: 2 + i, dttm: '20261201083000', body: `<FLOP><FLID>${flid}</FLID><FFID>x</FFID><STND>S${i % 97}</STND></FLOP>` }));
  }
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    await b.inbox.query(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES ${chunk.map(() => "(?, '2026-12-01 08:00:00', 'VALID')").join(',')}`, chunk);
  }
  const config = loadConfig({ DATABASE_URL: BENCH_PG, INBOX_URL: BENCH_INBOX, REDIS_URL: BENCH_REDIS, MSGX_LOG_LEVEL: 'silent', MSGX_PIPELINE_CLAIM_BATCH: '5000', MSGX_PIPELINE_APPLY_BATCH: '200' });
  while ((await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(config).intake, log })).enqueued.length > 0);
  const deps = pumpDeps(b, { log, config });
  await tick(deps); // the snapshot: the FLOPs' flights exist
  await sql`vacuum analyze proc_state`.execute(b.db);
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

/** One client's commit rate: pgbench when installed, else the same one-row transactions from one connection. */
async function commitRate(): Promise<{ rate: number; how: string }> {
  const setup = 'set client_min_messages = warning; create table if not exists bench_commit (id bigserial primary key, v int); truncate bench_commit;';
  let pgbench = true;
  try {
    execFileSync('pgbench', ['--version'], { stdio: 'ignore' });
  } catch {
    pgbench = false;
  }
  if (pgbench) {
    execFileSync('psql', [BENCH_PG, '-qc', setup]);
    const script = join(tmpdir(), `msgx-smoke-${tag}.sql`);
    writeFileSync(script, 'insert into bench_commit (v) values (1);\n');
    const out = execFileSync('pgbench', ['-n', '-c', '1', '-T', String(COMMIT_SECONDS), '-f', script, BENCH_PG], { encoding: 'utf8' });
    return { rate: Number(/tps = ([\d.]+)/.exec(out)?.[1]), how: 'pgbench' };
  }
  const c = new pg.Client(connectionSettings(BENCH_PG, 'bench-commit'));
  await c.connect();
  await c.query(setup);
  let n = 0;
  const end = performance.now() + COMMIT_SECONDS * 1000;
  const t = performance.now();
  while (performance.now() < end) {
    await c.query({ name: 'smoke_commit', text: 'insert into bench_commit (v) values (1)' });
    n++;
  }
  const rate = n / ((performance.now() - t) / 1000);
  await c.end();
  return { rate, how: 'one pg connection' };
}
