// B3: dispatch throughput to a real Kafka broker (target: msg ≥ 20,000 events/s, schd ≥ 5,000
// flights/s). msg: EVENTS outbox rows (default 100,000) over FLIDS FLIDs (default 10,000; the
// domain's UPSERT payload), written with the store's own writer, drained by msgRound until
// nothing is due — once per msg batch size (msgx.msg.batch) per run. schd: 10,000 flights created
// through the real pump (a 9,999-flight SCHD DNLD and one more), their 10,000 PENDING schd rows
// drained by schdRound — once per flush limit (msgx.schd.flush-limit) per run, the rows set back
// to PENDING between measurements. state: the same 10,000 flights' state rows drained by
// stateRound at the default batch, once per run. Sizes alternate within a run; medians over RUNS
// runs. Fresh topics per invocation (bench.<random>.msg / .schd / .state); at the end a real
// consumer reads the topics back and counts: every EVENT_ID sent, every flight of every schd
// record, every state record and its key.
//   npm run bench:dispatch -- [runs=3] [msgBatches=500,2000,5000] [schdFlushLimits=200,1000,5000] [events=100000] [flids=10000]
import { scriptHelp } from '../args.ts';
import { randomUUID } from 'node:crypto';
import kafkajs from '../../lib/db/kafkajs.ts';
import { benchKafka } from './workers.ts';
import { sql } from 'kysely';
import { systemClock } from '../../lib/core/clock.ts';
import { type Config, slices } from '../../lib/core/config.ts';
import { createKafkaEdge, kafkaOptions } from '../../lib/dispatch/kafka.ts';
import { msgRound, type DispatchDeps } from '../../lib/dispatch/msg.ts';
import { schdRound } from '../../lib/dispatch/schd.ts';
import { stateRound } from '../../lib/dispatch/state.ts';
import { createLogger } from '../../lib/runtime/log.ts';
import { drainMsg, fillMsgOutbox, msgEvents, rawSendRate } from './msg-outbox.ts';
import { cpuName, emptyAll, machine, median, openBench, pumpTenThousandFlights, summary } from './setup.ts';

const { Kafka, logLevel } = kafkajs;

scriptHelp(import.meta.url);
const runs = Number(process.argv[2] ?? 3);
const msgBatches = (process.argv[3] ?? '500,2000,5000').split(',').map(Number);
const schdLimits = (process.argv[4] ?? '200,1000,5000').split(',').map(Number);
const EVENTS = Number(process.argv[5] ?? 100_000);
const FLIDS = Number(process.argv[6] ?? 10_000);
const SCHD_FLIGHTS = 10_000;

const tag = randomUUID().slice(0, 8);
const msgTopic = `bench.${tag}.msg`;
const schdTopic = `bench.${tag}.schd`;
const stateTopic = `bench.${tag}.state`;
const rawTopic = `bench.${tag}.raw`;
const b = await openBench({ MSGX_KAFKA_MSG_TOPIC: msgTopic, MSGX_KAFKA_SCHD_TOPIC: schdTopic, MSGX_KAFKA_STATE_TOPIC: stateTopic });
const log = createLogger('bench', process.env.BENCH_LOG ?? 'silent');
const kafka = createKafkaEdge(kafkaOptions(slices(b.config).kafka, log));
await kafka.ensureTopics([msgTopic, schdTopic, rawTopic, { topic: stateTopic, compacted: true }]);
const depsWith = (o: Partial<Config>): DispatchDeps => ({ db: b.db, kafka, dispatch: slices({ ...b.config, ...o } as Config).dispatch, clock: systemClock, log });
await emptyAll(b);

// ---------------------------------------------------------------------------------------------
// msg topic (scripts/bench/msg-outbox.ts, shared with the CI smoke)
const now = new Date();
const events = msgEvents(EVENTS, FLIDS, now);

// warm the producer and the statements
await fillMsgOutbox(b, events, now);
await msgRound(depsWith({ 'msgx.msg.batch': 500 }));

const msgRates = new Map<number, number[]>(msgBatches.map((n) => [n, []]));
const rawRates = new Map<number, number[]>(msgBatches.map((n) => [n, []]));
const msgRounds = new Map<number, number>();
let msgSentTotal = 0; // the warm-up round, set below
{
  const r = await sql<{ n: number }>`select count(*)::int n from msg_event where state = 'SENT'`.execute(b.db);
  msgSentTotal = r.rows[0].n;
}
for (let run = 0; run < runs; run++) {
  const order = run % 2 === 0 ? msgBatches : [...msgBatches].reverse();
  for (const batch of order) {
    await fillMsgOutbox(b, events, now);
    const { sent, rounds, sec } = await drainMsg(b, depsWith({ 'msgx.msg.batch': batch }), EVENTS);
    msgSentTotal += sent;
    msgRates.get(batch)!.push(sent / sec);
    msgRounds.set(batch, rounds);
    const raw = await rawSendRate(kafka, rawTopic, events, batch);
    rawRates.get(batch)!.push(raw);
    console.error(`msg run ${run + 1} batch ${batch}: ${Math.round(sent / sec)} events/s (${rounds} rounds, ${sec.toFixed(2)} s); raw send ${Math.round(raw)} events/s`);
  }
}

