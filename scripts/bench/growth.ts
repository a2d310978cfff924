// Growth: N messages (default 1,000,000) from empty stores through the real processes (intake,
// pump, backfill, msg-dispatch, schd-dispatch — the Procfile's entry files, default
// configuration). A 10,000-flight snapshot first, then FLOPs over those flights, fed into the inbox
// so that the pump always has work queued (at most WINDOW messages ahead of it) while proc_state,
// flight_change, msg_event and the inbox grow. Recorded per tenth of N (100,000 messages at the
// default): the pump's rate, the peak RSS of every process, the intake lag (age of the oldest
// message fed but not yet taken into proc_state) and the dispatch lag (age of the oldest msg event
// not yet sent). Checks (exit code 1 when one fails):
//   - the pump's rate over the last tenth ≥ 0.8 × the first tenth (the cost per message does not
//     grow with the tables);
//   - RSS flat: every process's peak RSS in the last tenth ≤ 1.2 × its lowest peak in tenths 2–10
//     (the first tenth carries the warm-up and the heap the snapshots left);
//   - intake and dispatch keep up: their largest lag in the last tenth ≤ max(2 × the first
//     tenth's, 5 s), and after the last message everything is terminal, backfilled and sent
//     within DRAIN_S seconds.
//   npm run bench:growth -- [messages=1000000] [flights=10000]
import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import kafkajs from '../../lib/db/kafkajs.ts';
import { sql } from 'kysely';
import type { ResultSetHeader, RowDataPacket } from 'mysql2';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { sisMessage } from '../../test/support/services.ts';
import { emptyAll, machine, openBench, type Bench, stateCounts } from './setup.ts';
import { benchKafka, failWithLogs, startWorker, stopWorkers, waitFor, type Worker } from './workers.ts';

const N = Number(process.argv[2] ?? 1_000_000);
const F = Number(process.argv[3] ?? 10_000);
const TENTHS = 10;
const STEP = Math.ceil(N / TENTHS);
/** Messages fed but not yet terminal, at most: the pump always has a full queue, the inbox never runs away. */
const WINDOW = 20_000;
const CHUNK = 1_000;
const SAMPLE_MS = 500;
const DRAIN_S = 120;
const PROCESSES = ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch'] as const;
const { Kafka, logLevel } = kafkajs;
if (!(N >= TENTHS * CHUNK) || !(F >= 1 && F <= 9999 * 2)) throw new Error(`usage: npm run bench:growth -- [messages ≥ ${TENTHS * CHUNK}] [flights 1–19998]`);

const flop = (i: number) => {
  const flid = 1 + (i % F);
  const body = i % 2 === 0 ? ['REMC', `<REMC>R${i}</REMC>`] : ['STND', `<STND>S${i % 997}</STND>`];
  return sisMessage({ type: 'FLOP', styp: body[0], seqn: 10 + i, dttm: '20261201083000', body: `<FLOP><FLID>${flid}</FLID><FFID>x</FFID>${body[1]}</FLOP>` });
};

const one = async <T>(b: Bench, q: ReturnType<typeof sql<T>>): Promise<T> => (await q.execute(b.db)).rows[0];

