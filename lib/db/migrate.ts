// Migrations: node-pg-migrate over the plain SQL files in sql/migrations (ordered by name),
// then graphile-worker's own schema.
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import { runMigrations } from 'graphile-worker';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../sql/migrations', import.meta.url));

export async function migrate(databaseUrl: string, log: (msg: string) => void = () => {}): Promise<void> {
  await runner({
    databaseUrl,
    dir: MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    checkOrder: false,
    singleTransaction: true,
    log,
    logger: { debug: () => {}, info: log, warn: log, error: log },
  });
  await runMigrations({ connectionString: databaseUrl, logger: undefined });
}
