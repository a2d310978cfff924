// Postgres edge: pools, the statement executor (Db), advisory lock keys, migrations.
import pg from 'pg';
import type { CompiledQuery, QueryResult } from 'kysely';
import { parse as parseConnectionString } from 'pg-connection-string';
import { resolvePostgres, targetOf, type PgTarget } from '../core/connections.ts';
import { noAnswer, withTimeout } from '../core/timeout.ts';
import { clientClassOf, newClient } from './pg-hosts.ts';
import { tlsOptions } from './tls.ts';
import { RUNTIME } from '../core/tuning.ts';

// int8 → number (inbox IDs, counters: all far below 2^53); numeric stays string.
pg.types.setTypeParser(20, (v) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new Error(`bigint ${v} exceeds the safe integer range`);
  return n;
});

/**
 * A statement as lib/db/statement.ts hands it over (Kysely's compiled-query shape, so that a
 * Kysely runs it too): `sql` is the text, or pg's `{ name, text }` for a named statement.
 */
export type Query<R = unknown> = CompiledQuery<R>;
export type { QueryResult };

export type IsolationLevel = 'read uncommitted' | 'read committed' | 'repeatable read' | 'serializable';

export interface TransactionBuilder {
  setIsolationLevel(level: IsolationLevel): TransactionBuilder;
  /** Runs `work` in one transaction on one connection: committed when it resolves, rolled back when it throws. */
  execute<T>(work: (tx: Db) => Promise<T>): Promise<T>;
}

/**
 * What lib/ runs its statements on: a pool, a dedicated session or a transaction. A Kysely
 * (the tests' and scripts' query builder, lib/db/kysely.ts) has this shape too; the processes
 * use the small executor below instead, which runs pg exactly as Kysely's Postgres dialect does
 * (same statements, begin/commit/rollback, affected-row counts) without loading Kysely's ~250
 * modules (~7 MB RSS per process: docs/decisions.md "Footprint").
 */
export interface Db {
  executeQuery<R>(query: Query<R>): Promise<QueryResult<R>>;
  transaction(): TransactionBuilder;
  /** Runs `work` on one connection of the pool, held until it settles (session-level locks). */
  connection(): { execute<T>(work: (conn: Db) => Promise<T>): Promise<T> };
}

type Lease = { client: pg.ClientBase; release(discard?: boolean): void };

async function run<R>(client: pg.ClientBase, q: Pick<Query, 'sql' | 'parameters'>): Promise<QueryResult<R>> {
  const { command, rowCount, rows } = await client.query(q.sql as string, q.parameters as unknown[]);
  if (command === 'ROLLBACK' || command === 'COMMIT') return { rows: [{ command }] as R[] };
  const counted = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
  return { ...(counted ? { numAffectedRows: BigInt(rowCount ?? 0) } : {}), rows: (rows ?? []) as R[] };
}

const command = (sql: string) => ({ sql, parameters: [] });

class PgDb implements Db {
  readonly #lease: () => Promise<Lease>;
  constructor(lease: () => Promise<Lease>) {
    this.#lease = lease;
  }

  async executeQuery<R>(query: Query<R>): Promise<QueryResult<R>> {
    const l = await this.#lease();
    try {
      return await run<R>(l.client, query);
    } finally {
      l.release();
    }
  }

  connection(): { execute<T>(work: (conn: Db) => Promise<T>): Promise<T> } {
    return {
      execute: async (work) => {
        const l = await this.#lease();
        try {
          return await work(new PgDb(async () => ({ client: l.client, release: () => {} })));
        } finally {
          l.release();
        }
      },
    };
  }

  transaction(isolation?: IsolationLevel): TransactionBuilder {
    return {
      setIsolationLevel: (level) => this.transaction(level),
      execute: async (work) => {
        const l = await this.#lease();
        let discard = false;
        try {
          let begun = false;
          try {
            await run(l.client, command(isolation ? `start transaction isolation level ${isolation}` : 'begin'));
            begun = true;
            const result = await work(new TxDb(l.client));
            const { rows } = await run<{ command?: string }>(l.client, command('commit'));
            // Postgres completes COMMIT with a ROLLBACK tag when an earlier error aborted the transaction
            if (rows[0]?.command === 'ROLLBACK') throw Object.assign(new Error('transaction aborted: COMMIT completed as ROLLBACK'), { name: 'AbortedTransactionError' });
            return result;
          } catch (e) {
            if (begun && (e as Error)?.name !== 'AbortedTransactionError')
              await run(l.client, command('rollback')).catch((err: unknown) => {
                discard = true; // a connection whose rollback failed is not given back to the pool
                throw err;
              });
            throw e;
          }
        } finally {
          l.release(discard);
        }
      },
    };
  }
}

