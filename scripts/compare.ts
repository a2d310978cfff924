// npm run compare -- --other <DATABASE_URL> [--json] [--wait 30s]
// The state diff of this installation (DATABASE_URL) and another one (docs/operations.md "Trying
// a rule change"): both at the same inbox position, flights as GET /flights/:flid shows them,
// reference data and message outcomes. Exit 0 equal, 1 different, 2 could not compare.
import { cliArgs, cliConfig, reach, usageExit } from './args.ts';

const SPEC = {
  name: 'compare',
  valued: ['--other', '--wait'],
  flags: ['--json'],
  positional: 'none' as const,
  usage: `usage: npm run compare -- --other <DATABASE_URL> [--json] [--wait 30s]
  Both databases are reached with this installation's settings (DATABASE_TLS_*; for a URL
  without a password, DATABASE_PASSWORD / _FILE).
  Compares this installation (DATABASE_URL) with another one (typically: a shadow beside the
  live one) at the same inbox position: the highest message both have made terminal. It waits
  up to --wait (default 30s) for both to get there; if they do not, it compares at the lower one
  and counts the flights the other changed after it as not comparable.
  Prints a summary (flights compared / equal / different / not comparable, reference data,
  message outcomes), then per different flight the fields with both values and the message that
  last set each; --json prints the same as one JSON document.
  Exit 0 equal, 1 different, 2 could not compare (same database, not a msgexchange database,
  schema versions differ, a database that does not answer).`,
};

const args = cliArgs(SPEC);
const otherUrl = args.options['--other'];
if (!otherUrl) usageExit(SPEC, '--other <DATABASE_URL> is required');
const { parseDuration, peerDatabase, redactUrl, slices, targets } = await import('../lib/core/config.ts');
const { scrub } = await import('../lib/core/secrets.ts');
let waitMs = 30_000;
try {
  if (args.options['--wait'] !== undefined) waitMs = parseDuration(args.options['--wait']);
} catch (e) {
  usageExit(SPEC, `--wait: ${(e as Error).message}`);
}
const { createDb, createPool } = await import('../lib/db/postgres.ts');
const { compareInstallations, CannotCompare } = await import('../lib/shadow/collect.ts');
const { formatReport } = await import('../lib/shadow/diff.ts');

const config = await cliConfig(SPEC.name);
await reach(SPEC.name, config, ['postgres']);
let other: import('../lib/core/connections.ts').PgTarget;
try {
  // the other installation's database with this one's connection settings (TLS, the password file)
  other = peerDatabase(config, otherUrl, '--other');
} catch (e) {
  console.error(`compare: ${(e as Error).message}`);
  process.exit(2);
}
const timeoutMs = Math.max(slices(config).io.timeoutMs, 30_000);
const herePool = createPool(targets(config).postgres, { max: 3, name: 'compare', statementTimeoutMs: timeoutMs });
const otherPool = createPool(other, { max: 3, name: 'compare', statementTimeoutMs: timeoutMs });
try {
  const report = await compareInstallations({ name: 'here', db: createDb(herePool) }, { name: 'other', db: createDb(otherPool) }, { timeZone: slices(config).airport.timezone, timeoutMs, waitMs });
  console.log(args.flags.has('--json') ? JSON.stringify(report, null, 2) : formatReport(report));
  process.exitCode = report.equal ? 0 : 1;
} catch (e) {
  const why = e instanceof CannotCompare ? e.message : `could not compare: ${(e as Error).message}`;
  console.error(`compare: ${scrub(redact(why))} (here ${redactUrl(config.DATABASE_URL)}, other ${redactUrl(otherUrl)})`);
  process.exitCode = 2;
} finally {
  await herePool.end().catch(() => {});
  await otherPool.end().catch(() => {});
}

/** No password of either URL in any output. */
function redact(text: string): string {
  let out = text;
  for (const u of [config.DATABASE_URL, otherUrl]) {
    const pw = /\/\/[^:@/]*:([^@/]*)@/.exec(u)?.[1];
    if (pw) out = out.split(pw).join('***');
  }
  return out;
}
