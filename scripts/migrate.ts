// npm run migrate: Postgres migrations (sql/migrations) and graphile-worker's schema.   (--help: usage)
import { cliArgs, cliConfig, failExit, failureLine, reach } from './args.ts';

const SPEC = {
  name: 'migrate',
  positional: 'none' as const,
  usage: `usage: npm run migrate
  Applies the Postgres migrations (sql/migrations) and graphile-worker's schema to DATABASE_URL.
  Idempotent: migrations already applied are skipped. No arguments. Exit 0 when done, 1 when
  Postgres refused or did not answer (one line naming the setting to check), 2 on a bad setting.`,
};
cliArgs(SPEC);
const config = await cliConfig(SPEC.name);
await reach(SPEC.name, config, ['postgres']);
const { redactUrl, targets } = await import('../lib/core/config.ts');
const { migrate } = await import('../lib/db/migrate.ts');
const { explained } = await import('../lib/db/tls.ts');
try {
  await migrate(targets(config).postgres, (m) => console.log(m));
} catch (e) {
  failExit(SPEC.name, failureLine(explained('postgres', e), 'postgres'), 1);
}
console.log(`migrated ${redactUrl(config.DATABASE_URL)}`);
