// R4: two pumps and two intakes (plus backfill and the dispatchers) under a steady load; the
// active pump or intake is taken away ROUNDS times each, alternately by SIGKILL and by its
// network dying (each pump/intake reaches Postgres through its own fault proxy, put in
// half-open or black-hole mode). Recorded per round: how long until the other instance holds
// the leader lock, and (pump) until it applied its first message. The killed one is started
// again and stands by. At the end: drained, nothing DEAD, every event on Kafka in order. JSON.
//   node scripts/reliability/r4-takeover.ts [rounds=3] [rate=20]
import { scriptHelp } from '../args.ts';
import { sql } from 'kysely';
import { LOCKS } from '../../lib/db/postgres.ts';
import { FaultProxy } from '../../test/support/fault-proxy.ts';
import { drained, feedSnapshot, finalState, log, machine, openRig, REL_PG, sleep, waitFor, type Worker } from './harness.ts';

scriptHelp(import.meta.url);
const ROUNDS = Number(process.argv[2] ?? 3);
const RATE = Number(process.argv[3] ?? 20);
const FLIGHTS = 200;
const FAULTS = ['kill -9', 'halfopen', 'blackhole'] as const;

const rig = await openRig({ MSGX_LOG_LEVEL: 'info' });
const own = new Map<Worker, FaultProxy>();
const rows: Record<string, unknown>[] = [];
const started = new Date().toISOString();

/** A pump/intake with its own proxy to Postgres (so its network alone can die). */
async function startLeader(name: 'pump' | 'intake'): Promise<Worker> {
  const proxy = await FaultProxy.start({ port: Number(new URL(REL_PG).port || 5432) });
  const w = rig.start(name, { DATABASE_URL: proxy.url(REL_PG) });
  own.set(w, proxy);
  return w;
}

const holderPid = async (key: number) =>
  (
    await sql<{ pid: number }>`select l.pid from pg_locks l where l.locktype = 'advisory' and l.granted and l.classid = 0 and l.objid = ${key} and l.objsubid = 1
      and l.database = (select oid from pg_database where datname = current_database())`.execute(rig.db)
  ).rows[0]?.pid;

/** The instance whose log says it took the lock last and that has not lost it since. */
function active(name: string): Worker | undefined {
  const alive = rig.workers.filter((w) => w.name === name && w.child.exitCode === null && w.child.signalCode === null);
  const lastIdx = (w: Worker, text: string) => w.logs.findLastIndex((l) => l.includes(text));
  return alive.find((w) => lastIdx(w, 'leader lock taken') > lastIdx(w, 'lost the leader session') && lastIdx(w, 'leader lock taken') >= 0);
}

let next = 0;
try {
  for (const name of ['pump', 'pump', 'intake', 'intake'] as const) await startLeader(name);
  for (const name of ['backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch']) rig.start(name);
  await feedSnapshot(rig, FLIGHTS);
  await waitFor('the snapshot', () => drained(rig.db, 1), 180_000);
  const count = Math.round(RATE * ROUNDS * FAULTS.length * 2 * 25 + RATE * 30);
  const feeding = rig.feed(count, 0, FLIGHTS, RATE);
  next = count;
  for (let round = 0; round < ROUNDS; round++) {
    for (const fault of FAULTS) {
      for (const name of ['pump', 'intake'] as const) {
        await sleep(5000);
        const w = active(name);
        const key = name === 'pump' ? LOCKS.PUMP_LEADER : LOCKS.INTAKE_LEADER;
        const pid = await holderPid(key);
        if (!w || !pid) {
          log(`no active ${name} found; skipping`);
          continue;
        }
        const t0 = Date.now();
        if (fault === 'kill -9') await rig.kill9(w);
        else await own.get(w)!.set(fault);
        const takeoverMs = await waitFor(
          'another holder',
          async () => {
            const now = await holderPid(key);
            return now !== undefined && now !== pid;
          },
          60_000,
          50,
        ).catch(() => null);
        let appliedMs: number | null = null;
        if (name === 'pump' && takeoverMs !== null) {
          // the first message applied by the new leader (after it took the lock), from the fault
          const since = t0 + takeoverMs;
          await waitFor(
            'a message applied',
            async () => {
              const r = await sql<{
                ts: number | null;
              }>`select extract(epoch from min(terminal_at))::float8 * 1000 as ts from proc_state where terminal_at >= to_timestamp(${since}::float8 / 1000)`.execute(rig.db);
              appliedMs = r.rows[0].ts === null ? null : Math.round(r.rows[0].ts - t0);
              return appliedMs !== null;
            },
            60_000,
            50,
          ).catch(() => null);
        }
        const row = { round: round + 1, process: name, fault, takeoverMs, firstAppliedMs: appliedMs };
        log(JSON.stringify(row));
        rows.push(row);
        // bring the old instance back: it stands by
        if (fault === 'kill -9') await startLeader(name);
        else {
          await sleep(8000); // its own heartbeat ends its tenure first
          await own.get(w)!.set('pass');
        }
      }
    }
  }
  await feeding;
  await waitFor('drained', () => drained(rig.db, next + 1), 10 * 60_000, 250);
  const final = await finalState(rig);
  const times = rows.map((r) => r.takeoverMs as number | null);
  const ok = times.every((t) => t !== null && t <= 10_000) && final.deadMessages + final.deadEvents === 0 && final.kafka.missingEvents === 0 && final.kafka.orderViolations === 0;
  console.log(JSON.stringify({ run: 'R4', started, machine: machine(), ratePerS: RATE, rows, maxTakeoverMs: Math.max(...times.map((t) => t ?? Infinity)), final, ok }, null, 2));
  process.exitCode = ok ? 0 : 1;
} finally {
  await rig.close();
  for (const p of own.values()) await p.close();
}
