// npm run dry-run -- --from <MSG_ID> [--to <MSG_ID>] --database <scratch DATABASE_URL> [--json]
// A rule change tried without a second installation (docs/operations.md "Trying a rule change"):
// applies the retained inbox rows from..to with this checkout's code into a new, empty scratch
// database (migrated here; never the live one), then compares it with the live installation
// (DATABASE_URL) at the same inbox position, as `npm run compare` does. Writes nothing but the
// scratch database: the inbox is only read (no processing time written back), no Redis, no Kafka.
// Exit 0 equal, 1 different, 2 could not compare (or bad arguments).
import { cliArgs, cliConfig, reach, usageExit } from './args.ts';

const SPEC = {
  name: 'dry-run',
  valued: ['--from', '--to', '--database'],
  flags: ['--json'],
  positional: 'none' as const,
  usage: `usage: npm run dry-run -- --from <MSG_ID> [--to <MSG_ID>] --database <scratch DATABASE_URL> [--json]
  Every database and the inbox are reached with this installation's settings (DATABASE_TLS_*,
  INBOX_TLS_*, the *_PASSWORD_FILE; the scratch URL without a password gets DATABASE_PASSWORD).
  Applies the inbox rows from..to (default to: the live installation's position) with this
  checkout's code into the scratch database (a new, empty database: migrated by the command;
  refused if it is the live one or holds anything), then compares it with the live installation
  (DATABASE_URL) at the same position and prints the report of npm run compare.
  Flights whose history began before --from are not comparable (counted as such).
  Exit 0 equal, 1 different, 2 could not compare (range beyond the inbox's retention, the live
  database as scratch, a schema that differs, a database that does not answer).`,
};

const args = cliArgs(SPEC);
const num = (flag: string) => {
  const v = args.options[flag];
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) usageExit(SPEC, `${flag} must be an inbox ID (a whole number), not ${v}`);
  return Number(v);
};
const from = num('--from');
const toArg = num('--to');
const scratchUrl = args.options['--database'];
if (from === undefined || from < 1) usageExit(SPEC, '--from <MSG_ID> (≥ 1) is required');
if (!scratchUrl) usageExit(SPEC, '--database <scratch DATABASE_URL> is required');
if (toArg !== undefined && toArg < from) usageExit(SPEC, `--to ${toArg} is below --from ${from}`);

const { peerDatabase, redactUrl, slices, targets } = await import('../lib/core/config.ts');
const { scrub } = await import('../lib/core/secrets.ts');
const { systemClock } = await import('../lib/core/clock.ts');
const { createDb, createPool, createSessionDb, connectClient } = await import('../lib/db/postgres.ts');
const { createAodbPool } = await import('../lib/db/mysql.ts');
const { migrate } = await import('../lib/db/migrate.ts');
const { withTimeout } = await import('../lib/core/timeout.ts');
const { inboxBounds, readAllAfter } = await import('../lib/pipeline/inbox.ts');
const { enqueue } = await import('../lib/sql/transitions.ts');
const { drain, pumpSettings, withSqlPorts } = await import('../lib/pipeline/pump/loop.ts');
const { buildDecoder, buildRegistry } = await import('../lib/app/composition.ts');
const { checkComparable, compareInstallations, positionOf, CannotCompare } = await import('../lib/shadow/collect.ts');
const { checkScratchBeforeMigrate, startScratch } = await import('../lib/shadow/scratch.ts');
const { formatReport } = await import('../lib/shadow/diff.ts');
const { createLogger } = await import('../lib/runtime/log.ts');

const config = await cliConfig(SPEC.name);
await reach(SPEC.name, config, ['postgres', 'mariadb']);
let scratchTarget: import('../lib/core/connections.ts').PgTarget;
try {
  // the scratch database with the live one's connection settings (TLS, the password file)
  scratchTarget = peerDatabase(config, scratchUrl, '--database');
} catch (e) {
  console.error(`dry-run: ${(e as Error).message}`);
  process.exit(2);
}
const s = slices(config);
const timeoutMs = Math.max(s.io.timeoutMs, 30_000);
const log = createLogger('dry-run', config['msgx.log.level'] === 'info' ? 'warn' : config['msgx.log.level']);
const livePool = createPool(targets(config).postgres, { max: 3, name: 'dry-run', statementTimeoutMs: timeoutMs });
const scratchPool = createPool(scratchTarget, { max: 4, name: 'dry-run', statementTimeoutMs: timeoutMs });
const inbox = createAodbPool(targets(config).mariadb, { timeoutMs: s.io.timeoutMs });
const live = createDb(livePool);
const scratch = createDb(scratchPool);
let session: import('pg').Client | undefined;
const say = (line: string) => process.stderr.write(`dry-run: ${line}\n`);

