// B5: end-to-end latency, inbox insert → msg event on Kafka (target: p50 ≤ 300 ms, p99 ≤ 1 s at
// a steady 100 msg/s, default configuration). The real processes run (workers/intake.ts,
// pump.ts, backfill.ts, msg-dispatch.ts — the Procfile's entry files) against the benchmark
// databases, with a fresh msg/schd topic per run and their own HTTP ports (a random base from 32000). FLIGHTS
// flights exist first (one SCHD DNLD through those processes, all its events on Kafka); then
// FLOP messages for them are inserted into the inbox at RATE msg/s for SECONDS seconds, each
// insert's wall-clock time recorded just before the INSERT is sent. A real consumer reads the msg
// topic; an event is matched to its message by MSG_ID in the payload (the first event of each
// message counts). Two figures per message: until the record's Kafka timestamp (set by the
// producer when the dispatcher sends it) and until the consumer received it. The processes are
// stopped with SIGTERM at the end of each run (their exit codes are reported).
//   npm run bench:latency -- [rate=100] [seconds=60] [runs=1] [flights=400]
import { scriptHelp } from '../args.ts';
import { randomUUID } from 'node:crypto';
import kafkajs from '../../lib/db/kafkajs.ts';
import { sql } from 'kysely';
import { insertInboxRow } from '../../lib/pipeline/inbox.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { sisMessage } from '../../test/support/services.ts';
import { emptyAll, machine, median, openBench, type Bench } from './setup.ts';
import { benchKafka, failWithLogs, startWorker, stopWorkers, waitFor } from './workers.ts';

const { Kafka, logLevel } = kafkajs;

scriptHelp(import.meta.url);
const RATE = Number(process.argv[2] ?? 100);
const SECONDS = Number(process.argv[3] ?? 60);
const RUNS = Number(process.argv[4] ?? 1);
const FLIGHTS = Number(process.argv[5] ?? 400);
const PROCESSES = ['intake', 'pump', 'backfill', 'msg-dispatch'] as const;

const pct = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] : NaN);

// A FLOP that always changes its flight (so every message yields one msg event): the k-th visit
// of a flight sets a new remark / a new estimate.
function flop(i: number): string {
  const flid = 1 + (i % FLIGHTS);
  const visit = Math.floor(i / FLIGHTS);
  const body = i % 2 === 0 ? ['REMC', `<REMC>R${i}</REMC>`] : ['ESTT', `<ESTT>01DEC26${String(8 + (Math.floor(visit / 60) % 12)).padStart(2, '0')}${String(visit % 60).padStart(2, '0')}</ESTT>`];
  return sisMessage({ type: 'FLOP', styp: body[0], seqn: 2 + i, dttm: '20261201083000', body: `<FLOP><FLID>${flid}</FLID><FFID>x</FFID>${body[1]}</FLOP>` });
}

interface RunResult {
  injected: number;
  injectRate: number;
  matched: number;
  withoutEvent: number;
  missing: number;
  toKafkaTimestamp: { p50: number; p90: number; p99: number; max: number };
  toConsumer: { p50: number; p99: number; max: number };
  insertMsMedian: number;
  /** p50 (to the Kafka timestamp) of the messages inserted in each 10 s window. */
  p50By10s: number[];
  /** Messages injected / (first insert → last of their events on Kafka), msg/s. */
  deliveredRate: number;
  exitCodes: Record<string, number | null | string>;
  warnings: string[];
}

