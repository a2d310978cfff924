// The dependency checks of /healthz (lib/runtime/health.ts runs them): each process's checks of
// its services, made on connections kept open between checks (docs/decisions.md "Frozen
// connections"), so a frozen path fails them like a refused one. One-shot probes and the shared
// connectors: ./probe.ts.
import type kafkajs from 'kafkajs';
import type mysql from 'mysql2/promise';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { MysqlWhere } from '../db/mysql.ts';
import { connectionSettings, createSessionDb, destroySocket, newClient, pgTarget, type Db, type PgWhere } from '../db/postgres.ts';
import type { RedisWhere } from '../db/redis.ts';
import { explained } from '../db/tls.ts';
import * as Probe from '../sql/probe.ts';
import { withDeadline } from './leader.ts';
import { type Check, connectRedis, kafkaClient, mysqlConnect, newRedis, type KafkaWhere } from './probe.ts';

/**
 * The Postgres check of a process: `select 1` within `timeoutMs` on one dedicated connection
 * (rebuilt after a failure), so /healthz and msgx_postgres_up do not wait on a pool whose
 * connections may hang on a dead path. Given the process's pool, it holds no connection of its
 * own (the installation's connection count, docs/decisions.md "Footprint"): a check runs on an
 * idle pooled connection (a frozen one fails the check and is destroyed, as the dedicated one
 * would be), and on a dedicated connection, closed after the check, while none is idle (the
 * check never makes the pool grow).
 */
class PostgresCheck {
  private client: pg.Client | null = null;
  /** Statements on `client` (lib/sql/probe.ts). */
  private session: Db | null = null;
  private readonly url: PgWhere;
  private readonly pool: pg.Pool | undefined;
  /** Pooled connections an earlier check used: a failure on one is a failure on a kept connection. */
  private readonly seen = new WeakSet<pg.PoolClient>();
  private readonly timeoutMs: number;
  /** application_name of its connection: msgx-<process>-watch (pg_stat_activity tells whose it is). */
  private readonly name: string;

  constructor(o: { url: PgWhere; pool?: pg.Pool; timeoutMs: number; process?: string }) {
    this.url = o.url;
    this.pool = o.pool;
    this.name = o.process ? `${o.process}-watch` : 'watch';
    this.timeoutMs = o.timeoutMs;
  }

  /** Throws (marked keptFailed when the connection had answered before) unless Postgres answered. */
  async check(): Promise<void> {
    const pool = this.pool;
    if (pool && pool.idleCount > 0) return this.checkPooled(pool);
    const kept = this.client !== null;
    try {
      if (!this.client) {
        const c = newClient(pgTarget(this.url), { ...connectionSettings(this.url, this.name), connectionTimeoutMillis: this.timeoutMs });
        c.on('error', () => {});
        this.client = c;
        this.session = createSessionDb(c);
        await withDeadline(c.connect(), this.timeoutMs, 'postgres connect');
      }
      await withDeadline(Probe.select1(this.session!), this.timeoutMs, 'postgres select 1');
    } catch (e) {
      this.drop();
      throw keptFailed(explained('postgres', e), kept);
    } finally {
      // with a pool, the dedicated connection served one check while no pooled one was idle
      if (pool) this.drop();
    }
  }

  private async checkPooled(pool: pg.Pool): Promise<void> {
    let kept = false;
    const connecting = pool.connect();
    let c: pg.PoolClient | undefined;
    // the pool's release of this checkout (a session Db over the client replaces it with a no-op)
    let release: ((err?: Error) => void) | undefined;
    try {
      c = await withDeadline(connecting, this.timeoutMs, 'postgres connect');
      release = c.release.bind(c);
      kept = this.seen.has(c);
      this.seen.add(c);
      await withDeadline(Probe.select1(createSessionDb(c as unknown as pg.Client)), this.timeoutMs, 'postgres select 1');
      release();
    } catch (e) {
      if (c) {
        release?.(e as Error); // destroyed, never reused
        destroySocket(c);
      } else
        connecting.then(
          (late) => late.release(), // a connection that completes late goes back to the pool
          () => {},
        );
      throw keptFailed(explained('postgres', e), kept);
    }
  }

