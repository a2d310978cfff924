// Postgres edge: pools, Kysely, advisory lock keys, migrations.
import pg from 'pg';
import { Kysely, PostgresDialect, sql } from 'kysely';
import type { Database } from './schema.ts';

// int8 → number (inbox IDs, counters: all far below 2^53); numeric stays string.
pg.types.setTypeParser(20, (v) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new Error(`bigint ${v} exceeds the safe integer range`);
  return n;
});

export type Db = Kysely<Database>;

export function createPool(url: string, opts: { max?: number; statementTimeoutMs?: number; name?: string } = {}) {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    application_name: opts.name ? `msgx-${opts.name}` : 'msgx',
    connectionTimeoutMillis: 10_000,
    statement_timeout: opts.statementTimeoutMs,
  });
  // Errors of idle clients surface on the next query; never crash the process.
  pool.on('error', () => {});
  pool.on('connect', (c) => c.on('error', () => {}));
  return pool;
}

export function createDb(pool: pg.Pool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/**
 * A Kysely bound to ONE dedicated connection (session-level advisory locks live on it).
 * If the connection dies, every query fails; the owner must rebuild it and re-take its locks.
 */
export function createSessionDb(client: pg.Client): Db {
  const pool = {
    connect: async () => Object.assign(client, { release: () => {} }),
    end: async () => {},
  };
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: pool as unknown as pg.Pool }) });
}

export async function connectClient(url: string, name: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: `msgx-${name}`, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** Advisory lock keys (one namespace, documented in docs/decisions.md). */
export const LOCKS = {
  PIPELINE: 7_001,
  PUMP_LEADER: 7_002,
  INTAKE_LEADER: 7_003,
  LIFECYCLE_GATE: 7_004,
  HISTORY_PURGE_LEADER: 7_005,
  MSG_DISPATCH_ROUND: 7_011,
  SCHD_DISPATCH_ROUND: 7_012,
  // 7100 (two-key form): requests — 1 creating RQRD, 2 creating RQFD, 3 the sender (lib/requests/outbound.ts)
} as const;

export { sql };
