// Shared set-up of the benchmark scripts: their own databases (never the dev or test ones),
// migrated and emptied, and the real pipeline pieces wired as the workers wire them.
import { execSync } from 'node:child_process';
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
