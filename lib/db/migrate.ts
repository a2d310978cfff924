// Migrations: node-pg-migrate over the plain SQL files in sql/migrations (ordered by name),
// then graphile-worker's own schema.
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import { runMigrations } from 'graphile-worker';
import { createPool, pgEndpoint, type PgWhere } from './postgres.ts';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../sql/migrations', import.meta.url));

export async function migrate(where: PgWhere, log: (msg: string) => void = () => {}): Promise<void> {
  await runner({
    // the same connection options as every other connection (lib/db/postgres.ts: TLS, password)
    databaseUrl: pgEndpoint(where),
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    checkOrder: false,
    singleTransaction: true,
    log,
    logger: { debug: () => {}, info: log, warn: log, error: log },
  });
  const pool = createPool(where, { max: 1, name: 'migrate' });
  try {
    await runMigrations({ pgPool: pool, logger: undefined });
  } finally {
    await pool.end();
  }
}
