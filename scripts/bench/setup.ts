// Shared set-up of the benchmark scripts: their own databases (never the dev or test ones),
// migrated and emptied, and the real pipeline pieces wired as the workers wire them.
import { execFileSync, execSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { sql } from 'kysely';
import { loadConfig, type Config } from '../../lib/core/config.ts';
import { connectClient, connectionSettings, createPool } from '../../lib/db/postgres.ts';
import { createQueryDb, createQuerySessionDb, type QueryDb } from '../../lib/db/kysely.ts';
import { createAodbPool, type Inbox } from '../../lib/db/mysql.ts';
import { createRedis, redisReady, type Redis } from '../../lib/db/redis.ts';
import { migrate } from '../../lib/db/migrate.ts';
import type { Logger } from 'pino';
import { systemClock } from '../../lib/core/clock.ts';
import { slices } from '../../lib/core/config.ts';
import { buildMirror, buildRegistry } from '../../lib/app/composition.ts';
import type { HandlerRegistry } from '../../lib/domain/handlers.ts';
import type { Decoder } from '../../lib/pipeline/decoder.ts';
import { insertInboxRow } from '../../lib/pipeline/inbox.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { drain, inlineDecoding, pumpSettings, type PumpDeps, withSqlPorts } from '../../lib/pipeline/pump/loop.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';

export const BENCH_PG = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/msgx_bench';
export const BENCH_INBOX = process.env.BENCH_INBOX_URL ?? 'mysql://root@127.0.0.1:3306/aodbinterface_bench';
export const BENCH_REDIS = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/11';

export interface Bench {
  config: Config;
  pool: pg.Pool;
  db: QueryDb;
  session: QueryDb;
  inbox: Inbox;
  redis: Redis;
  close(): Promise<void>;
}

export async function openBench(overrides: Record<string, string> = {}): Promise<Bench> {
  const admin = new pg.Client(connectionSettings(BENCH_PG.replace(/\/[^/]+$/, '/postgres'), 'bench-admin'));
  await admin.connect();
  const name = new URL(BENCH_PG).pathname.slice(1);
  if ((await admin.query('select 1 from pg_database where datname = $1', [name])).rowCount === 0) await admin.query(`create database "${name}"`);
  await admin.end();
  await migrate(BENCH_PG);
  const inboxDb = new URL(BENCH_INBOX).pathname.slice(1);
  execSync(`sed "s/aodbinterface/${inboxDb}/g" sql/mysql/aodbinterface.sql | mariadb -uroot`);
  const config = loadConfig({ DATABASE_URL: BENCH_PG, INBOX_URL: BENCH_INBOX, REDIS_URL: BENCH_REDIS, MSGX_LOG_LEVEL: 'silent', ...overrides });
  const pool = createPool(BENCH_PG, { max: 8, name: 'bench' });
  const client = await connectClient(BENCH_PG, 'bench-session');
  const inbox = createAodbPool(BENCH_INBOX, { timeoutMs: 30_000 });
  const redis = createRedis(BENCH_REDIS, 30_000);
  await redisReady(redis, 30_000); // a bench's first command must not race the connection
  const b: Bench = {
    config,
    pool,
    db: createQueryDb(pool),
    session: createQuerySessionDb(client),
    inbox,
    redis,
    async close() {
      await client.end();
      await pool.end();
      await inbox.end();
      redis.disconnect();
    },
  };
  return b;
}

export async function emptyAll(b: Bench): Promise<void> {
  await sql`truncate proc_state, proc_attempt, flight_schd, flight_gate, flight_checkin, flight_carousel, flight_chute, flight_planned_stand, flight_chock, flight_delay, flight_airbridge, flight_pushback, flight_tractor, flight_route_point, flight_raw_fragment, flight_snap_digest, flight_change, schd_gen, schd_gen_flid, schd_snap_log, msg_event cascade`.execute(
    b.db,
  );
  await sql`update intake_cursor set watermark = 0, full_scan_from = null, full_scan_at = null, gap_id = null, gap_seen_at = null, gaps = '[]', passed_gaps = '[]'`.execute(b.db);
  await sql`delete from graphile_worker._private_jobs`.execute(b.db);
  // what the runs churn, vacuumed: without autovacuum (some machines' Postgres runs without it) the
  // job queue's and the catalog's dead rows pile up run after run and slow every wake-up
  await sql`vacuum analyze graphile_worker._private_jobs, pg_catalog.pg_class, pg_catalog.pg_attribute, pg_catalog.pg_type`.execute(b.db);
  await b.inbox.query('TRUNCATE TABLE cminmsgs');
  await b.redis.flushdb();
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export function machine(): string {
  return `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`;
}

/**
 * CPU time (user + system, ms) used so far by every Postgres process this machine shows in /proc
 * (backends, WAL writer, checkpointer): null when none is visible (a server elsewhere). A bench
 * takes the difference around what it measures, with nothing else using the server.
 */
export function postgresCpuMs(): number | null {
  const tick = 1000 / 100; // USER_HZ is 100 on Linux
  let sum = 0;
  let seen = false;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    if (!stat.includes(' (postgres) ')) continue;
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd on: utime and stime are the 14th and 15th
    sum += (Number(f[11]) + Number(f[12])) * tick;
    seen = true;
  }
  return seen ? sum : null;
}

/**
 * CPU seconds used so far by each Postgres backend connected to the bench's database (pid →
 * seconds; /proc, so only a server on this machine): the bench is its only user. The difference
 * of two readings (backendCpuSince) is what the run cost Postgres, whatever else the machine ran.
 */
export async function backendCpu(b: Bench): Promise<Map<number, number>> {
  const pids = (await b.pool.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()')).rows.map((r) => r.pid);
  const out = new Map<number, number>();
  for (const pid of pids) {
    const s = processCpuSeconds(pid);
    if (s !== null) out.set(pid, s);
  }
  return out;
}

/** CPU seconds the bench database's backends used since `before` (a backend that ended meanwhile is lost; one that started counts from 0); null when none is visible. */
export async function backendCpuSince(b: Bench, before: Map<number, number>): Promise<number | null> {
  const now = await backendCpu(b);
  if (now.size === 0) return null;
  let sum = 0;
  for (const [pid, s] of now) sum += s - (before.get(pid) ?? 0);
  return sum;
}

/** CPU seconds (user + system) of a process on this machine so far; null when it is not here. */
export function processCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from the 3rd field on: utime and stime are the 14th and 15th
    return (Number(f[11]) + Number(f[12])) / 100; // USER_HZ is 100 on Linux
  } catch {
    return null;
  }
}

