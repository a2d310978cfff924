// MySQL edge: the pool on the AODB inbox CMINMSGS and outbox COUTMSGS. Zone-less DATETIME columns
// hold airport local time; the session time zone is set explicitly and values are passed as
// strings. The statements: lib/sql/inbox.ts, lib/sql/coutmsgs.ts.
import mysql from 'mysql2/promise';

export type Inbox = mysql.Pool;

/** A pool on the AODB interface database, which holds both the inbox (CMINMSGS) and the outbox (COUTMSGS). */
export function createAodbPool(url: string, opts: { timeoutMs: number; connectionLimit?: number }): Inbox {
  const u = new URL(url);
  return mysql.createPool({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username || 'root'),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
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
  });
}
