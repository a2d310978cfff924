// B1 end to end: N FLOP messages (default 20,000) over F flights (default 2,000) land in the inbox
// at once; the real processes (intake, pump, backfill, msg-dispatch, schd-dispatch, state-dispatch — the
// Procfile's entry files, default configuration) take them to "terminal, backfilled into the
// inbox, and every msg event on Kafka". Reported: messages / (first insert → the last of those
// three), with the time each leg finished. Kafka is checked by the topic's high watermarks (the
// number of records the broker holds) against the msg events written. The yardstick, after each
// run: the batched write limit of the same FLOPs at the pump's default batch (write-limit.ts).
// Last lines: one summary line, one JSON line.
//   npm run bench:e2e -- [messages=20000] [flights=2000] [runs=1]
import { scriptHelp } from '../args.ts';
import { randomUUID } from 'node:crypto';
import kafkajs from '../../lib/db/kafkajs.ts';
import { sql } from 'kysely';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { sisMessage } from '../../test/support/services.ts';
import { cpuName, emptyAll, machine, median, openBench, type Bench, stateCounts, summary } from './setup.ts';
import { flopWorkloadLimit } from './write-limit.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { benchKafka, failWithLogs, startWorker, stopWorkers, waitFor } from './workers.ts';

scriptHelp(import.meta.url);
const N = Number(process.argv[2] ?? 20_000);
const F = Number(process.argv[3] ?? 2_000);
const RUNS = Number(process.argv[4] ?? 1);
const PROCESSES = ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch'] as const;
const { Kafka, logLevel } = kafkajs;
const log = createLogger('bench', 'silent');

const flop = (i: number) => {
  const flid = 1 + (i % F);
  const body = i % 2 === 0 ? ['REMC', `<REMC>R${i}</REMC>`] : ['STND', `<STND>S${i % 997}</STND>`];
  return sisMessage({ type: 'FLOP', styp: body[0], seqn: 2 + i, dttm: '20261201083000', body: `<FLOP><FLID>${flid}</FLID><FFID>x</FFID>${body[1]}</FLOP>` });
};

async function count(b: Bench, q: ReturnType<typeof sql<{ n: number }>>): Promise<number> {
  return (await q.execute(b.db)).rows[0].n;
}

async function oneRun(b: Bench, run: number) {
  const tag = randomUUID().slice(0, 8);
  const topics = { msg: `bench.${tag}.msg`, schd: `bench.${tag}.schd`, state: `bench.${tag}.state` };
  await emptyAll(b);
  const admin = new Kafka({ clientId: 'msgx-bench-e2e', ...benchKafka(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await b.inbox.query("INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, '2026-12-01 08:00:00', 'VALID')", [bigSnapshot(F, 1, { seqn: 1 })]);
  const base = 31000 + Math.floor(Math.random() * 500) * 10; // other runs on the machine may hold fixed ports
  const workers = PROCESSES.map((name, i) => startWorker(name, base + i, topics));
  try {
    await waitFor(
      'the snapshot applied and dispatched',
      async () =>
        (await count(b, sql`select count(*)::int as n from msg_event where state <> 'SENT'`)) === 0 && (await count(b, sql`select count(*)::int as n from proc_state where state = 'SUCCEEDED'`)) === 1,
      180_000,
    );
    const eventsBefore = await count(b, sql`select count(*)::int as n from msg_event where target = 'msg'`);
    const rows = Array.from({ length: N }, (_, i) => flop(i));
    const start = Date.now();
    for (let i = 0; i < rows.length; i += 500) {
      const chunk = rows.slice(i, i + 500);
      await b.inbox.query(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES ${chunk.map(() => "(?, '2026-12-01 08:30:00', 'VALID')").join(',')}`, chunk);
    }
    const inserted = Date.now();
    const at: Record<string, number> = {};
    await waitFor(
      'every message terminal, backfilled and its events sent',
      async () => {
        const now = Date.now();
        if (!at.terminal && (await count(b, sql`select count(*)::int as n from proc_state where state in ('SUCCEEDED','SKIPPED','DEAD')`)) === N + 1) at.terminal = now;
        if (at.terminal && !at.backfilled) {
          const [r] = await b.inbox.query<import('mysql2').RowDataPacket[]>('SELECT COUNT(*) n FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NULL');
          if (Number(r[0].n) === 0) at.backfilled = now;
        }
        if (at.terminal && !at.sent && (await count(b, sql`select count(*)::int as n from msg_event where state <> 'SENT'`)) === 0) at.sent = now;
        return Boolean(at.terminal && at.backfilled && at.sent);
      },
      600_000,
    );
    const end = Math.max(at.terminal, at.backfilled, at.sent);
    const events = await count(b, sql`select count(*)::int as n from msg_event where target = 'msg'`);
    const offsets = await admin.fetchTopicOffsets(topics.msg);
    const onKafka = offsets.reduce((a, o) => a + Number(o.high), 0);
    const exitCodes = await stopWorkers(workers);
    const states = await stateCounts(b);
    await admin.deleteTopics({ topics: [topics.msg, topics.schd, topics.state] }).catch(() => {});
    const res = {
      messages: N,
      insertSeconds: +((inserted - start) / 1000).toFixed(2),
      secondsTo: { terminal: +((at.terminal - start) / 1000).toFixed(2), backfilled: +((at.backfilled - start) / 1000).toFixed(2), allMsgEventsSent: +((at.sent - start) / 1000).toFixed(2) },
      msgPerSecEndToEnd: Math.round(N / ((end - start) / 1000)),
      msgEventsWritten: events - eventsBefore,
      recordsOnMsgTopic: onKafka,
      msgEventsTotal: events,
      states: states,
      exitCodes,
    };
    const limit = await flopWorkloadLimit(b, { snapshots: [bigSnapshot(F, 1, { seqn: 1 })], flops: rows, flights: F, k: b.config['msgx.pipeline.apply-batch'] }, log);
    const out = { ...res, batchedWriteLimitMsgPerSec: Math.round(limit.perSecond), ratio: +(res.msgPerSecEndToEnd / limit.perSecond).toFixed(3) };
    console.error(`run ${run + 1}: ${JSON.stringify(out)}`);
    return out;
  } catch (e) {
    return await failWithLogs(workers, e);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

const b = await openBench();
const results = [];
for (let run = 0; run < RUNS; run++) results.push(await oneRun(b, run));
const rate = median(results.map((r) => r.msgPerSecEndToEnd));
const limit = median(results.map((r) => r.batchedWriteLimitMsgPerSec));
const ratio = median(results.map((r) => r.ratio));
summary(`B1 end to end: ${rate} msg/s; batched write limit ${limit} msg/s; ratio ${ratio.toFixed(2)} (medians of ${RUNS}); ${cpuName()}`, {
  bench: 'B1 end to end',
  machine: machine(),
  cpu: cpuName(),
  messages: N,
  flights: F,
  processes: PROCESSES,
  runs: RUNS,
  msgPerSecMedian: rate,
  batchedWriteLimitMsgPerSecMedian: limit,
  ratioMedian: ratio,
  results,
});
await b.close();
