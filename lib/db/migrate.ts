// Migrations: node-pg-migrate over the plain SQL files in sql/migrations (ordered by name),
// then graphile-worker's own schema.
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import { runMigrations } from 'graphile-worker';
import { createPool, newClient, pgEndpoint, pgTarget, type PgWhere } from './postgres.ts';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../sql/migrations', import.meta.url));

export async function migrate(where: PgWhere, log: (msg: string) => void = () => {}): Promise<void> {
  // the same connection options as every other connection (lib/db/postgres.ts: TLS, password;
  // the primary of a host list), no statement timeout (a migration may rewrite a large table)
  const client = newClient(pgTarget(where), { ...pgEndpoint(where), connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    await runner({
      dbClient: client,
      dir: MIGRATIONS_DIR,
      direction: 'up',
      migrationsTable: 'pgmigrations',
      checkOrder: false,
      singleTransaction: true,
      log,
      logger: { debug: () => {}, info: log, warn: log, error: log },
    });
  } finally {
    await client.end().catch(() => {});
  }
  const pool = createPool(where, { max: 1, name: 'migrate' });
  try {
    await runMigrations({ pgPool: pool, logger: undefined });
  } finally {
    await pool.end();
  }
}
