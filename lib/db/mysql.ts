// MySQL edge: the pool on the AODB inbox CMINMSGS and outbox COUTMSGS. Zone-less DATETIME columns
// hold airport local time; the session time zone is set explicitly and values are passed as
// strings. The statements: lib/sql/inbox.ts, lib/sql/coutmsgs.ts.
//
// Every call has a deadline (timeoutMs, or the call's own `timeout` when longer): getting a
// connection and the query on it. A query that does not answer in time leaves its connection
// with a command the server may never answer (a frozen path): that connection is destroyed,
// never given back to the pool, and so are the pool's idle connections (opened before the same
// fault, likely frozen too); the next call opens a new one. `onFault` hears of each such timeout
// (the process's readiness, lib/runtime/health.ts).
import { connect as tcpConnect, isIP } from 'node:net';
import mysql from 'mysql2/promise';
import { resolveMysql, targetOf, type MysqlTarget } from '../core/connections.ts';
import { tlsOptions } from './tls.ts';
import { RUNTIME } from '../core/tuning.ts';

export type Inbox = mysql.Pool;

/** mysql2's caches sized for the few texts of lib/sql/inbox.ts and coutmsgs.ts (RUNTIME.mysql*). */
const PARSER_CACHE = RUNTIME.mysqlParserCache;
const PREPARED_STATEMENTS = RUNTIME.mysqlPreparedStatements;
mysql.setMaxParserCache(PARSER_CACHE);

type QueryArgs = Parameters<mysql.Pool['query']>;

/** Where a connection goes: a bare mysql:// URL (its own ssl-mode parameter only) or a configured target (lib/core/config.ts `targets`). */
export type MysqlWhere = string | MysqlTarget;

/**
 * Where a connection points: host, port, user, password, database, and TLS (verified:
 * lib/db/tls.ts; verify-full checks the host name too) — the one factory of MariaDB
 * connection options (pools, the readiness check, the probes, the CLIs).
 */
export function mysqlTarget(where: MysqlWhere): {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string | undefined;
  ssl?: mysql.SslOptions;
  stream?: () => import('node:net').Socket;
} {
  const t = typeof where === 'string' ? targetOf(resolveMysql(where, {}, 'the MariaDB URL')) : where;
  const u = new URL(t.url);
  const host = u.hostname;
  const port = Number(u.port || 3306);
  return {
    host,
    port,
    // mysql2 gives the TLS layer no server name for an IP address, and Node then checks the
    // certificate against "localhost": the socket names the address it connected to instead
    ...(t.tls?.mode === 'verify-full' && isIP(host) ? { stream: () => ipSocket(host, port) } : {}),
    user: decodeURIComponent(u.username || 'root'),
    password: t.password ?? decodeURIComponent(u.password),
    database: u.pathname.slice(1) || undefined,
    ...(t.tls ? { ssl: { ...(tlsOptions(t.tls) as mysql.SslOptions), rejectUnauthorized: true, verifyIdentity: t.tls.mode === 'verify-full' } } : {}),
  };
}

/** A TCP socket to an IP address that the TLS identity check sees as that address (mysql2 stream factory). */
function ipSocket(host: string, port: number) {
  const socket = tcpConnect(port, host);
  socket.setNoDelay(true);
  socket.setKeepAlive(true, 10_000);
  (socket as unknown as { _host: string })._host = host;
  return socket;
}

/** A pool on the AODB interface database, which holds both the inbox (CMINMSGS) and the outbox (COUTMSGS). */
export function createAodbPool(url: MysqlWhere, opts: { timeoutMs: number; connectionLimit?: number; onFault?: (err: Error) => void }): Inbox {
  const pool = mysql.createPool({
    ...mysqlTarget(url),
    connectionLimit: opts.connectionLimit ?? 4,
    connectTimeout: opts.timeoutMs,
    waitForConnections: true,
    queueLimit: 0,
    dateStrings: true, // DATETIME as 'YYYY-MM-DD HH:MM:SS' local strings, never shifted by a client zone
    timezone: 'Z',
    supportBigNumbers: true,
    bigNumberStrings: false,
    charset: 'utf8mb4',
    enableKeepAlive: true,
    maxPreparedStatements: PREPARED_STATEMENTS,
  });
  const bounded =
    (name: 'query' | 'execute') =>
    async (...args: QueryArgs) => {
      const own = typeof args[0] === 'object' && args[0] !== null ? (args[0] as { timeout?: number }).timeout : undefined;
      const ms = Math.max(opts.timeoutMs, own ?? 0);
      const getting = pool.getConnection();
      const conn = await deadline(getting, ms, 'mariadb connection').catch((e) => {
        getting.then(
          (late) => late.release(),
          () => {},
        );
        throw e;
      });
      try {
        const r = await deadline((conn[name] as (...a: unknown[]) => Promise<unknown>)(...(args as unknown[])), ms, `mariadb ${name}`);
        conn.release();
        return r;
      } catch (e) {
        const err = e as Error & { code?: string; fatal?: boolean };
        if (err.code === 'ETIMEDOUT' || err.code === 'PROTOCOL_SEQUENCE_TIMEOUT' || err.fatal) {
          conn.destroy();
          if (err.code === 'ETIMEDOUT' || err.code === 'PROTOCOL_SEQUENCE_TIMEOUT') {
            dropIdle(pool);
            opts.onFault?.(err);
          }
        } else conn.release();
        throw e;
      }
    };
  return new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop === 'query' || prop === 'execute') return bounded(prop);
      return Reflect.get(target, prop, receiver);
    },
  });
}

/** Close the idle connections of the pool (the next call opens a new one). */
export function dropIdle(pool: mysql.Pool): void {
  const free = (pool as unknown as { pool?: { _freeConnections?: { toArray(): { destroy(): void }[] } } }).pool?._freeConnections;
  for (const c of free?.toArray() ?? []) c.destroy();
}

async function deadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(Object.assign(new Error(`${what} did not answer within ${ms} ms`), { code: 'ETIMEDOUT' })), ms))),
    ]);
  } finally {
    clearTimeout(timer);
    p.catch(() => {});
  }
}