/** The statements of a transaction: on its one connection; no nested transaction. */
class TxDb implements Db {
  readonly #client: pg.ClientBase;
  constructor(client: pg.ClientBase) {
    this.#client = client;
  }
  executeQuery<R>(query: Query<R>): Promise<QueryResult<R>> {
    return run<R>(this.#client, query);
  }
  transaction(): TransactionBuilder {
    throw new Error('calling the transaction method for a Transaction is not supported');
  }
  connection(): never {
    throw new Error('calling the connection method for a Transaction is not supported');
  }
}

/**
 * Limits every session gets (a session must never stall silently). A statement, a
 * lock wait or an open transaction left idle ends with an error after these bounds; the
 * server probes an idle connection after 10 s and drops it after 3 unanswered probes 5 s apart
 * (tcp_keepalives_*, settable per session), and checks a running query's client every 5 s
 * (client_connection_check_interval). docs/operations.md "Network faults" lists the server
 * settings that help further.
 */
export const SESSION_LIMITS = RUNTIME.postgresSession;

const SERVER_KEEPALIVE = '-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3 -c client_connection_check_interval=5000';
/**
 * No JIT compilation: Postgres JIT-compiles a plan whose estimated cost passes jit_above_cost,
 * at every execution. The loader's estimate (a dozen correlated aggregates per flight) passes it
 * for a page of flights: 100–200 ms of compiling for a statement that runs in tens of ms
 * (docs/decisions.md "SQL: plans of the prepared statements").
 */
const SERVER_NO_JIT = '-c jit=off';

/** Where a connection goes: a bare URL (its own sslmode / sslrootcert parameters only) or a configured target (lib/core/config.ts `targets`). */
export type PgWhere = string | PgTarget;

export function pgTarget(where: PgWhere): PgTarget {
  return typeof where === 'string' ? targetOf(resolvePostgres(where, {}, 'the Postgres URL')) : where;
}

/**
 * Host, user, password and TLS of a connection: the URL as it is when nothing is added to it
 * (the plain default, unchanged), else the URL's fields with the password and the TLS options
 * (verified: lib/db/tls.ts) set over them.
 */
export function pgEndpoint(where: PgWhere): pg.ClientConfig {
  const t = pgTarget(where);
  if (!t.tls && t.password === undefined) return { connectionString: t.url };
  const fields = parseConnectionString(t.url) as pg.ClientConfig;
  return {
    ...(Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== null && v !== undefined && v !== '')) as pg.ClientConfig),
    ...(t.password !== undefined ? { password: t.password } : {}),
    // pg sets the SNI / identity host itself (the URL's host)
    ssl: t.tls ? tlsOptions(t.tls) : false,
  };
}

/** Connection settings shared by pools, dedicated clients, graphile-worker and the migrations: the one factory. */
export function connectionSettings(where: PgWhere, name: string | undefined, statementTimeoutMs: number = SESSION_LIMITS.statementTimeoutMs): pg.ClientConfig {
  return {
    ...pgEndpoint(where),
    application_name: name ? `msgx-${name}` : 'msgx',
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
    keepAliveInitialDelayMillis: SESSION_LIMITS.keepAliveInitialDelayMs,
    statement_timeout: statementTimeoutMs,
    lock_timeout: SESSION_LIMITS.lockTimeoutMs,
    idle_in_transaction_session_timeout: SESSION_LIMITS.idleInTransactionMs,
    options: `${SERVER_KEEPALIVE} ${SERVER_NO_JIT}`,
  };
}

/**
 * Destroys the socket of a node-postgres client at once (no `end()` handshake): the way to drop a
 * connection that may be frozen (a reply that never comes). node-postgres does not type its
 * `connection.stream`; this is the one place that reaches it.
 */
export function destroySocket(c: pg.Client | pg.PoolClient | null | undefined): void {
  (c as unknown as { connection?: { stream?: { destroy(): void } } } | null | undefined)?.connection?.stream?.destroy();
}

export function createPool(url: PgWhere, opts: { max?: number; statementTimeoutMs?: number; name?: string } = {}) {
  const settings = connectionSettings(url, opts.name, opts.statementTimeoutMs);
  // a host list (DATABASE_URL h1,h2): every connection to the primary (lib/db/pg-hosts.ts)
  const pool = new pg.Pool({ ...settings, max: opts.max ?? 10, Client: clientClassOf(pgTarget(url), settings) });
  // Errors of idle clients surface on the next query; never crash the process.
  pool.on('error', () => {});
  pool.on('connect', (c) => c.on('error', () => {}));
  return pool;
}

export function createDb(pool: pg.Pool): Db {
  return new PgDb(async () => {
    const c = await pool.connect();
    return { client: c, release: (discard) => c.release(discard || undefined) };
  });
}

/**
 * A Kysely bound to ONE dedicated connection (session-level advisory locks live on it).
 * If the connection dies, every query fails; the owner must rebuild it and re-take its locks.
 */
export function createSessionDb(client: pg.Client): Db {
  return new PgDb(async () => ({ client, release: () => {} }));
}

export async function connectClient(url: PgWhere, name: string, deadline?: { ms: number; what: string }): Promise<pg.Client> {
  const client = newClient(pgTarget(url), connectionSettings(url, name));
  client.on('error', () => {});
  const connected = client.connect();
  if (!deadline) {
    await connected;
    return client;
  }
  try {
    await withTimeout(deadline.ms, noAnswer(deadline.what), connected);
  } catch (e) {
    // the attempt is ended (its socket destroyed), never left to connect later unused: a path
    // that held it (a black hole) would deliver it to the server as an idle session
    destroySocket(client);
    throw e;
  }
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
  STATE_DISPATCH_ROUND: 7_013,
  // 7100 (two-key form): requests — 1 creating RQRD, 2 creating RQFD, 3 the sender (lib/requests/outbound.ts)
} as const;

export { newClient };
