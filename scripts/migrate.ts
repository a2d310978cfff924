// npm run migrate: Postgres migrations (sql/migrations) and graphile-worker's schema.   (--help: usage)
import { cliArgs } from './args.ts';

cliArgs({
  name: 'migrate',
  positional: 'none',
  usage: `usage: npm run migrate
  Applies the Postgres migrations (sql/migrations) and graphile-worker's schema to DATABASE_URL.
  Idempotent: migrations already applied are skipped. No arguments.`,
});
const { loadConfig, redactUrl, targets } = await import('../lib/core/config.ts');
const { migrate } = await import('../lib/db/migrate.ts');
const config = loadConfig();
await migrate(targets(config).postgres, (m) => console.log(m));
console.log(`migrated ${redactUrl(config.DATABASE_URL)}`);
