// The one argument parser of the CLIs (scripts/*.ts behind the npm scripts): positional ids or
// words, `--opt value`, `--flag`, and `--help` / `-h`, which prints the command's usage and exits
// 0 before anything is opened or changed. A bad argument prints one line naming the flags the
// command knows, then its usage, and exits 2. Every message is prefixed once with the name.

import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Config } from '../lib/core/config.ts';
import type { ServiceName } from '../lib/core/connections.ts';
import { scrub } from '../lib/core/secrets.ts';

/**
 * Everything a CLI prints passes through scrub (lib/core/secrets.ts): no configured password,
 * URL password or private key reaches its output, whatever an error message carries. Installed
 * once, by the first call of cliArgs / scriptHelp (every CLI makes one before anything else).
 */
export function guardOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    const s = stream as NodeJS.WriteStream & { msgxGuarded?: boolean };
    if (s.msgxGuarded) continue;
    s.msgxGuarded = true;
    const write = s.write.bind(s) as (...a: unknown[]) => boolean;
    s.write = ((chunk: unknown, ...rest: unknown[]) => write(typeof chunk === 'string' ? scrub(chunk) : chunk, ...rest)) as typeof s.write;
  }
}

/**
 * The logins scripts/services made on this machine (.local/services.env, docs/decisions.md "Local
 * logins"), for what the environment does not set. Every CLI loads it first (cliArgs, scriptHelp);
 * `npm start`'s and `npm test`'s processes inherit it.
 */
export function loadLocalEnv(): void {
  const file = fileURLToPath(new URL('../.local/services.env', import.meta.url));
  if (existsSync(file)) process.loadEnvFile(file);
}

export interface CliSpec {
  /** The npm script's name (the prefix of every line on stderr). */
  name: string;
  /** Usage text (printed by --help on stdout, after a bad argument on stderr). */
  usage: string;
  /** Options taking a value. */
  valued?: readonly string[];
  /** Options without a value. */
  flags?: readonly string[];
  /** What positional arguments are: ids (non-negative integers), words (anything), none. */
  positional?: 'ids' | 'words' | 'none';
}

export interface ParsedArgs {
  ids: number[];
  words: string[];
  options: Record<string, string>;
  flags: Set<string>;
}

/** A bad argument: the CLI frame prints it with the usage and exits 2. */
export class UsageError extends Error {}

const known = (spec: CliSpec) => [...(spec.valued ?? []), ...(spec.flags ?? [])];
const knownText = (spec: CliSpec) => (known(spec).length ? `it knows ${known(spec).join(', ')} and --help` : 'it knows --help');

export const wantsHelp = (argv: readonly string[]) => argv.includes('--help') || argv.includes('-h');

/** Parses argv (help is handled by cliArgs); throws UsageError naming the argument and the known flags. */
export function parseArgs(spec: CliSpec, argv: readonly string[]): ParsedArgs {
  const out: ParsedArgs = { ids: [], words: [], options: {}, flags: new Set() };
  const positional = spec.positional ?? 'ids';
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (spec.valued?.includes(a)) {
      const v = argv[i + 1];
      if (v === undefined || v.startsWith('--')) throw new UsageError(`${a} needs a value`);
      out.options[a] = v;
      i++;
    } else if (spec.flags?.includes(a)) out.flags.add(a);
    else if (a.startsWith('-')) throw new UsageError(`unknown option ${a} (${knownText(spec)})`);
    else if (positional === 'ids' && /^\d+$/.test(a)) out.ids.push(Number(a));
    else if (positional === 'words') out.words.push(a);
    else throw new UsageError(positional === 'ids' ? `${a} is not an id (a whole number)` : `unexpected argument ${a}`);
  }
  return out;
}

/**
 * The arguments of this process: on --help the usage on stdout and exit 0; on a bad argument
 * the reason and the usage on stderr and exit 2. Call before opening any connection.
 */
export function cliArgs(spec: CliSpec, argv: readonly string[] = process.argv.slice(2)): ParsedArgs {
  loadLocalEnv();
  guardOutput();
  lastResort(spec.name);
  if (wantsHelp(argv)) {
    process.stdout.write(`${spec.usage.trimEnd()}\n`);
    process.exit(0);
  }
  try {
    return parseArgs(spec, argv);
  } catch (e) {
    usageExit(spec, (e as Error).message);
  }
}

/** The first line of a message (a configuration's list of problems joined with "; "). */
export const oneLine = (text: string) =>
  text
    .replace(/:\n\s+- /, ': ')
    .replace(/\n\s+- /g, '; ')
    .split('\n')[0];