/** Resident set of a process (kB → MB), from /proc; 0 when it is gone. */
function rssMb(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

interface Tenth {
  upTo: number;
  seconds: number;
  pumpMsgPerSec: number;
  rssMb: Record<string, number>;
  intakeLagS: number;
  dispatchLagS: number;
  pendingMsgEvents: number;
}

async function insertFlops(b: Bench, from: number, count: number): Promise<number> {
  const rows = Array.from({ length: count }, (_, k) => flop(from + k));
  const [r] = await b.inbox.query<ResultSetHeader>(
    `INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES ${rows.map(() => "(?, '2026-12-01 08:30:00', 'VALID')").join(',')}`,
    rows,
  );
  return Number(r.insertId);
}

async function run(b: Bench): Promise<{ tenths: Tenth[]; drainSeconds: number; states: Record<string, number>; exitCodes: Record<string, unknown>; totalSeconds: number }> {
  const tag = randomUUID().slice(0, 8);
  const topics = { msg: `bench.${tag}.msg`, schd: `bench.${tag}.schd`, state: `bench.${tag}.state` };
  await emptyAll(b);
  const admin = new Kafka({ clientId: 'msgx-bench-growth', ...benchKafka(), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  // the flights: one snapshot of up to 9,999 (and a second day's for the rest)
  const first = Math.min(F, 9999);
  await b.inbox.query("INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, '2026-12-01 08:00:00', 'VALID')", [bigSnapshot(first, 1, { seqn: 1 })]);
  if (F > first)
    await b.inbox.query("INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES (?, '2026-12-01 08:00:00', 'VALID')", [
      bigSnapshot(F - first, first + 1, { seqn: 2 }).replace(/01DEC26/g, '02DEC26'),
    ]);
  const snapshots = F > first ? 2 : 1;
  const base = 32000 + Math.floor(Math.random() * 500) * 10; // other runs on the machine may hold fixed ports
  const workers: Worker[] = PROCESSES.map((name, i) => startWorker(name, base + i, topics));
  try {
    await waitFor('the snapshot applied', async () => (await one(b, sql<{ n: number }>`select count(*)::int as n from proc_state where state = 'SUCCEEDED'`)).n === snapshots, 300_000);
    // feed and sample
    let fed = 0;
    let firstId = 0;
    const fedAt: { upTo: number; at: number }[] = [];
    let pumped = 0;
    let intaken = 0;
    const start = Date.now();
    const tenths: Tenth[] = [];
    let cur = { from: start, rss: {} as Record<string, number>, intakeLag: 0, dispatchLag: 0, pending: 0 };
    let done = false;
    const sample = async () => {
      const now = Date.now();
      const w = await one(
        b,
        sql<{
          watermark: string;
          head: string | null;
        }>`select (select watermark from intake_cursor)::text as watermark, (select min(msg_id) from proc_state where state in ('PENDING','FAILED'))::text as head`,
      );
      const ev = await one(
        b,
        sql<{ n: number; oldest: Date | null }>`select (select count(*) from msg_event where target = 'msg' and state = 'PENDING')::int as n,
                (select created_at from msg_event where event_id = (select min(event_id) from msg_event where target = 'msg' and state = 'PENDING')) as oldest`,
      );
      if (firstId > 0) {
        const wm = Number(w.watermark);
        intaken = Math.max(0, Math.min(fed, wm - firstId + 1));
        pumped = Math.max(0, Math.min(intaken, (w.head === null ? wm + 1 : Number(w.head)) - firstId));
      }
      const oldestFed = fedAt.find((c) => c.upTo > intaken);
      cur.intakeLag = Math.max(cur.intakeLag, oldestFed ? (now - oldestFed.at) / 1000 : 0);
      cur.dispatchLag = Math.max(cur.dispatchLag, ev.oldest ? Math.max(0, (now - ev.oldest.getTime()) / 1000) : 0);
      cur.pending = Math.max(cur.pending, ev.n);
      for (const wk of workers) cur.rss[wk.name] = Math.max(cur.rss[wk.name] ?? 0, rssMb(wk.child.pid));
      while (tenths.length < TENTHS && pumped >= Math.min(N, (tenths.length + 1) * STEP)) {
        const upTo = Math.min(N, (tenths.length + 1) * STEP);
        const size = upTo - tenths.length * STEP;
        tenths.push({
          upTo,
          seconds: +((now - start) / 1000).toFixed(1),
          pumpMsgPerSec: Math.round(size / ((now - cur.from) / 1000)),
          rssMb: cur.rss,
          intakeLagS: +cur.intakeLag.toFixed(1),
          dispatchLagS: +cur.dispatchLag.toFixed(1),
          pendingMsgEvents: cur.pending,
        });
        console.error(`${upTo.toLocaleString('en')} messages: ${JSON.stringify(tenths.at(-1))}`);
        cur = { from: now, rss: {}, intakeLag: 0, dispatchLag: 0, pending: 0 };
      }
    };
    const sampler = (async () => {
      while (!done) {
        await sample();
        await new Promise((r) => setTimeout(r, SAMPLE_MS));
      }
    })();
    while (fed < N) {
      for (const wk of workers) if (wk.child.exitCode !== null) throw new Error(`${wk.name} exited (${wk.child.exitCode})`);
      if (fed - pumped >= WINDOW) {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const n = Math.min(CHUNK, N - fed);
      const id = await insertFlops(b, fed, n);
      if (firstId === 0) firstId = id;
      fed += n;
      fedAt.push({ upTo: fed, at: Date.now() });
    }
    const fedAll = Date.now();
    await waitFor(
      'every message pumped',
      async () => {
        for (const wk of workers) if (wk.child.exitCode !== null) throw new Error(`${wk.name} exited (${wk.child.exitCode})`);
        return tenths.length === TENTHS;
      },
      3_600_000,
    );
    // the tail: terminal, backfilled, every msg event sent
    await waitFor(
      'every message terminal, backfilled and its events sent',
      async () => {
        const [r] = await b.inbox.query<RowDataPacket[]>('SELECT COUNT(*) n FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NULL');
        const unsent = (await one(b, sql<{ n: number }>`select count(*)::int as n from msg_event where state <> 'SENT'`)).n;
        return Number(r[0].n) === 0 && unsent === 0;
      },
      DRAIN_S * 1000,
    ).catch(() => {});
    const drainSeconds = +((Date.now() - fedAll) / 1000).toFixed(1);
    done = true;
    await sampler;
    const totalSeconds = +((Date.now() - start) / 1000).toFixed(1);
    const exitCodes = await stopWorkers(workers);
    const states = await stateCounts(b);
    await admin.deleteTopics({ topics: [topics.msg, topics.schd, topics.state] }).catch(() => {});
    return { tenths, drainSeconds, states, exitCodes, totalSeconds };
  } catch (e) {
    return await failWithLogs(workers, e);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

const b = await openBench();
const r = await run(b);
await b.close();

const [t1, tn] = [r.tenths[0], r.tenths.at(-1)!];
// RSS: the last tenth's peak against the lowest peak of the steady tenths (the first carries the warm-up and the snapshots' heap)
const steady = r.tenths.slice(1);
const rssGrowth = Object.fromEntries(PROCESSES.map((p) => [p, +((tn.rssMb[p] ?? 0) / Math.max(1, Math.min(...steady.map((t) => t.rssMb[p] ?? 0)))).toFixed(2)]));
const checks = {
  pumpRateLastOverFirst: { value: +(tn.pumpMsgPerSec / t1.pumpMsgPerSec).toFixed(2), min: 0.8 },
  rssLastOverLowestTenth: { value: Math.max(...Object.values(rssGrowth)), max: 1.2, perProcess: rssGrowth },
  intakeLagLastTenthS: { value: tn.intakeLagS, max: Math.max(2 * t1.intakeLagS, 5) },
  dispatchLagLastTenthS: { value: tn.dispatchLagS, max: Math.max(2 * t1.dispatchLagS, 5) },
  drainedWithinS: { value: r.drainSeconds, max: DRAIN_S },
  allSucceeded: { value: r.states.SUCCEEDED ?? 0, expected: N + (F > 9999 ? 2 : 1) },
};
const failed = Object.entries(checks)
  .filter(([, c]) => ('min' in c && c.value < c.min) || ('max' in c && c.value > c.max) || ('expected' in c && c.value !== c.expected))
  .map(([k]) => k);

const pad = (s: string | number, n: number) => String(s).padStart(n);
console.error(
  [
    `${pad('messages', 10)} ${pad('s', 7)} ${pad('pump msg/s', 10)} ${PROCESSES.map((p) => pad(`${p} MB`, p.length + 3)).join(' ')} ${pad('intake lag s', 12)} ${pad('dispatch lag s', 14)} ${pad('pending ev', 10)}`,
    ...r.tenths.map(
      (t) =>
        `${pad(t.upTo, 10)} ${pad(t.seconds, 7)} ${pad(t.pumpMsgPerSec, 10)} ${PROCESSES.map((p) => pad(t.rssMb[p] ?? 0, p.length + 3)).join(' ')} ${pad(t.intakeLagS, 12)} ${pad(t.dispatchLagS, 14)} ${pad(t.pendingMsgEvents, 10)}`,
    ),
  ].join('\n'),
);
console.log(
  JSON.stringify(
    {
      bench: 'growth',
      machine: machine(),
      messages: N,
      flights: F,
      processes: PROCESSES,
      window: WINDOW,
      totalSeconds: r.totalSeconds,
      tenths: r.tenths,
      checks,
      failed,
      states: r.states,
      exitCodes: r.exitCodes,
    },
    null,
    2,
  ),
);
if (failed.length) {
  console.error(`growth checks failed: ${failed.join(', ')}`);
  process.exitCode = 1;
}
