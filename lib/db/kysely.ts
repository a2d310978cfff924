// Kysely over the same connections, for the tests' and scripts' own queries (query builder, `sql`).
// The processes never import it: they run lib/sql statements on lib/db/postgres.ts's Db.
import { Kysely, PostgresDialect, sql } from 'kysely';
import type pg from 'pg';
import type { Database } from './schema.ts';
import type { Db } from './postgres.ts';

export type QueryDb = Kysely<Database>;

export function createQueryDb(pool: pg.Pool): QueryDb {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** A Kysely bound to ONE dedicated connection (session-level advisory locks live on it). */
export function createQuerySessionDb(client: pg.Client): QueryDb {
  const pool = {
    connect: async () => Object.assign(client, { release: () => {} }),
    end: async () => {},
  };
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: pool as unknown as pg.Pool }) });
}

/** The Kysely behind a Db that lib code hands back (a test's session or its transaction), checked. */
export function asQueryDb(db: Db): QueryDb {
  if (!(db instanceof Kysely)) throw new Error('not a Kysely: lib/db/postgres.ts Db');
  return db as QueryDb;
}

export { sql };