// ---------------------------------------------------------------------------------------------
// schd topic: 10,000 real flights through the pump
await pumpTenThousandFlights(b, log);
await sql`delete from msg_event where target = 'msg'`.execute(b.db);
const pendingSchd = await sql<{ n: number }>`select count(*)::int n from msg_event where target = 'schd' and state = 'PENDING'`.execute(b.db);
if (pendingSchd.rows[0].n !== SCHD_FLIGHTS) throw new Error(`expected ${SCHD_FLIGHTS} PENDING schd rows after the snapshots, got ${pendingSchd.rows[0].n}`);
const resetSchd = () =>
  sql`update msg_event set state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null, kafka_partition = null, kafka_offset = null
      where target = 'schd'`.execute(b.db);

const schdRates = new Map<number, number[]>(schdLimits.map((n) => [n, []]));
const schdRecords = new Map<number, number>();
let schdFlightsTotal = 0;
let schdRecordsTotal = 0;
// warm-up (loader statements, producer): one round, counted in the consumer's totals
{
  const r = await schdRound(depsWith({ 'msgx.schd.flush-limit': 200 }));
  schdFlightsTotal += r.sent;
  schdRecordsTotal += r.records;
}
for (let run = 0; run < runs; run++) {
  const order = run % 2 === 0 ? schdLimits : [...schdLimits].reverse();
  for (const limit of order) {
    await resetSchd();
    await sql`vacuum analyze msg_event`.execute(b.db);
    const d = depsWith({ 'msgx.schd.flush-limit': limit });
    let sent = 0;
    let records = 0;
    const t = performance.now();
    for (;;) {
      const r = await schdRound(d);
      if (r.failed || r.dead || r.gone) throw new Error(`schd round: ${JSON.stringify(r)}`);
      if (r.picked === 0) break;
      sent += r.sent;
      records += r.records;
    }
    const sec = (performance.now() - t) / 1000;
    if (sent !== SCHD_FLIGHTS) throw new Error(`schd: sent ${sent} of ${SCHD_FLIGHTS}`);
    schdFlightsTotal += sent;
    schdRecordsTotal += records;
    schdRates.get(limit)!.push(sent / sec);
    schdRecords.set(limit, records);
    console.error(`schd run ${run + 1} flush-limit ${limit}: ${Math.round(sent / sec)} flights/s (${records} records, ${sec.toFixed(2)} s)`);
  }
}

// state topic: the same 10,000 flights' state rows (one per FLID, written by the pump), drained
// by stateRound at the default batch (msgx.msg.batch) — each round reads the flights' complete
// states and sends one record each
const resetState = () =>
  sql`update msg_event set state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null, kafka_partition = null, kafka_offset = null
      where target = 'state'`.execute(b.db);
const stateRates: number[] = [];
let stateSentTotal = 0;
for (let run = 0; run < runs; run++) {
  await resetState();
  await sql`vacuum analyze msg_event`.execute(b.db);
  const d = depsWith({});
  let sent = 0;
  const t = performance.now();
  for (;;) {
    const r = await stateRound(d);
    if (r.failed || r.dead) throw new Error(`state round: ${JSON.stringify(r)}`);
    if (r.picked === 0) break;
    sent += r.sent;
  }
  const sec = (performance.now() - t) / 1000;
  if (sent !== SCHD_FLIGHTS) throw new Error(`state: sent ${sent} of ${SCHD_FLIGHTS}`);
  stateSentTotal += sent;
  stateRates.push(sent / sec);
  console.error(`state run ${run + 1}: ${Math.round(sent / sec)} flights/s (${sec.toFixed(2)} s)`);
}
await kafka.close();

