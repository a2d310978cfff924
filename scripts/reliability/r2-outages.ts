// R2: outages of each service in each fault-proxy mode while a steady load flows. The real
// processes reach Postgres, MariaDB, Redis and Kafka only through fault proxies; the machine's
// servers are never touched. For every (service, mode): the path breaks for OUTAGE seconds
// (refuse: the service is "down"; blackhole: bytes stop moving; halfopen: every open connection's
// client side is reset at the start while the server keeps the session — new connections pass,
// so the figure is how long the processes need to get going again), the load goes on, the path
// is restored, and the run records how long after the restore (halfopen: after the reset) the
// first message was applied and the first event sent, and how long until the backlog drained.
// At the end: every SENT event on Kafka, per-FLID order, nothing DEAD. Prints JSON.
//   node scripts/reliability/r2-outages.ts [outageSeconds=180] [services=pg,my,redis,kafka] [modes=refuse,blackhole,halfopen] [rate=20]
import { scriptHelp } from '../args.ts';
import { drained, feedSnapshot, finalState, firstProgressAfter, log, machine, openRig, progress, sleep, waitFor, type Service } from './harness.ts';

scriptHelp(import.meta.url);
const OUTAGE_S = Number(process.argv[2] ?? 180);
const SERVICES = (process.argv[3] ?? 'pg,my,redis,kafka').split(',') as Service[];
const MODES = (process.argv[4] ?? 'refuse,blackhole,halfopen').split(',') as ('refuse' | 'blackhole' | 'halfopen')[];
const RATE = Number(process.argv[5] ?? 20);
const FLIGHTS = 200;

const rig = await openRig({ MSGX_LOG_LEVEL: 'warn', MSGX_IO_TIMEOUT: '5s' });
const rows: Record<string, unknown>[] = [];
const started = new Date().toISOString();
let next = 0;
try {
  for (const name of ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch']) rig.start(name);
  await feedSnapshot(rig, FLIGHTS);
  await waitFor('the snapshot', () => drained(rig.db, 1), 180_000);
  for (const service of SERVICES) {
    for (const mode of MODES) {
      const proxy = rig.proxies[service];
      // steady load for the whole outage plus 30 s after it
      const count = Math.round(RATE * (OUTAGE_S + 30));
      const feeding = rig.feed(count, next, FLIGHTS, RATE);
      next += count;
      await sleep(5000);
      log(`${service} ${mode} for ${OUTAGE_S} s`);
      const t0 = Date.now();
      await proxy.set(mode);
      if (mode === 'halfopen') await proxy.set('pass'); // the reset is the fault; kept sessions stay on the server
      await sleep(OUTAGE_S * 1000);
      const restoredAt = mode === 'halfopen' ? t0 : Date.now();
      await proxy.set('pass');
      const during = await progress(rig.db);
      await feeding;
      const drainMs = await waitFor('drained', () => drained(rig.db, next + 1), 15 * 60_000, 250).catch(() => null);
      const first = await firstProgressAfter(rig.db, restoredAt);
      const row = {
        service,
        mode,
        outageS: OUTAGE_S,
        firstAppliedAfterRestoreMs: first.succeeded === null ? null : Math.round(first.succeeded - restoredAt),
        firstSentAfterRestoreMs: first.sent === null ? null : Math.round(first.sent - restoredAt),
        drainedAfterLoadEndMs: drainMs,
        deadMessages: during.dead,
        deadEvents: during.deadEvents,
      };
      log(JSON.stringify(row));
      rows.push(row);
    }
  }
  const final = await finalState(rig);
  const ok = final.deadMessages + final.deadEvents === 0 && final.kafka.missingEvents === 0 && final.kafka.orderViolations === 0 && rows.every((r) => r.drainedAfterLoadEndMs !== null);
  console.log(JSON.stringify({ run: 'R2', started, machine: machine(), outageS: OUTAGE_S, ratePerS: RATE, rows, final, ok }, null, 2));
  process.exitCode = ok ? 0 : 1;
} finally {
  await rig.close();
}
