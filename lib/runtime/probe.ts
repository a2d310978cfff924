// Service probes ("recovery waits for the backoff, not for the service"): while work
// is held because a service cannot be reached, ask that service on a short interval whether it
// answers again and resume the moment it does, instead of sleeping out a backoff step that may
// be minutes long. Each probe is one cheap round trip on a FRESH connection (a pooled one may be
// stuck behind a dead path), bounded by a deadline, and never changes anything.
//
//   const up = await probeUntilUp(probes.postgres(url), { intervalMs: 500, signal, deadlineMs: 30_000 });
//   if (up) retry now; else (shutdown / deadline) fall back to the caller's schedule.
// The drivers of MariaDB, Redis and Kafka are loaded on a check's first use: a process loads only
// those of the services it needs (its resident memory, docs/decisions.md "Footprint").
import { systemClock, type Clock } from '../core/clock.ts';
import type mysql from 'mysql2/promise';
import type { Redis } from 'ioredis';
import { anySeed, type KafkaTarget } from '../core/connections.ts';
import type { MysqlWhere } from '../db/mysql.ts';
import { connectionSettings, createSessionDb, destroySocket, newClient, pgTarget, type PgWhere } from '../db/postgres.ts';
import type { RedisWhere } from '../db/redis.ts';
import { explained, kafkaSecurity } from '../db/tls.ts';
import * as Probe from '../sql/probe.ts';
import { sleep, withDeadline } from './leader.ts';

/** Brokers, or a configured target (TLS, SASL: lib/core/connections.ts). */
export type KafkaWhere = readonly string[] | KafkaTarget;

/** A Kafka client for one check: every request bounded by timeoutMs, no retries, silent. */
export const kafkaClient = async (clientId: string, where: KafkaWhere, timeoutMs: number) => {
  const { default: kafkajs } = await import('../db/kafkajs.ts');
  return new kafkajs.Kafka({
    clientId,
    ...('service' in where ? { brokers: anySeed(where.brokers), ...kafkaSecurity(where) } : { brokers: anySeed(where) }),
    connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    enforceRequestTimeout: true,
    retry: { retries: 0 },
    logLevel: kafkajs.logLevel.NOTHING,
  });
};
/** A MySQL connection within timeoutMs (a connection that completes late is closed). */
export const mysqlConnect = async (url: MysqlWhere, timeoutMs: number, what: string): Promise<mysql.Connection> => {
  const [{ default: driver }, { mysqlTarget }] = await Promise.all([import('mysql2/promise'), import('../db/mysql.ts')]);
  const connecting = driver.createConnection({ ...mysqlTarget(url), connectTimeout: timeoutMs });
  connecting.then(
    (c) => c.on('error', () => {}),
    () => {},
  );
  try {
    return await withDeadline(connecting, timeoutMs, what);
  } catch (e) {
    connecting.then(
      (late) => late.destroy(),
      () => {},
    );
    throw explained('mariadb', e);
  }
};
export const newRedis = async (...args: Parameters<typeof import('../db/redis.ts').newRedis>) => (await import('../db/redis.ts')).newRedis(...args);

export type Check = () => Promise<void>;

/**
 * Connect a Redis client within timeoutMs. ioredis rejects connect() with "Connection is closed"
 * and emits the reason (a TLS verification error, WRONGPASS) as an event: the reason is thrown.
 * A TLS connection whose handshake gets no answer says that a server without TLS looks like that.
 */
export async function connectRedis(r: Redis, where: RedisWhere, timeoutMs: number, what: string): Promise<void> {
  let reason: Error | undefined;
  r.on('error', (e: Error) => {
    reason ??= e;
  });
  try {
    await withDeadline(r.connect(), timeoutMs, what);
  } catch (e) {
    const tls = typeof where === 'string' ? where.startsWith('rediss:') : !!where.tls;
    if (reason) throw reason;
    if (tls && /did not answer/.test((e as Error).message))
      throw new Error(`${(e as Error).message}: no answer to the TLS handshake (the server may not speak TLS on this port: check REDIS_URL, rediss:// vs redis://; or it is unreachable)`);
    throw e;
  }
}

