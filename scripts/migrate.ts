// npm run migrate: Postgres migrations (sql/migrations) and graphile-worker's schema.
import { loadConfig, redactUrl } from '../lib/core/config.ts';
import { migrate } from '../lib/db/migrate.ts';

const config = loadConfig();
await migrate(config.DATABASE_URL, (m) => console.log(m));
console.log(`migrated ${redactUrl(config.DATABASE_URL)}`);