try {
  await checkScratchBeforeMigrate(scratch, live, timeoutMs);
  const bounds = await withTimeout(s.io.timeoutMs, 'inbox bounds', inboxBounds(inbox));
  if (bounds.min === null || bounds.max === null) throw new CannotCompare('the inbox is empty');
  if (from < bounds.min) throw new CannotCompare(`--from ${from} is beyond the inbox's retention: its oldest retained row is ${bounds.min}`);
  const livePos = (await positionOf(live, timeoutMs)).position;
  const to = toArg ?? livePos;
  if (to < from) throw new CannotCompare(`the live installation is at ${livePos}, below --from ${from}`);
  if (to > bounds.max) throw new CannotCompare(`--to ${to} is beyond the inbox's newest row ${bounds.max}`);

  await withTimeout(10 * timeoutMs, 'scratch: migrate', migrate(scratchTarget));
  await startScratch(scratch, from - 1, timeoutMs);
  await checkComparable({ name: 'dry-run', db: scratch }, { name: 'live', db: live }, timeoutMs);

  // take in every row of from..to (processed by the live installation or not), as a shadow's intake does
  let after = from - 1;
  let taken = 0;
  for (;;) {
    const rows = await withTimeout(s.io.timeoutMs, 'inbox read', readAllAfter(inbox, after, 5_000, to));
    if (rows.length === 0) break;
    taken += (await withTimeout(timeoutMs, 'scratch: take in', enqueue(scratch, rows, systemClock.now()))).length;
    after = rows[rows.length - 1].id;
  }
  say(`applying ${taken} message(s) ${from}..${to} into ${redactUrl(scratchUrl)}`);

  // the pump of this checkout, without Redis (a mirror that writes nothing) and without backfill
  session = await connectClient(scratchTarget, 'dry-run-pump');
  const decoder = buildDecoder(s.pump, s.airport);
  try {
    const deps = withSqlPorts({
      session: createSessionDb(session),
      terminalDb: scratch,
      inbox,
      registry: buildRegistry({ ruleOverride: s.pump.ruleOverride }),
      mirror: { sync: async () => {} },
      clock: systemClock,
      ...pumpSettings(config),
      log,
      decoder,
    });
    for (;;) {
      const r = await drain(deps, 60_000);
      if (r.next === 'idle') break;
      if (r.next instanceof Date) await new Promise((res) => setTimeout(res, Math.max(0, (r.next as Date).getTime() - Date.now())));
    }
  } finally {
    await decoder.close();
  }

  const report = await compareInstallations({ name: 'dry-run', db: scratch }, { name: 'live', db: live }, { timeZone: s.airport.timezone, timeoutMs, waitMs: 0 });
  console.log(args.flags.has('--json') ? JSON.stringify(report, null, 2) : formatReport(report));
  process.exitCode = report.equal ? 0 : 1;
} catch (e) {
  const why = e instanceof CannotCompare ? e.message : `could not compare: ${(e as Error).message}`;
  console.error(`dry-run: ${scrub(redact(why))}`);
  process.exitCode = 2;
} finally {
  await session?.end().catch(() => {});
  await livePool.end().catch(() => {});
  await scratchPool.end().catch(() => {});
  await inbox.end().catch(() => {});
}

/** No password of either URL in any output. */
function redact(text: string): string {
  let out = text;
  for (const u of [config.DATABASE_URL, scratchUrl as string]) {
    const pw = /\/\/[^:@/]*:([^@/]*)@/.exec(u)?.[1];
    if (pw) out = out.split(pw).join('***');
  }
  return out;
}