/** `name: line` on stderr, then exit with `code`. */
export function failExit(name: string, line: string, code: 1 | 2): never {
  process.stderr.write(`${name}: ${oneLine(line)}\n`);
  process.exit(code);
}

/**
 * Whatever a CLI did not catch ends as one line `name: <message>` and exit 1, never a stack trace
 * or a driver's error object (installed once, by cliArgs).
 */
function lastResort(name: string): void {
  if (process.listenerCount('uncaughtException') > 0) return;
  const end = (e: unknown) => failExit(name, failureLine(e), 1);
  process.on('uncaughtException', end);
  process.on('unhandledRejection', end);
}

/** The configuration of a CLI; a bad setting is one line naming it, exit 2. */
export async function cliConfig(name: string): Promise<Config> {
  const { loadConfig } = await import('../lib/core/config.ts');
  try {
    return loadConfig();
  } catch (e) {
    return failExit(name, (e as Error).message, 2);
  }
}

const URL_SETTING: Record<ServiceName, string> = { postgres: 'DATABASE_URL', mariadb: 'INBOX_URL', redis: 'REDIS_URL', kafka: 'KAFKA_BROKERS' };
const NO_PEER = /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ECONNRESET|ETIMEDOUT|EPIPE)$/;

/**
 * A failure as one line: a connection refused for its settings names the service, what was wrong
 * and the setting to check (lib/db/tls.ts); one nobody answered names the service and its URL
 * setting; anything else is its message's first line. No secret (scrub), no stack, no object.
 */
export function failureLine(e: unknown, service?: ServiceName): string {
  const err = (e ?? {}) as { name?: string; message?: unknown; code?: unknown; errors?: unknown[]; service?: ServiceName };
  if (err.name === 'ConnectionSetupError') return scrub(String(err.message));
  const inner = (err.errors?.[0] ?? {}) as { message?: unknown };
  const message = String(err.message || inner.message || err.code || e);
  if (!service) return scrub(oneLine(message));
  const code = typeof err.code === 'string' ? err.code : '';
  if (NO_PEER.test(code) || /did not answer within|timed out after|Connection is closed|\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ETIMEDOUT)\b/i.test(message))
    return scrub(oneLine(`${service}: no connection (${message}): check ${URL_SETTING[service]} and that the server runs`));
  return scrub(oneLine(`${service}: ${message}`));
}

/**
 * Before its action, one round trip to each service the CLI uses (lib/runtime/probe.ts, bounded
 * by msgx.io.timeout): a refused or unanswered connection is one line naming the service and the
 * setting to check, exit 1.
 */
export async function reach(name: string, config: Config, services: readonly ServiceName[]): Promise<void> {
  const [{ probes }, { targets }, { explained }] = await Promise.all([import('../lib/runtime/probe.ts'), import('../lib/core/config.ts'), import('../lib/db/tls.ts')]);
  const t = targets(config);
  const ms = config['msgx.io.timeout'];
  const check = { postgres: () => probes.postgres(t.postgres, ms), mariadb: () => probes.mysql(t.mariadb, ms), redis: () => probes.redis(t.redis, ms), kafka: () => probes.kafka(t.kafka, ms) };
  for (const service of services) {
    try {
      await check[service]()();
    } catch (e) {
      failExit(name, failureLine(explained(service, e), service), 1);
    }
  }
}

/** Prints `name: reason` and the usage on stderr, exit 2. */
export function usageExit(spec: CliSpec, reason: string): never {
  process.stderr.write(`${spec.name}: ${reason}\n${spec.usage.trimEnd()}\n`);
  process.exit(2);
}

/** What an action answers: its result line, lines explaining what it left untouched (stderr), success. */
export interface CliOutcome {
  out: string;
  notes?: string[];
  /** Warnings printed on stderr whatever the outcome (e.g. a forced action's consequence). */
  warnings?: string[];
  ok?: boolean;
}

/**
 * The frame of every operator CLI: arguments first (--help and bad arguments never open a
 * connection), then config (a bad setting: exit 2) and a round trip to each service it needs (a
 * refusal: exit 1, reach), one Postgres connection, the action, one line of result (plus, on
 * stderr, why matched things were left), exit code 1 when the action did not do what was asked
 * (nothing done, or a named id left) or lost its connection, 2 on any other error.
 */
