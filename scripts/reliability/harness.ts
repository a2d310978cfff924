// Shared harness of the long reliability runs (RELIABILITY.md): own databases (msgx_rel,
// aodbinterface_rel, Redis db 12 — never the dev, test or bench ones), a TCP fault proxy in front
// of every service (test/support/fault-proxy.ts), a private Kafka broker on port 19392 advertised
// through its proxy (scripts/services, state in .local/kafka/port-19392/), the real worker
// processes (workers/*.ts, as the Procfile starts them) and the checks of a run's final state:
// every message terminal and backfilled, every msg event on Kafka, per-FLID order on Kafka,
// nothing DEAD, and a digest of the flight states to compare with a crash-free run.
// Nothing here stops, restarts or reconfigures the machine's own services.
import { execFile, execSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import os from 'node:os';
import { promisify } from 'node:util';
import kafkajs from '../../lib/db/kafkajs.ts';
import { sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../../lib/core/config.ts';
import { connectionSettings, createPool } from '../../lib/db/postgres.ts';
import { createQueryDb, type QueryDb } from '../../lib/db/kysely.ts';
import { createAodbPool, type Inbox } from '../../lib/db/mysql.ts';
import { insertInboxRow } from '../../lib/pipeline/inbox.ts';
import { createRedis, redisReady, type Redis } from '../../lib/db/redis.ts';
import { migrate } from '../../lib/db/migrate.ts';
import { flightKey } from '../../lib/flight/mirror.ts';
import { readFlights } from '../../lib/flight/read.ts';
import { toJson } from '../../lib/flight/state.ts';
import { bigSnapshot } from '../../test/support/fixtures.ts';
import { sisMessage } from '../../test/support/services.ts';
import { FaultProxy } from '../../test/support/fault-proxy.ts';

export const REL_PG = process.env.REL_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/msgx_rel';
export const REL_INBOX = process.env.REL_INBOX_URL ?? 'mysql://root@127.0.0.1:3306/aodbinterface_rel';
export const REL_REDIS = process.env.REL_REDIS_URL ?? 'redis://127.0.0.1:6379/12';
export const REL_KAFKA_PORT = Number(process.env.REL_KAFKA_PORT ?? 19392);
const TZ = 'Asia/Shanghai';
const run = promisify(execFile);

export type Service = 'pg' | 'my' | 'redis' | 'kafka';
export const SERVICES: Service[] = ['pg', 'my', 'redis', 'kafka'];

export function machine(): string {
  return `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${os.loadavg()[0].toFixed(1)} load`;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
export const log = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

export async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs: number, everyMs = 250): Promise<number> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    try {
      if (await fn()) return Date.now() - start;
    } catch {
      // a check may fail while a service is away
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** A FLOP that always changes its flight (one msg event each): new remark or new estimate. */
export function flop(i: number, flights: number): string {
  const flid = 1 + (i % flights);
  const visit = Math.floor(i / flights);
  const body = i % 2 === 0 ? ['REMC', `<REMC>R${i}</REMC>`] : ['ESTT', `<ESTT>01DEC26${String(8 + (Math.floor(visit / 60) % 12)).padStart(2, '0')}${String(visit % 60).padStart(2, '0')}</ESTT>`];
  return sisMessage({ type: 'FLOP', styp: body[0], seqn: 2 + i, dttm: '20261201083000', body: `<FLOP><FLID>${flid}</FLID><FFID>x</FFID>${body[1]}</FLOP>` });
}

export interface Worker {
  name: string;
  /** intake#2 etc. when several instances run. */
  id: string;
  child: ChildProcess;
  logs: string[];
  port: number;
  exited: Promise<number | null>;
}

export interface Rig {
  db: QueryDb;
  pool: pg.Pool;
  inbox: Inbox;
  redis: Redis;
  proxies: Record<Service, FaultProxy>;
  topics: { msg: string; schd: string; state: string };
  /** The brokers the workers and the checks use (the private broker's proxy, or openRig's kafkaBrokers). */
  kafka: string[];
  workers: Worker[];
  env: Record<string, string>;
  start(name: string, extra?: Record<string, string>): Worker;
  kill9(w: Worker): Promise<void>;
  /** Feed the snapshot (message 1) then `count` FLOPs from `from`. */
  feed(count: number, from: number, flights: number, ratePerS?: number): Promise<void>;
  close(): Promise<void>;
}

let nextPort = 19800;

/**
 * Fresh databases and topics, proxies, the private broker; no worker started yet. o.pg: the
 * Postgres instead of REL_PG; o.kafkaBrokers: a cluster of the caller's instead of the private broker.
 */
export async function openRig(overrides: Record<string, string> = {}, o: { existingKafka?: boolean; pg?: string; kafkaBrokers?: string } = {}): Promise<Rig> {
  const pgUrl = o.pg ?? REL_PG;
  const admin = new pg.Client(connectionSettings(pgUrl.replace(/\/[^/]+$/, '/postgres'), 'reliability-admin'));
  await admin.connect();
  const dbName = new URL(pgUrl).pathname.slice(1);
  if ((await admin.query('select 1 from pg_database where datname = $1', [dbName])).rowCount === 0) await admin.query(`create database "${dbName}"`);
  await admin.end();
  const c = new pg.Client(connectionSettings(pgUrl, 'reliability-reset'));
  await c.connect();
  await c.query('drop schema if exists public cascade; drop schema if exists graphile_worker cascade; create schema public;');
  await c.end();
  await migrate(pgUrl);
  const inboxDb = new URL(REL_INBOX).pathname.slice(1);
  execSync(`sed "s/\\\`aodbinterface\\\`/\\\`${inboxDb}\\\`/g" sql/mysql/aodbinterface.sql | mariadb -uroot -h127.0.0.1`);

  const proxies = {
    pg: await FaultProxy.start({ port: Number(new URL(pgUrl).port || 5432) }),
    my: await FaultProxy.start({ port: Number(new URL(REL_INBOX).port || 3306) }),
    redis: await FaultProxy.start({ port: Number(new URL(REL_REDIS).port || 6379) }),
    kafka: await FaultProxy.start({ port: REL_KAFKA_PORT }),
  };
  // existingKafka: a broker already answering on REL_KAFKA_PORT (fresh topics on it; never stopped)
  const ownBroker = !o.existingKafka && !o.kafkaBrokers;
  if (ownBroker) await run('scripts/services', ['kafka-start'], { timeout: 180_000, env: { ...process.env, KAFKA_PORT: String(REL_KAFKA_PORT), KAFKA_ADVERTISED_PORT: String(proxies.kafka.port) } });

  const pool = createPool(pgUrl, { max: 4, name: 'reliability' });
  const db = createQueryDb(pool);
  const inbox = createAodbPool(REL_INBOX, { timeoutMs: 30_000 });
  const redis = createRedis(REL_REDIS, 30_000);
  await redisReady(redis, 30_000); // its first command (FLUSHDB) must not race the connection
  await inbox.query('TRUNCATE TABLE cminmsgs');
  await inbox.query('TRUNCATE TABLE coutmsgs');
  await redis.flushdb();
  const tag = randomUUID().slice(0, 8);
  const topics = { msg: `rel.${tag}.msg`, schd: `rel.${tag}.schd`, state: `rel.${tag}.state` };
  const env: Record<string, string> = {
    DATABASE_URL: proxies.pg.url(pgUrl),
    INBOX_URL: proxies.my.url(REL_INBOX),
    REDIS_URL: proxies.redis.url(REL_REDIS),
    KAFKA_BROKERS: o.kafkaBrokers ?? proxies.kafka.address,
    MSGX_KAFKA_MSG_TOPIC: topics.msg,
    MSGX_KAFKA_SCHD_TOPIC: topics.schd,
    MSGX_KAFKA_STATE_TOPIC: topics.state,
    MSGX_REQUESTS_DAILY_SCHEDULE_AT: '',
    MSGX_API_TOKEN: 'reliability',
    MSGX_DEV_MODE: 'true', // the shared token is for development mode on loopback only (docs/operations.md "Access and roles")
    MSGX_LOG_LEVEL: process.env.REL_LOG ?? 'info',
    ...overrides,
  };
  loadConfig(env); // fail early on a bad override

  const workers: Worker[] = [];
  const rig: Rig = {
    db,
    pool,
    inbox,
    redis,
    proxies,
    topics,
    kafka: (o.kafkaBrokers ?? proxies.kafka.address).split(','),
    workers,
    env,
    start(name, extra = {}) {
      const n = workers.filter((w) => w.name === name).length + 1;
      const port = nextPort++;
      const child = spawn(process.execPath, [`workers/${name}.ts`], {
        env: { ...(process.env as Record<string, string>), ...env, ...extra, [`MSGX_HTTP_PORT_${name.replace(/-/g, '_').toUpperCase()}`]: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const logs: string[] = [];
      const collect = (b: Buffer) => logs.push(...b.toString().split('\n').filter(Boolean));
      child.stdout!.on('data', collect);
      child.stderr!.on('data', collect);
      const w: Worker = { name, id: `${name}#${n}`, child, logs, port, exited: new Promise((r) => child.on('exit', (code) => r(code))) };
      child.on('exit', (code, signal) => {
        if (code !== 0 && code !== null) log(`${w.id} exited by itself (code ${code}, signal ${signal}):\n  ${logs.slice(-10).join('\n  ')}`);
      });
      workers.push(w);
      return w;
    },
    async kill9(w) {
      w.child.kill('SIGKILL');
      await w.exited;
    },
    async feed(count, from, flights, ratePerS) {
      const gap = ratePerS ? 1000 / ratePerS : 0;
      const t0 = Date.now();
      for (let i = from; i < from + count; i++) {
        for (;;) {
          try {
            await insertInboxRow(inbox, { body: flop(i, flights), received: '2026-12-01 08:30:00' });
            break;
          } catch {
            await sleep(500); // the feeder talks to MariaDB directly; it never fails, but be safe
          }
        }
        if (gap) {
          const due = t0 + (i - from + 1) * gap;
          if (due > Date.now()) await sleep(due - Date.now());
        }
      }
    },
    async close() {
      for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
      await Promise.all(workers.map((w) => Promise.race([w.exited, sleep(20_000)])));
      for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      for (const p of Object.values(proxies)) await p.set('pass');
      await deleteTopics(rig.kafka, [topics.msg, topics.schd, topics.state]).catch(() => {});
      if (ownBroker) await run('scripts/services', ['kafka-stop'], { timeout: 120_000, env: { ...process.env, KAFKA_PORT: String(REL_KAFKA_PORT) } }).catch(() => {});
      for (const p of Object.values(proxies)) await p.close();
      await pool.end();
      await inbox.end();
      redis.disconnect();
    },
  };
  return rig;
}

export async function feedSnapshot(rig: Rig, flights: number): Promise<void> {
  await insertInboxRow(rig.inbox, { body: bigSnapshot(flights, 1, { seqn: 1 }), received: '2026-12-01 08:00:00' });
}

async function deleteTopics(brokers: string[], topics: string[]): Promise<void> {
  const admin = new kafkajs.Kafka({ clientId: 'rel-admin', brokers, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}

export interface Progress {
  total: number;
  terminal: number;
  succeeded: number;
  dead: number;
  unbackfilled: number;
  unsent: number;
  deadEvents: number;
}

export async function progress(db: QueryDb): Promise<Progress> {
  const r = await sql<Progress>`
    select (select count(*)::int from proc_state) total,
           (select count(*)::int from proc_state where state not in ('PENDING','FAILED')) terminal,
           (select count(*)::int from proc_state where state = 'SUCCEEDED') succeeded,
           (select count(*)::int from proc_state where state = 'DEAD') dead,
           (select count(*)::int from proc_state where backfill_at is null) unbackfilled,
           (select count(*)::int from msg_event where state = 'PENDING') unsent,
           (select count(*)::int from msg_event where state = 'DEAD') "deadEvents"`.execute(db);
  return r.rows[0];
}

/** Every message terminal and backfilled, every event SENT (or DEAD: reported). */
export async function drained(db: QueryDb, expected: number): Promise<boolean> {
  const p = await progress(db);
  return p.total === expected && p.terminal === expected && p.unbackfilled === 0 && p.unsent === 0;
}

export interface FinalState {
  messages: number;
  byState: Record<string, number>;
  deadMessages: number;
  deadEvents: number;
  /** sha256 over every flight's state (UPDATED_AT left out) in FLID order. */
  flightDigest: string;
  flights: number;
  /** (FLID, STATE_VERSION) of every msg event in the outbox, sorted: compared between runs. */
  eventDigest: string;
  events: number;
  kafka: { records: number; distinctEvents: number; missingEvents: number; duplicates: number; orderViolations: number; differingRepublished: number };
}

/** The checks of a drained run. */
export async function finalState(rig: Rig): Promise<FinalState> {
  const states = await sql<{ state: string; n: number }>`select state, count(*)::int n from proc_state group by 1`.execute(rig.db);
  const byState = Object.fromEntries(states.rows.map((x) => [x.state, x.n]));
  const flids = (await sql<{ flid: string }>`select flid from flight_schd order by flid`.execute(rig.db)).rows.map((x) => x.flid);
  const flights = await readFlights(rig.db, flids, TZ);
  const h = createHash('sha256');
  for (const flid of [...flights.keys()].sort()) {
    const j = toJson(flights.get(flid)!) as Record<string, unknown>;
    delete j.UPDATED_AT;
    h.update(JSON.stringify(j));
  }
  const ev = await sql<{ event_id: number; flid: string; state_version: number; state: string }>`
    select event_id, flid, state_version, state from msg_event where target = 'msg' order by flid, state_version, event_id`.execute(rig.db);
  const eh = createHash('sha256');
  for (const e of ev.rows) eh.update(`${e.flid}:${e.state_version};`);
  const kafka = await checkKafka(rig, new Set(ev.rows.filter((e) => e.state === 'SENT').map((e) => e.event_id)));
  return {
    messages: Object.values(byState).reduce((a, b) => a + b, 0),
    byState,
    deadMessages: byState.DEAD ?? 0,
    deadEvents: ev.rows.filter((e) => e.state === 'DEAD').length,
    flightDigest: h.digest('hex').slice(0, 16),
    flights: flights.size,
    eventDigest: eh.digest('hex').slice(0, 16),
    events: ev.rows.length,
    kafka,
  };
}

export interface TopicRecord {
  partition: number;
  offset: bigint;
  key: string | null;
  value: string | null;
}

/** Every record of a topic (to its end offsets at the call), in partition and offset order. */
export async function readTopic(rig: Rig, topic: string): Promise<TopicRecord[]> {
  const k = new kafkajs.Kafka({ clientId: 'rel-check', brokers: rig.kafka, logLevel: kafkajs.logLevel.NOTHING });
  const admin = k.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const total = ends.reduce((n, e) => n + Number(BigInt(e.high) - BigInt(e.low)), 0);
  const records: TopicRecord[] = [];
  const consumer = k.consumer({ groupId: `rel-check-${randomUUID()}`, sessionTimeout: 30_000, heartbeatInterval: 3000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 180_000);
    if (total === 0) return resolve();
    void consumer.run({
      eachMessage: async ({ message, partition }) => {
        records.push({ partition, offset: BigInt(message.offset), key: message.key?.toString() ?? null, value: message.value?.toString() ?? null });
        if (records.length >= total) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  return records.sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : 1));
}

/** Read the whole msg topic: every SENT event present, duplicates counted, STATE_VERSION never going back within a FLID. */
async function checkKafka(rig: Rig, sent: Set<number>): Promise<FinalState['kafka']> {
  const records = (await readTopic(rig, rig.topics.msg)).map((m) => {
    const p = JSON.parse(m.value!) as { FLID: string; STATE_VERSION: number; EVENT_ID: number };
    return { flid: p.FLID, version: p.STATE_VERSION, eventId: p.EVENT_ID, content: contentOf(p) };
  });
  const seen = new Set<number>();
  let duplicates = 0;
  let orderViolations = 0;
  const last = new Map<string, number>();
  for (const r of records) {
    if (seen.has(r.eventId)) duplicates++;
    seen.add(r.eventId);
    const before = last.get(r.flid);
    if (before !== undefined && r.version < before) orderViolations++;
    last.set(r.flid, Math.max(before ?? 0, r.version));
  }
  let missing = 0;
  for (const id of sent) if (!seen.has(id)) missing++;
  // a (FLID, STATE_VERSION) published again (e.g. after a failover lost it) must say the same
  const contents = new Map<string, Set<string>>();
  for (const r of records) contents.set(`${r.flid}:${r.version}`, (contents.get(`${r.flid}:${r.version}`) ?? new Set()).add(r.content));
  const differingRepublished = [...contents.values()].filter((c) => c.size > 1).length;
  return { records: records.length, distinctEvents: seen.size, missingEvents: missing, duplicates, orderViolations, differingRepublished };
}

/** Redis = Postgres for every flight: the JSON of each ACTIVE one, no key for the others or for a flight Postgres lacks. */
export async function mirrorDifferences(db: QueryDb, redis: Redis): Promise<string[]> {
  const flids = (await sql<{ flid: string }>`select flid from flight_schd order by flid`.execute(db)).rows.map((x) => x.flid);
  const states = await readFlights(db, flids, TZ);
  const values = flids.length ? await redis.mget(...flids.map(flightKey)) : [];
  const out = flids.filter((f, i) => {
    const st = states.get(f)!;
    return values[i] !== (st.STATE === 'ACTIVE' ? JSON.stringify(toJson(st)) : null);
  });
  const known = new Set(flids.map(flightKey));
  return [...out, ...(await redis.keys('msgx:flight:*')).filter((k) => !known.has(k))];
}

/** A msg event's payload without its EVENT_ID and clock fields (*_AT): what a re-publication must repeat. */
function contentOf(p: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(p).filter(([k]) => k !== 'EVENT_ID' && !k.endsWith('_AT'))));
}

/** The first time (ms epoch) a message became SUCCEEDED / an event SENT after `since`. */
export async function firstProgressAfter(db: QueryDb, since: number): Promise<{ succeeded: number | null; sent: number | null }> {
  const r = await sql<{ s: number | null; e: number | null }>`
    select (select extract(epoch from min(terminal_at))::float8 * 1000 from proc_state where state = 'SUCCEEDED' and terminal_at >= to_timestamp(${since}::float8 / 1000)) s,
           (select extract(epoch from min(sent_at))::float8 * 1000 from msg_event where sent_at >= to_timestamp(${since}::float8 / 1000)) e`.execute(db);
  return { succeeded: r.rows[0].s, sent: r.rows[0].e };
}

export type Stage = 'intake' | 'pump' | 'backfill' | 'msg' | 'schd' | 'state';

/** Seconds after `since` (ms epoch) of each worker's first progress: a message taken in, one SUCCEEDED, one backfilled, an event of each topic SENT (null: none yet). */
export async function resumedAfter(db: QueryDb, since: number): Promise<Record<Stage, number | null>> {
  const r = await sql<Record<Stage, number | null>>`
    with t as (select to_timestamp(${since}::float8 / 1000) at)
    select (select extract(epoch from min(enqueued_at)) from proc_state, t where enqueued_at >= t.at) intake,
           (select extract(epoch from min(terminal_at)) from proc_state, t where state = 'SUCCEEDED' and terminal_at >= t.at) pump,
           (select extract(epoch from min(backfill_at)) from proc_state, t where backfill_at >= t.at) backfill,
           (select extract(epoch from min(sent_at)) from msg_event, t where target = 'msg' and sent_at >= t.at) msg,
           (select extract(epoch from min(sent_at)) from msg_event, t where target = 'schd' and sent_at >= t.at) schd,
           (select extract(epoch from min(sent_at)) from msg_event, t where target = 'state' and sent_at >= t.at) state`.execute(db);
  const at = r.rows[0];
  return Object.fromEntries(Object.entries(at).map(([k, v]) => [k, v === null ? null : Math.round((Number(v) * 1000 - since) / 100) / 10])) as Record<Stage, number | null>;
}

/** The state topic as a keyed table: its cleanup.policy and the FLIDs whose last record is not the flight's state (toJson; a tombstone for a deleted one). */
export async function stateTopicDifferences(rig: Rig): Promise<{ cleanupPolicy: string | undefined; keys: number; differing: string[] }> {
  const admin = new kafkajs.Kafka({ clientId: 'rel-check', brokers: rig.kafka, logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  const cfg = await admin.describeConfigs({ resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: rig.topics.state, configNames: ['cleanup.policy'] }], includeSynonyms: false });
  await admin.disconnect();
  const last = new Map<string, string | null>();
  for (const r of await readTopic(rig, rig.topics.state)) last.set(r.key!, r.value);
  const flids = (await sql<{ flid: string }>`select flid from flight_schd order by flid`.execute(rig.db)).rows.map((x) => x.flid);
  const flights = await readFlights(rig.db, flids, TZ);
  const differing = flids.filter((f) => {
    const st = flights.get(f)!;
    return last.get(f) !== (st.STATE === 'DELETED' ? null : JSON.stringify(toJson(st)));
  });
  return { cleanupPolicy: cfg.resources[0].configEntries[0]?.configValue, keys: last.size, differing };
}

/** The longest pause between two msg events SENT in [from, to] (ms epoch), seconds. */
export async function longestSendPause(db: QueryDb, from: number, to: number): Promise<number | null> {
  const r = await sql<{ s: number | null }>`
    select max(extract(epoch from gap))::float8 s from (select sent_at - lag(sent_at) over (order by sent_at) gap from msg_event
     where target = 'msg' and sent_at between to_timestamp(${from}::float8 / 1000) and to_timestamp(${to}::float8 / 1000)) g`.execute(db);
  return r.rows[0].s;
}

/** The worker processes of a drill, as the Procfile runs them (api and retention aside). */
export const DRILL_WORKERS = ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch'] as const;

/** The last log lines of every worker: what a drill prints before it rethrows its failure. */
export function logTails(rig: { workers: { id: string; logs: string[] }[] }): void {
  for (const w of rig.workers) log(`${w.id}:\n  ${w.logs.slice(-8).join('\n  ')}`);
}
