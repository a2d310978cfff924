// `npm run bench:footprint`: one installation started as `npm start` starts it (scripts/start.ts
// over the Procfile, no --up), on the bench's own databases, HTTP ports and Kafka topics; waits
// until every process answers /healthz 200 and then FOOTPRINT_REST_S seconds at rest, and prints
// per process its resident memory as the kernel counts it (/proc/<pid>/smaps_rollup: Rss, and
// Pss, which shares the pages common to several processes), its Postgres connections
// (pg_stat_activity by application_name) and the CPU at rest over those seconds, its own and its
// connections' backends' (/proc/<pid>/stat utime + stime), with the totals and the machine line.
// Environment: BENCH_DATABASE_URL / BENCH_INBOX_URL / BENCH_REDIS_URL (scripts/bench/setup.ts),
// BENCH_PORT_BASE (default 19400: eight ports from it), FOOTPRINT_REST_S (default 20).
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import kafkajs from '../../lib/db/kafkajs.ts';
import { connectionSettings } from '../../lib/db/postgres.ts';
import { parseProcfile } from '../start.ts';
import { BENCH_PG, emptyAll, machine, openBench } from './setup.ts';
import { benchKafka, KAFKA } from './workers.ts';

const REST_S = Number(process.env.FOOTPRINT_REST_S ?? 20);
const PORT_BASE = Number(process.env.BENCH_PORT_BASE ?? 19_400);
const READY_MS = 120_000;

const entries = parseProcfile(readFileSync('Procfile', 'utf8'));
const tag = randomUUID().slice(0, 8);
const topics = { msg: `footprint.${tag}.msg`, schd: `footprint.${tag}.schd`, state: `footprint.${tag}.state` };
const ports = Object.fromEntries(entries.map((e, i) => [e.name, PORT_BASE + i]));

// the databases migrated, present and empty (the bench set-up's; an outbox with SENT rows would
// read as a loss of the new topics), then released: only the installation's connections are counted
const bench = await openBench();
await emptyAll(bench);
await bench.close();

const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  DATABASE_URL: BENCH_PG,
  INBOX_URL: process.env.BENCH_INBOX_URL ?? 'mysql://root@127.0.0.1:3306/aodbinterface_bench',
  REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/11',
  KAFKA_BROKERS: KAFKA,
  MSGX_KAFKA_MSG_TOPIC: topics.msg,
  MSGX_KAFKA_SCHD_TOPIC: topics.schd,
  MSGX_KAFKA_STATE_TOPIC: topics.state,
  MSGX_DEV_MODE: 'true',
  MSGX_REQUESTS_DAILY_SCHEDULE_AT: '',
  MSGX_LOG_LEVEL: process.env.BENCH_LOG ?? 'warn',
  ...Object.fromEntries(entries.map((e) => [`MSGX_HTTP_PORT_${e.name.replace(/-/g, '_').toUpperCase()}`, String(ports[e.name])])),
};
// `npm start` without --up: scripts/start.ts runs the Procfile's lines under concurrently
const runner = spawn(process.execPath, ['scripts/start.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
const logs: string[] = [];
const collect = (b: Buffer) => logs.push(...b.toString().split('\n').filter(Boolean));
runner.stdout!.on('data', collect);
runner.stderr!.on('data', collect);
const runnerExit = new Promise<number | null>((r) => runner.on('exit', (code) => r(code)));

const ready = async (port: number) => {
  try {
    const r = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
    return r.status === 200;
  } catch {
    return false;
  }
};

/** The pid of each Procfile process: the runner's descendants whose command line names the entry file. */
function pids(): Record<string, number> {
  const out: Record<string, number> = {};
  const children = (pid: number): number[] => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  };
  const walk = (pid: number) => {
    for (const c of children(pid)) {
      const cmd = readFileSync(`/proc/${c}/cmdline`, 'utf8').split('\0');
      const e = entries.find((x) => cmd.some((a) => x.command.split(/\s+/).includes(a) && a.endsWith('.ts')));
      if (e && cmd[0] !== '/bin/sh') out[e.name] = c;
      walk(c);
    }
  };
  walk(runner.pid!);
  return out;
}

/** Rss and Pss of a process in MiB, from the kernel (smaps_rollup). */
function memory(pid: number): { rss: number; pss: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? Number.NaN);
  return { rss: kb('Rss') / 1024, pss: kb('Pss') / 1024 };
}

/** Is a connection of this application_name the process's? msgx-<process> or msgx-<process>-<role> (lib/db/postgres.ts). */
const ownedBy = (app: string, name: string) => app === `msgx-${name}` || app.startsWith(`msgx-${name}-`);