/**
 * One client's commit rate, the machine's reference of BENCHMARKS.md: `pgbench -N -c1` (the
 * built-in simple-update transaction, one connection, `seconds` long; its tables made once in the
 * bench's database); without pgbench, one-row inserts from one node-postgres connection.
 */
export async function commitRate(seconds = 10): Promise<{ rate: number; how: string }> {
  let pgbench = true;
  try {
    execFileSync('pgbench', ['--version'], { stdio: 'ignore' });
  } catch {
    pgbench = false;
  }
  if (pgbench) {
    const made = execFileSync('psql', [BENCH_PG, '-Atc', "select to_regclass('pgbench_accounts') is not null"], { encoding: 'utf8' }).trim() === 't';
    if (!made) execFileSync('pgbench', ['-i', '-q', '-s', '1', BENCH_PG], { stdio: 'ignore' });
    const out = execFileSync('pgbench', ['-n', '-N', '-c', '1', '-T', String(seconds), BENCH_PG], { encoding: 'utf8' });
    return { rate: Number(/tps = ([\d.]+)/.exec(out)?.[1]), how: 'pgbench -N -c1' };
  }
  const c = new pg.Client(connectionSettings(BENCH_PG, 'bench-commit'));
  await c.connect();
  await c.query('set client_min_messages = warning; create table if not exists bench_commit (id bigserial primary key, v int); truncate bench_commit;');
  let n = 0;
  const end = performance.now() + seconds * 1000;
  const t = performance.now();
  while (performance.now() < end) {
    await c.query({ name: 'bench_commit', text: 'insert into bench_commit (v) values (1)' });
    n++;
  }
  const rate = n / ((performance.now() - t) / 1000);
  await c.end();
  return { rate, how: 'one-row inserts, one pg connection' };
}

/** The machine as the BENCHMARKS table names it: CPU model and cores. */
export const cpuName = () => `${os.cpus()[0]?.model.trim() ?? 'cpu'}, ${os.cpus().length} cores`;

/** The summary line every bench ends with, then its JSON on one line. */
export function summary(line: string, json: Record<string, unknown>): void {
  console.log(line);
  console.log(JSON.stringify(json));
}

/** PROC_STATE rows per state (the end state of a run). */
export async function stateCounts(b: Bench): Promise<Record<string, number>> {
  const rows = await b.db
    .selectFrom('proc_state')
    .select(['state'])
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .groupBy('state')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

/** PumpDeps as workers/pump.ts wires them, on the bench's databases (config: the bench's, or one per run). */
export function pumpDeps(b: Bench, o: { log: Logger; config?: Config; registry?: HandlerRegistry; timings?: Record<string, number>; decoder?: Decoder }): PumpDeps {
  const config = o.config ?? b.config;
  return withSqlPorts({
    session: b.session,
    terminalDb: b.db,
    inbox: b.inbox,
    registry: o.registry ?? buildRegistry(),
    mirror: buildMirror({ db: b.db, redis: b.redis, airport: slices(config).airport }),
    clock: systemClock,
    ...pumpSettings(config),
    log: o.log,
    ...(o.timings ? { timings: o.timings } : {}),
    decoder: o.decoder ?? inlineDecoding,
  });
}

/** 10,000 flights through intake and the real pump: a 9,999-flight snapshot of 01DEC26 and one of 02DEC26. */
export async function pumpTenThousandFlights(b: Bench, log: Logger): Promise<void> {
  await emptyAll(b);
  await insertInboxRow(b.inbox, { body: bigSnapshot(9999, 1, { seqn: 1 }), received: '2026-12-01 08:00:00' });
  await insertInboxRow(b.inbox, { body: bigSnapshot(1, 10_000, { seqn: 2 }).replace(/01DEC26/g, '02DEC26'), received: '2026-12-01 08:00:00' });
  await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake: slices(b.config).intake, log });
  await drain(pumpDeps(b, { log }), 600_000);
}