// ---------------------------------------------------------------------------------------------
// read the topics back with a real consumer
async function readBack(topic: string, done: (n: { records: number; items: number }) => boolean, onValue: (v: string) => number): Promise<{ records: number; items: number; ms: number }> {
  const k = new Kafka({ clientId: 'msgx-bench-consumer', ...benchKafka(b.config), logLevel: logLevel.NOTHING });
  const consumer = k.consumer({ groupId: `bench-${randomUUID()}`, sessionTimeout: 30_000, heartbeatInterval: 3000, maxBytes: 50 * 2 ** 20 });
  const n = { records: 0, items: 0 };
  const t = performance.now();
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, 120_000);
    consumer
      .run({
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            n.records++;
            n.items += onValue(m.value!.toString());
          }
          if (done(n)) {
            clearTimeout(timer);
            resolve();
          }
        },
      })
      .catch(reject);
  });
  const ms = performance.now() - t;
  await consumer.disconnect();
  return { ...n, ms };
}
const eventIds = new Set<number>();
const msgBack = await readBack(
  msgTopic,
  () => eventIds.size >= msgSentTotal,
  (v) => {
    eventIds.add(Number(/"EVENT_ID": ?(\d+)/.exec(v)![1]));
    return 1;
  },
);
const schdBack = await readBack(
  schdTopic,
  (n) => n.items >= schdFlightsTotal,
  (v) => (JSON.parse(v) as { SCHD: { RECS: number; FLTR: unknown[] } }).SCHD.FLTR.length,
);

const stateKeys = new Set<string>();
const stateBack = await readBack(
  stateTopic,
  (n) => n.records >= stateSentTotal,
  (v) => {
    stateKeys.add(String((JSON.parse(v) as { FLID: string }).FLID));
    return 1;
  },
);

const bySize = (m: Map<number, number[]>) => [...m].map(([size, xs]) => ({ size, median: Math.round(median(xs)), runs: xs.map(Math.round) }));
const msgBy = bySize(msgRates).map((x) => ({
  batch: x.size,
  eventsPerSecMedian: x.median,
  runs: x.runs,
  rounds: msgRounds.get(x.size),
  rawSendMedian: Math.round(median(rawRates.get(x.size)!)),
  ratio: +(x.median / median(rawRates.get(x.size)!)).toFixed(3),
}));
const sorted = [...msgBy].sort((a, c) => a.batch - c.batch);
// no larger batch slower than a smaller one (the medians)
const slower = sorted.flatMap((x, i) =>
  sorted
    .slice(0, i)
    .filter((y) => y.eventsPerSecMedian > x.eventsPerSecMedian)
    .map((y) => `${x.batch} < ${y.batch}`),
);
const defaultBatch = b.config['msgx.msg.batch'];
const atDefault = msgBy.find((x) => x.batch === defaultBatch);
summary(
  `B3 msg dispatch: ${atDefault ? `${atDefault.eventsPerSecMedian} events/s at the default batch ${defaultBatch} (target ≥ 20,000, ${atDefault.eventsPerSecMedian >= 20_000 ? 'met' : 'MISSED'}); raw send limit ${atDefault.rawSendMedian} events/s; ratio ${atDefault.ratio.toFixed(2)}` : `default batch ${defaultBatch} not measured`}; ` +
    `by batch ${sorted.map((x) => `${x.batch}: ${x.eventsPerSecMedian}`).join(', ')}; ${slower.length ? `a larger batch SLOWER (${slower.join(', ')})` : 'no larger batch slower'}; ` +
    `schd ${Math.round(median(schdRates.get(schdLimits[0])!))} flights/s, state ${Math.round(median(stateRates))} flights/s; ${cpuName()}`,
  {
    bench: 'B3 dispatch',
    machine: machine(),
    cpu: cpuName(),
    runs,
    msg: {
      events: EVENTS,
      flids: FLIDS,
      defaultBatch,
      atDefault,
      largerBatchSlower: slower,
      byBatch: msgBy,
      consumer: { expected: msgSentTotal, records: msgBack.records, distinctEventIds: eventIds.size, ms: Math.round(msgBack.ms) },
    },
    schd: {
      flights: SCHD_FLIGHTS,
      byFlushLimit: bySize(schdRates).map((x) => ({ flushLimit: x.size, flightsPerSecMedian: x.median, runs: x.runs, records: schdRecords.get(x.size) })),
      consumer: { expectedFlights: schdFlightsTotal, expectedRecords: schdRecordsTotal, records: schdBack.records, flights: schdBack.items, ms: Math.round(schdBack.ms) },
    },
    state: {
      flights: SCHD_FLIGHTS,
      batch: b.config['msgx.msg.batch'],
      flightsPerSecMedian: Math.round(median(stateRates)),
      runs: stateRates.map(Math.round),
      consumer: { expectedRecords: stateSentTotal, records: stateBack.records, distinctKeys: stateKeys.size, ms: Math.round(stateBack.ms) },
    },
    topics: [msgTopic, schdTopic, stateTopic, rawTopic],
  },
);
await b.close();