async function oneRun(b: Bench, run: number): Promise<RunResult> {
  const tag = randomUUID().slice(0, 8);
  const topics = { msg: `bench.${tag}.msg`, schd: `bench.${tag}.schd` };
  await emptyAll(b);
  await insertInboxRow(b.inbox, { body: bigSnapshot(FLIGHTS, 1, { seqn: 1 }), received: '2026-12-01 08:00:00' });
  const base = 32000 + Math.floor(Math.random() * 500) * 10; // other runs on the machine may hold fixed ports
  const workers = PROCESSES.map((name, i) => startWorker(name, base + i, topics));
  const k = new Kafka({ clientId: 'msgx-bench-latency', ...benchKafka(), logLevel: logLevel.NOTHING });
  const consumer = k.consumer({ groupId: `bench-${tag}`, sessionTimeout: 30_000, heartbeatInterval: 3000, maxWaitTimeInMs: 100 });
  try {
    // the snapshot applied and all its events on Kafka (this also creates the topic)
    await waitFor(
      'the snapshot to be applied and dispatched',
      async () => {
        const r = await sql<{ done: number; pending: number }>`
          select (select count(*)::int from proc_state where state = 'SUCCEEDED') as done,
                 (select count(*)::int from msg_event where target = 'msg' and state <> 'SENT') as pending`.execute(b.db);
        return r.rows[0].done === 1 && r.rows[0].pending === 0;
      },
      120_000,
    );

    const sentAt = new Map<number, number>(); // MSG_ID → wall-clock ms just before the INSERT
    const kafkaTs = new Map<number, number>();
    const seenAt = new Map<number, number>();
    let joined = false;
    consumer.on(consumer.events.GROUP_JOIN, () => (joined = true));
    await consumer.connect();
    await consumer.subscribe({ topic: topics.msg, fromBeginning: true });
    void consumer.run({
      eachBatch: async ({ batch }) => {
        const now = Date.now();
        for (const m of batch.messages) {
          const id = Number(/"MSG_ID": ?(\d+)/.exec(m.value!.toString())?.[1]);
          if (!seenAt.has(id)) {
            seenAt.set(id, now);
            kafkaTs.set(id, Number(m.timestamp));
          }
        }
      },
    });
    await waitFor('the consumer to join', async () => joined, 60_000);
    await new Promise((r) => setTimeout(r, 1000));

    // steady injection: message i is due at start + i / RATE seconds
    const total = Math.round(RATE * SECONDS);
    const insertMs: number[] = [];
    const pending: Promise<void>[] = [];
    const start = Date.now();
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const body = flop(i);
      const t0 = Date.now();
      const p0 = performance.now();
      pending.push(
        insertInboxRow(b.inbox, { body, received: '2026-12-01 08:30:00' }).then((id) => {
          sentAt.set(id, t0);
          insertMs.push(performance.now() - p0);
        }),
      );
    }
    await Promise.all(pending);
    const injectRate = total / ((Date.now() - start) / 1000);
    await waitFor(
      'every injected message to be terminal and its event consumed (or none written)',
      async () => {
        const r = await sql<{ open: number }>`select count(*)::int as open from proc_state where state in ('PENDING', 'FAILED')`.execute(b.db);
        if (r.rows[0].open > 0) return false;
        const unsent = await sql<{ n: number }>`select count(*)::int n from msg_event where target = 'msg' and state <> 'SENT'`.execute(b.db);
        if (unsent.rows[0].n > 0) return false;
        const expected = await sql<{ id: string }>`select distinct (payload->>'MSG_ID') as id from msg_event where target = 'msg'`.execute(b.db);
        return expected.rows.every((r) => !sentAt.has(Number(r.id)) || seenAt.has(Number(r.id)));
      },
      300_000,
    );
    await new Promise((r) => setTimeout(r, 2000)); // last fetches
    const exitCodes = await stopWorkers(workers);

    const withEvent = new Set((await sql<{ id: string }>`select distinct (payload->>'MSG_ID') as id from msg_event where target = 'msg'`.execute(b.db)).rows.map((r) => Number(r.id)));
    const toTs: number[] = [];
    const toConsumer: number[] = [];
    let withoutEvent = 0;
    let missing = 0;
    for (const [id, t0] of sentAt) {
      if (!withEvent.has(id)) {
        withoutEvent++;
        continue;
      }
      if (!seenAt.has(id)) {
        missing++;
        continue;
      }
      toTs.push(kafkaTs.get(id)! - t0);
      toConsumer.push(seenAt.get(id)! - t0);
    }
    // p50 per 10 s window of insert time: flat when the pipeline keeps up, rising when it queues
    const windows: number[][] = [];
    for (const [id, t0] of sentAt) {
      if (!kafkaTs.has(id)) continue;
      (windows[Math.floor((t0 - start) / 10_000)] ??= []).push(kafkaTs.get(id)! - t0);
    }
    const p50By10s = [...windows].map((w) =>
      w
        ? pct(
            w.sort((a, c) => a - c),
            0.5,
          )
        : NaN,
    );
    // pipeline throughput: injected messages / (first insert → last event on Kafka)
    const lastTs = Math.max(...[...sentAt.keys()].map((id) => kafkaTs.get(id) ?? 0));
    const deliveredRate = +(total / ((lastTs - start) / 1000)).toFixed(1);
    toTs.sort((a, c) => a - c);
    toConsumer.sort((a, c) => a - c);
    const warnings = workers.flatMap((w) =>
      w.logs
        .filter((l) => /"level":(40|50|60)/.test(l))
        .slice(0, 3)
        .map((l) => `${w.name}: ${l.slice(0, 300)}`),
    );
    const res: RunResult = {
      injected: total,
      injectRate: +injectRate.toFixed(1),
      matched: toTs.length,
      withoutEvent,
      missing,
      toKafkaTimestamp: { p50: pct(toTs, 0.5), p90: pct(toTs, 0.9), p99: pct(toTs, 0.99), max: toTs[toTs.length - 1] },
      toConsumer: { p50: pct(toConsumer, 0.5), p99: pct(toConsumer, 0.99), max: toConsumer[toConsumer.length - 1] },
      insertMsMedian: +median(insertMs).toFixed(1),
      p50By10s,
      deliveredRate,
      exitCodes,
      warnings,
    };
    console.error(`run ${run + 1}: ${JSON.stringify(res)}`);
    return res;
  } catch (e) {
    return await failWithLogs(workers, e);
  } finally {
    await consumer.disconnect().catch(() => {});
  }
}

const b = await openBench();
const results: RunResult[] = [];
for (let run = 0; run < RUNS; run++) results.push(await oneRun(b, run));
console.log(
  JSON.stringify(
    {
      bench: 'B5 latency',
      machine: machine(),
      rate: RATE,
      seconds: SECONDS,
      flights: FLIGHTS,
      processes: PROCESSES,
      runs: RUNS,
      p50MsMedian: median(results.map((r) => r.toKafkaTimestamp.p50)),
      p99MsMedian: median(results.map((r) => r.toKafkaTimestamp.p99)),
      results,
    },
    null,
    2,
  ),
);
await b.close();