/** The kernel's clock ticks per second (USER_HZ; 100 on Linux) for /proc/<pid>/stat's utime and stime. */
const TICKS_PER_S = 100;
/** CPU time of a process so far, user + system, in ticks (NaN once it is gone). */
function cpuTicks(pid: number): number {
  try {
    // the fields after the command name, which may hold spaces, start after its ')'
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return Number.NaN;
  }
}

let failed: unknown;
try {
  const deadline = Date.now() + READY_MS;
  for (const e of entries) {
    while (!(await ready(ports[e.name]))) {
      if (runner.exitCode !== null) throw new Error(`the runner exited (${runner.exitCode}):\n${logs.slice(-30).join('\n')}`);
      if (Date.now() > deadline) throw new Error(`${e.name} not ready after ${READY_MS / 1000} s:\n${logs.slice(-30).join('\n')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  const readyAt = performance.now();
  const admin = new pg.Client(connectionSettings(BENCH_PG, 'bench-footprint'));
  await admin.connect();
  const backends = async () =>
    (await admin.query<{ app: string; pid: number }>(`select application_name as app, pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`)).rows;
  const cpuBefore = new Map([...Object.values(pids()), ...(await backends()).map((b) => b.pid)].map((pid) => [pid, cpuTicks(pid)]));
  const restFrom = performance.now();
  await new Promise((r) => setTimeout(r, REST_S * 1000));
  const byName = pids();
  const conns = await backends();
  const restS = (performance.now() - restFrom) / 1000;
  await admin.end();
  /** Per cent of one core over the rest window (NaN: not there at its start). */
  const cpu = (pid: number) => ((cpuTicks(pid) - (cpuBefore.get(pid) ?? Number.NaN)) / TICKS_PER_S / restS) * 100;
  const perApp = new Map<string, number>();
  const backendCpu = new Map<string, number>();
  for (const b of conns) {
    perApp.set(b.app, (perApp.get(b.app) ?? 0) + 1);
    const c = cpu(b.pid);
    if (Number.isFinite(c)) backendCpu.set(b.app, (backendCpu.get(b.app) ?? 0) + c);
  }
  console.log(`bench:footprint — ${machine()}`);
  console.log(`one installation (${entries.length} processes, scripts/start.ts), ${REST_S} s at rest after every /healthz answered 200 (${((performance.now() - readyAt) / 1000).toFixed(0)} s)`);
  console.log('process          RSS MiB  PSS MiB  Postgres connections  CPU % at rest (own, backends)');
  let rss = 0;
  let pss = 0;
  let total = 0;
  let cpuOwn = 0;
  let cpuPg = 0;
  for (const e of entries) {
    const pid = byName[e.name];
    const m = pid ? memory(pid) : { rss: Number.NaN, pss: Number.NaN };
    const mine = ([app]: [string, number]) => ownedBy(app, e.name);
    const n = [...perApp].filter(mine).reduce((s, [, v]) => s + v, 0);
    const own = pid ? cpu(pid) : Number.NaN;
    const pgCpu = [...backendCpu].filter(mine).reduce((s, [, v]) => s + v, 0);
    rss += m.rss;
    pss += m.pss;
    total += n;
    cpuOwn += own;
    cpuPg += pgCpu;
    const roles = [...perApp].filter(([app]) => app.startsWith(`msgx-${e.name}-`)).map(([app, k]) => `${app.slice(`msgx-${e.name}-`.length)} ${k}`);
    console.log(
      `${e.name.padEnd(16)} ${m.rss.toFixed(1).padStart(7)}  ${m.pss.toFixed(1).padStart(7)}  ${String(n).padStart(20)}  ${own.toFixed(2).padStart(5)}  ${pgCpu.toFixed(2).padStart(5)}${roles.length ? `  (of which ${roles.join(', ')})` : ''}`,
    );
  }
  console.log(`${'total'.padEnd(16)} ${rss.toFixed(1).padStart(7)}  ${pss.toFixed(1).padStart(7)}  ${String(total).padStart(20)}  ${cpuOwn.toFixed(2).padStart(5)}  ${cpuPg.toFixed(2).padStart(5)}`);
  const other = [...perApp].filter(([app]) => !entries.some((e) => ownedBy(app, e.name)));
  if (other.length) console.log(`connections under other names: ${other.map(([a, n]) => `${a || '(none)'} ${n}`).join(', ')}`);
} catch (e) {
  failed = e;
} finally {
  // the runner stops every process on SIGTERM (scripts/start.ts)
  process.kill(runner.pid!, 'SIGTERM');
  await Promise.race([runnerExit, new Promise((r) => setTimeout(r, 20_000))]);
  if (runner.exitCode === null) process.kill(-runner.pid!, 'SIGKILL');
  const kafka = new kafkajs.Kafka({ ...benchKafka(), logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => {});
  await admin.disconnect();
}
if (failed) {
  console.error(failed);
  process.exit(1);
}