export interface ProbeOptions {
  /** Time between the start of two probes (a probe that hangs counts against it). */
  intervalMs: number;
  /** Stop probing (resolve false) when this aborts: shutdown, lost leadership. */
  signal?: AbortSignal;
  /** Give up after this long (resolve false); none: until the signal aborts. */
  deadlineMs?: number;
  /** Called after each failed probe (count, error): for state-change logs and metrics. */
  onFailure?: (failures: number, err: Error) => void;
  /** The clock the interval and the deadline are measured on (default: the system clock). */
  clock?: Clock;
}

/**
 * Run `check` every intervalMs until it succeeds (true) or the signal/deadline ends the wait
 * (false). The first check runs at once.
 */
export async function probeUntilUp(check: Check, o: ProbeOptions): Promise<boolean> {
  const now = () => (o.clock ?? systemClock).now().getTime();
  const end = o.deadlineMs === undefined ? Infinity : now() + o.deadlineMs;
  let failures = 0;
  while (!o.signal?.aborted) {
    const started = now();
    try {
      await check();
      return true;
    } catch (e) {
      failures++;
      o.onFailure?.(failures, e as Error);
    }
    const next = started + o.intervalMs;
    if (next >= end) return false;
    await sleep(Math.max(0, next - now()), o.signal);
  }
  return false;
}

/** One probe per service, each bounded by timeoutMs (default 1 s). */
export const probes = {
  /** `select 1` on a new Postgres connection. */
  postgres(url: PgWhere, timeoutMs = 1000): Check {
    return async () => {
      const c = newClient(pgTarget(url), { ...connectionSettings(url, 'probe'), connectionTimeoutMillis: timeoutMs });
      c.on('error', () => {});
      try {
        await withDeadline(c.connect(), timeoutMs, 'postgres probe connect');
        await withDeadline(Probe.select1(createSessionDb(c)), timeoutMs, 'postgres probe');
      } catch (e) {
        throw explained('postgres', e);
      } finally {
        await withDeadline(c.end(), 500, 'end').catch(() => destroySocket(c));
      }
    };
  },

  /** `SELECT 1` on a new MySQL/MariaDB connection. */
  mysql(url: MysqlWhere, timeoutMs = 1000): Check {
    return async () => {
      const c = await mysqlConnect(url, timeoutMs, 'mysql probe connect');
      try {
        await withDeadline(Probe.mySelect1(c), timeoutMs, 'mysql probe');
      } finally {
        c.destroy();
      }
    };
  },

  /** PING on a new Redis connection. */
  redis(url: RedisWhere, timeoutMs = 1000): Check {
    return async () => {
      const r = await newRedis(url, { lazyConnect: true, connectTimeout: timeoutMs, commandTimeout: timeoutMs, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
      try {
        await connectRedis(r, url, timeoutMs, 'redis probe connect');
        const pong = await withDeadline(r.ping(), timeoutMs, 'redis probe');
        if (pong !== 'PONG') throw new Error(`redis probe: ${pong}`);
      } catch (e) {
        throw explained('redis', e);
      } finally {
        r.disconnect();
      }
    };
  },

  /** A metadata request (describeCluster) on a new Kafka admin connection to each broker at once: any answer will do. */
  kafka(brokers: KafkaWhere, timeoutMs = 1000): Check {
    const list = 'service' in brokers ? brokers.brokers : brokers;
    const one = async (broker: string) => {
      const kafka = await kafkaClient('msgx-probe', 'service' in brokers ? { ...brokers, brokers: [broker] } : [broker], timeoutMs);
      const admin = kafka.admin({ retry: { retries: 0 } });
      try {
        await withDeadline(admin.connect(), timeoutMs, 'kafka probe connect');
        await withDeadline(admin.describeCluster(), timeoutMs, 'kafka probe');
      } finally {
        void withDeadline(admin.disconnect(), timeoutMs, 'kafka probe disconnect').catch(() => {});
      }
    };
    return async () => {
      try {
        await Promise.any(list.map(one));
      } catch (e) {
        throw explained('kafka', e instanceof AggregateError ? e.errors[0] : e, { plain: !('service' in brokers) || !brokers.tls });
      }
    };
  },
};