  drop(): void {
    const c = this.client;
    this.client = null;
    this.session = null;
    destroySocket(c);
  }
}

/**
 * Marks a failure on a connection that answered earlier checks (`kept`): the signature of a
 * frozen path, which the next check, on a new connection, would not see again.
 */
export function keptFailed(e: unknown, kept: boolean): Error {
  const err = e instanceof Error ? e : new Error(String(e));
  return Object.assign(err, { kept });
}

/** A check on one dedicated connection kept open between checks (rebuilt after a failure), and how to close it. */
export interface DependencyCheck {
  check: Check;
  close: () => void;
}

/**
 * A check on one kept connection: opened when there is none, probed, destroyed after a failure
 * (the next check opens a new one). A failure on a connection that was already open is marked
 * (keptFailed): that is what a frozen path looks like.
 */
function keptConnection<C>(o: { open: () => Promise<C>; probe: (c: C) => Promise<void>; destroy: (c: C) => void }): DependencyCheck {
  let conn: C | null = null;
  const drop = () => {
    if (conn !== null) o.destroy(conn);
    conn = null;
  };
  return {
    check: async () => {
      const kept = conn !== null;
      try {
        conn ??= await o.open();
        await o.probe(conn);
      } catch (e) {
        drop();
        throw keptFailed(e, kept);
      }
    },
    close: drop,
  };
}

/**
 * Checks for lib/runtime/health.ts: one round trip on a DEDICATED connection that stays open
 * between checks, so that a connection frozen on a dead path fails the check (a fresh one per
 * check would pass while the process's own connections hang); the connection is destroyed after
 * a failure and the next check opens a new one. Each step is bounded by timeoutMs.
 */
export const dependencyChecks = {
  postgres(url: PgWhere, timeoutMs = 1500, o: { process?: string; pool?: pg.Pool } = {}): DependencyCheck {
    const c = new PostgresCheck({ url, timeoutMs, ...o });
    return { check: () => c.check(), close: () => c.drop() };
  },

  mysql(url: MysqlWhere, timeoutMs = 1500): DependencyCheck {
    return keptConnection<mysql.Connection>({
      open: () => mysqlConnect(url, timeoutMs, 'mariadb connect'),
      probe: async (conn) => {
        await withDeadline(Probe.mySelect1(conn), timeoutMs, 'mariadb SELECT 1');
      },
      destroy: (conn) => conn.destroy(),
    });
  },

  redis(url: RedisWhere, timeoutMs = 1500): DependencyCheck {
    return keptConnection<Redis>({
      open: async () => {
        const r = await newRedis(url, { lazyConnect: true, connectTimeout: timeoutMs, commandTimeout: timeoutMs, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
        try {
          await connectRedis(r, url, timeoutMs, 'redis connect');
        } catch (e) {
          r.disconnect();
          throw explained('redis', e);
        }
        return r;
      },
      probe: async (r) => {
        const pong = await withDeadline(r.ping(), timeoutMs, 'redis PING').catch((e) => {
          throw explained('redis', e);
        });
        if (pong !== 'PONG') throw new Error(`redis PING answered ${pong}`);
      },
      destroy: (r) => r.disconnect(),
    });
  },

  kafka(brokers: KafkaWhere, timeoutMs = 1500): DependencyCheck {
    let kafka: Promise<kafkajs.Kafka> | undefined;
    let admin: kafkajs.Admin | null = null;
    const drop = () => {
      const a = admin;
      admin = null;
      if (a) void withDeadline(a.disconnect(), timeoutMs, 'kafka disconnect').catch(() => {});
    };
    return {
      check: async () => {
        const kept = admin !== null;
        try {
          if (!admin) {
            kafka ??= kafkaClient('msgx-health', brokers, timeoutMs);
            admin = (await kafka).admin({ retry: { retries: 0 } });
            await withDeadline(admin.connect(), timeoutMs, 'kafka connect');
          }
          await withDeadline(admin.describeCluster(), timeoutMs, 'kafka metadata request');
        } catch (e) {
          drop();
          throw keptFailed(explained('kafka', e, { plain: !('service' in brokers) || !brokers.tls }), kept);
        }
      },
      close: drop,
    };
  },
};