export async function runOperatorCli(
  spec: CliSpec,
  action: (db: import('../lib/db/postgres.ts').Db, args: ParsedArgs, config: import('../lib/core/config.ts').Config) => Promise<string | CliOutcome>,
  needs: (args: ParsedArgs) => readonly ServiceName[] = () => ['postgres'],
): Promise<void> {
  const args = cliArgs(spec);
  const config = await cliConfig(spec.name);
  await reach(spec.name, config, needs(args));
  const [{ targets }, { createDb, createPool }, { explainConnectionError }] = await Promise.all([import('../lib/core/config.ts'), import('../lib/db/postgres.ts'), import('../lib/db/tls.ts')]);
  const pool = createPool(targets(config).postgres, { max: 1 });
  try {
    const r = await action(createDb(pool), args, config);
    const o: CliOutcome = typeof r === 'string' ? { out: r } : r;
    console.log(o.out);
    for (const w of o.warnings ?? []) console.error(`${spec.name}: WARNING: ${w}`);
    for (const n of o.notes ?? []) console.error(`${spec.name}: ${n}`);
    if (o.ok === false) process.exitCode = 1;
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`${spec.name}: ${e.message}\n${spec.usage.trimEnd()}`);
      process.exitCode = 2;
    } else {
      const service = /^(ER_|HANDSHAKE|PROTOCOL_)/.test(String((e as { code?: unknown }).code)) ? 'mariadb' : 'postgres';
      const lost = explainConnectionError(service, e) !== null || NO_PEER.test(String((e as { code?: unknown }).code));
      console.error(`${spec.name}: ${failureLine(explainConnectionError(service, e) ?? e, lost ? service : undefined)}`);
      process.exitCode = lost ? 1 : 2;
    }
  } finally {
    await pool.end();
  }
}

/** "replayed 2 event(s): 14 15" */
export const listed = (verb: string, what: string, ids: number[]) => `${verb} ${ids.length} ${what}${ids.length ? ': ' + ids.join(' ') : ''}`;

/** The spec of dispatch-replay / dispatch-skip: `<eventId…> | --flid FLID | --all [--target msg|schd|state]`. */
export const dispatchSpec = (name: string, what: string): CliSpec => ({
  name,
  valued: ['--flid', '--target'],
  flags: ['--all'],
  usage: `usage: npm run ${name} -- <eventId…> | --flid FLID | --all [--target msg|schd|state]
  ${what}
  <eventId…>        these DEAD outbox events
  --flid FLID       every DEAD event of this flight
  --all             every DEAD event (after an outage longer than the backoff ladder)
  --target msg|schd|state  only the events of this topic family
Prints "<verb> N event(s): ids"; on stderr why a named or matched event was left (not DEAD,
held behind another event, no such event). Exit 0 when every asked-for event was done,
1 when nothing was done or a named event was left, 2 on bad arguments.`,
});

/** The selection of dispatch-replay / dispatch-skip, checked with the flags' names. */
export function dispatchSelection(a: ParsedArgs) {
  const given = [a.ids.length > 0, a.options['--flid'] !== undefined, a.flags.has('--all')].filter(Boolean).length;
  if (given !== 1) throw new UsageError('give exactly one of: <eventId…>, --flid FLID, --all');
  const target = a.options['--target'];
  if (target !== undefined && target !== 'msg' && target !== 'schd' && target !== 'state') throw new UsageError(`--target must be msg, schd or state, not ${target}`);
  return {
    eventIds: a.ids.length ? a.ids : undefined,
    flid: a.options['--flid'],
    all: a.flags.has('--all') || undefined,
    target: target as 'msg' | 'schd' | 'state' | undefined,
  };
}

/**
 * --help for the scripts whose usage is their header comment (benchmarks, reliability runs): the
 * header's `npm run …` / `node scripts/…` line is the usage, the rest the description. Exits 0
 * on --help; exits 2 on an option, since these take positional values only.
 */
export function scriptHelp(metaUrl: string, argv: readonly string[] = process.argv.slice(2)): void {
  loadLocalEnv();
  guardOutput();
  const asked = wantsHelp(argv);
  const option = argv.find((a) => a.startsWith('-') && !/^-\d/.test(a));
  if (!asked && !option) return;
  const header: string[] = [];
  for (const line of readFileSync(new URL(metaUrl), 'utf8').split('\n')) {
    if (!line.startsWith('//')) break;
    header.push(line.replace(/^\/\/ ?/, ''));
  }
  const at = header.findIndex((l) => /^\s*(npm run |node scripts\/)/.test(l));
  const usage = `usage: ${at >= 0 ? header[at].trim() : 'see the script'}\n${header.filter((_, i) => i !== at).join('\n')}`;
  const name = /scripts\/(.+)\.ts$/.exec(new URL(metaUrl).pathname)?.[1] ?? 'script';
  if (asked) {
    process.stdout.write(`${usage.trimEnd()}\n`);
    process.exit(0);
  }
  usageExit({ name, usage }, `unknown option ${option} (it takes positional values only, and --help)`);
}
