// Configuration: every setting of the README's configuration table plus connection settings,
// read from the environment once, validated, typed. Nothing else reads process.env.
import { readFileSync } from 'node:fs';
import * as v from 'valibot';
import { resolveKafka, resolveMysql, resolvePostgres, resolveRedis, type KafkaTarget, type MysqlTarget, type PgTarget, type RedisTarget } from './connections.ts';
import { splitPgHosts } from './pg-url.ts';
import { redactUrl, registerSecret } from './secrets.ts';

export { redactUrl };

export class ConfigError extends Error {}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "200ms", "2s", "10m", "24h", "30d" → milliseconds. */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(text);
  if (!m) throw new Error(`"${text}" is not a duration (e.g. 200ms, 5s, 2m, 24h, 30d)`);
  return Math.round(Number(m[1]) * UNITS[m[2]]);
}

const duration = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    try {
      return parseDuration(dataset.value);
    } catch (e) {
      addIssue({ message: (e as Error).message });
      return NEVER;
    }
  }),
);
/** A duration within [min, max] ms; a refusal names the range as `range` words it. */
const durationIn = (min: number, max: number, range: string) =>
  v.pipe(
    duration,
    v.check((ms) => ms >= min && ms <= max, `expected a duration from ${range}`),
  );
const durationList = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const s = dataset.value;
    try {
      const list = s.split(',').map((p) => parseDuration(p));
      if (list.length === 0) throw new Error('empty list');
      return list;
    } catch (e) {
      addIssue({ message: `"${s}" is not a comma-separated list of durations: ${(e as Error).message}` });
      return NEVER;
    }
  }),
);
/**
 * A whole number read as Number() reads it (what zod's coerce did, so the same values pass):
 * ' 5 ', '0x10', '1e3' are numbers; '' and blanks are 0; NaN, ±Infinity, fractions and integers
 * beyond 2^53 are refused.
 */
const wholeNumber = (min: number, max = Number.MAX_SAFE_INTEGER, range = `>= ${min}`) =>
  v.pipe(
    v.string(),
    v.transform(Number),
    v.check((n) => Number.isSafeInteger(n) && n >= min && n <= max, `expected a whole number ${range}`),
  );
const posInt = wholeNumber(1, undefined, '> 0');
/** One of the given strings (the message lists them; never the value, which the caller shows redacted). */
const oneOf = <const T extends readonly string[]>(options: T) => v.picklist(options, `expected one of ${options.map((o) => JSON.stringify(o)).join(' | ')}`);
const bool = v.pipe(
  oneOf(['true', 'false', '1', '0']),
  v.transform((s) => s === 'true' || s === '1'),
);
/** Not empty, and at most max characters counted as code points (as zod counted them; valibot's maxLength counts UTF-16 units). */
const nonEmpty = (max = Number.MAX_SAFE_INTEGER) =>
  v.pipe(
    v.string(),
    v.nonEmpty('expected a non-empty value'),
    v.check((s) => s.length <= max || [...s].length <= max, `expected at most ${max} characters`),
  );
const matching = (re: RegExp, message: string) => v.pipe(v.string(), v.regex(re, message));
const localTime = matching(/^([01]\d|2[0-3]):[0-5]\d$/, 'expected HH:MM (24 h)');
const port = wholeNumber(0, 65535, 'from 0 to 65535');
/** As zod's url(): surrounding blanks trimmed, any URL the WHATWG parser takes, tabs and newlines dropped. */
const url = v.pipe(
  v.string(),
  v.trim(),
  v.check((s) => URL.canParse(s), 'expected a URL'),
  v.transform((s) => s.replace(/[\t\n\r]/g, '')),
);
/** '' → false (the TCP peer is the client); else the proxies' addresses / CIDRs (or loopback, uniquelocal), comma separated. */
const trustProxy = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }): false | string => {
    const t = dataset.value.trim();
    if (t === '' || t === 'false') return false;
    if (t === 'true') {
      addIssue({ message: 'true would believe X-Forwarded-For from anyone: give the proxy address(es), e.g. 127.0.0.1' });
      return NEVER;
    }
    if (!/^[0-9A-Za-z.:/,\s]+$/.test(t)) {
      addIssue({ message: 'expected addresses or CIDRs, comma separated (e.g. 127.0.0.1,10.0.0.0/8)' });
      return NEVER;
    }
    return t;
  }),
);

/**
 * A zone ICU knows. Its list of canonical IANA names is looked up first: building an
 * Intl.DateTimeFormat loads ICU's locale and zone data, ~7 MB resident in every process, and most
 * duties never convert a time (docs/decisions.md "Footprint"). A name outside the list (an alias
 * such as UTC or Etc/GMT+8) is still checked the old way, so the same names are accepted.
 */
function knownTimeZone(tz: string): boolean {
  if (Intl.supportedValuesOf('timeZone').includes(tz)) return true;
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const tlsMode = oneOf(['', 'disable', 'verify-ca', 'verify-full']);
/** A comma-separated list ('' = none), blanks trimmed, each item matching `item`. */
const listOf = (item: RegExp, what: string) =>
  v.pipe(
    v.string(),
    v.transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    ),
    v.check((xs) => xs.every((x) => item.test(x)), `expected ${what}, comma separated`),
  );
export const PLAINTEXT_SERVICES = ['postgres', 'mariadb', 'redis', 'kafka'] as const;
const httpsOrLoopback = v.pipe(
  v.string(),
  v.trim(),
  v.check(
    (s) => s === '' || (URL.canParse(s) && (new URL(s).protocol === 'https:' || LOOPBACK.has(new URL(s).hostname.replace(/^\[|\]$/g, '')))),
    'expected an https:// URL (http:// only on loopback)',
  ),
);
const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1']);

/** Spec key → [schema, default]. The environment name is MSGX_ + key without "msgx.", dots/dashes → _, upper case. */
const PARAMS = {
  'msgx.pipeline.claim-batch': [posInt, '500'],
  'msgx.pipeline.apply-batch': [posInt, '500'],
  'msgx.pipeline.message-budget': [duration, '10s'],
  'msgx.pipeline.idle-poll': [duration, '200ms'],
  'msgx.intake.gap-settle': [duration, '2s'],
  'msgx.intake.full-scan-every': [duration, '10m'],
  'msgx.pipeline.max-attempts': [posInt, '5'],
  'msgx.pipeline.backoff': [durationList, '1s,5s,30s,2m'],
  'msgx.pipeline.infra-alert-after': [duration, '2m'],
  'msgx.pipeline.backfill-batch': [posInt, '500'],
  'msgx.pipeline.backfill-backoff': [durationList, '5s,30s,2m,10m,30m'],
  'msgx.pipeline.backfill-max-attempts': [posInt, '10'],
  'msgx.pipeline.overdue-backfill': [duration, '24h'],
  'msgx.pipeline.inbox-retention': [duration, '30d'],
  'msgx.pipeline.event-retention': [duration, '7d'],
  'msgx.identity.include-day-boundary': [bool, 'true'],
  'msgx.msg.batch': [posInt, '1000'],
  'msgx.schd.flush-limit': [posInt, '200'],
  'msgx.dispatch.max-attempts': [posInt, '10'],
  'msgx.dispatch.backoff': [durationList, '1s,5s,30s,2m,10m'],
  // a longer gap would leave a lost state topic unhealed that long after the re-seed before it
  'msgx.dispatch.reseed-gap': [durationIn(1000, 600_000, '1s to 10m'), '30s'],
  'msgx.io.timeout': [duration, '5s'],
  'msgx.mirror.check-every': [duration, '20s'],
  'msgx.airport.timezone': [v.pipe(v.string(), v.check(knownTimeZone, 'not an IANA time zone')), 'Asia/Shanghai'],
  'msgx.airport.day-cutover': [localTime, '00:00'],
  'msgx.history.purge-after': [duration, '7d'],
  'msgx.history.retention': [duration, '365d'],
  'msgx.proc-state.retention': [duration, '30d'],
  'msgx.snap-log.retention': [duration, '30d'],
  'msgx.req-track.retention': [duration, '30d'],
  'msgx.inbox.read-only': [bool, 'false'],
  'msgx.inbox.max-message-bytes': [posInt, '16000000'],
  // A read-only (shadow) installation starts after this inbox ID (0: at the oldest retained row).
  'msgx.inbox.start-after': [wholeNumber(0), '0'],
  'msgx.kafka.client-id': [nonEmpty(), 'msgexchange'],
  'msgx.kafka.msg-topic': [nonEmpty(), 'msgx.flight.msg'],
  'msgx.kafka.schd-topic': [nonEmpty(), 'msgx.flight.schd'],
  'msgx.kafka.state-topic': [nonEmpty(), 'msgx.flight.state'],
  'msgx.kafka.partitions': [posInt, '6'],
  'msgx.schd.max-record-bytes': [posInt, '900000'],
  'msgx.requests.sender': [nonEmpty(4), 'MSGX'],
  'msgx.requests.routing-id-rqrd': [nonEmpty(23), 'MSGXRQRD'],
  'msgx.requests.routing-id-rqfd': [nonEmpty(23), 'MSGXRQFD'],
  'msgx.requests.daily-schedule-at': [v.union([v.literal(''), localTime]), '20:00'],
  'msgx.requests.reconcile-window': [duration, '10m'],
  'msgx.retention.schedule': [nonEmpty(), 'hourly'],
  'msgx.http.port.api': [port, '8080'],
  'msgx.http.port.intake': [port, '9401'],
  'msgx.http.port.pump': [port, '9402'],
  'msgx.http.port.backfill': [port, '9403'],
  'msgx.http.port.msg-dispatch': [port, '9404'],
  'msgx.http.port.schd-dispatch': [port, '9405'],
  'msgx.http.port.retention': [port, '9406'],
  'msgx.http.port.state-dispatch': [port, '9407'],
  'msgx.http.host': [nonEmpty(), '127.0.0.1'],
  // Where the api takes a client's address (rate limit of failed authentications, audit lines):
  // '' = the TCP peer; behind the TLS reverse proxy, the proxy's address(es) or CIDR(s), comma
  // separated (e.g. 127.0.0.1), so that X-Forwarded-For is believed from that hop only.
  'msgx.http.trust-proxy': [trustProxy, ''],
  // Host / Origin names the HTTP servers answer besides the loopback names (DNS rebinding).
  'msgx.http.allowed-hosts': [listOf(/^[A-Za-z0-9.:_-]+$/, 'host names'), ''],
  // Read routes (as the route table names them, lib/access/routes.ts) an anonymous caller may read; /healthz: its reasons.
  'msgx.http.anonymous-reads': [listOf(/^\/[A-Za-z0-9/:._-]*$/, 'route paths'), ''],
  // Service accounts: `<name> <role> <sha256 hex>` per line (lib/access/keys.ts), read again when it changes.
  'msgx.api-keys-file': [v.string(), ''],
  // The identity provider (OpenID Connect) whose bearer JWTs the HTTP servers accept (lib/access/oidc.ts).
  'msgx.oidc.issuer': [httpsOrLoopback, ''],
  'msgx.oidc.audience': [v.string(), ''],
  'msgx.oidc.client-id': [v.string(), ''],
  'msgx.oidc.scopes': [v.string(), 'openid profile email'],
  'msgx.oidc.resource': [v.string(), ''],
  'msgx.oidc.role-claim': [nonEmpty(200), 'roles'],
  'msgx.oidc.role-map': [v.string(), ''],
  'msgx.oidc.clock-skew': [durationIn(0, 300_000, '0s to 5m'), '30s'],
  'msgx.audit.retention': [duration, '365d'],
  // Services reached in plain text on purpose (outside development mode, off loopback): postgres, mariadb, redis, kafka.
  'msgx.allow-plaintext': [listOf(/^(postgres|mariadb|redis|kafka)$/, `services (${PLAINTEXT_SERVICES.join(', ')})`), ''],
  'msgx.http.max-connections': [posInt, '256'],
  'msgx.http.request-timeout': [duration, '30s'],
  'msgx.http.headers-timeout': [duration, '10s'],
  'msgx.http.keep-alive-timeout': [duration, '5s'],
  // Tracing (docs/operations.md "Tracing"): off, nothing of OpenTelemetry is loaded; the SDK reads
  // its other OTEL_* variables (endpoint, headers, service name, resource) itself.
  'msgx.tracing': [
    v.pipe(
      oneOf(['on', 'off']),
      v.transform((s) => s === 'on'),
    ),
    'off',
  ],
  // The console's link to a trace: {traceId} replaced (e.g. http://zipkin:9411/zipkin/traces/{traceId}); '' = no link.
  'msgx.tracing.link': [matching(/^$|^https?:\/\/\S*\{traceId\}/, 'expected an http(s) URL template holding {traceId}'), ''],
  'msgx.log.level': [oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']), 'info'],
  'msgx.dev-mode': [bool, 'false'],
  // Test only: one flight rule changed at start (lib/flight/override.ts), e.g. 'ignore REMC in FLOP/REMC'.
  'msgx.test.rule-override': [v.string(), ''],
  'msgx.test.crash-at': [matching(/^$|^[a-z.-]+(:\d+)?$/, 'expected <point>[:<n>]'), ''],
} as const satisfies Record<string, readonly [v.GenericSchema<string, unknown>, string]>;

/** Connection settings (plain environment names, not msgx.* keys: README "Configuration"). */
const CONNECTIONS = {
  // One host, or libpq's host list (h1:5432,h2:5432) with target_session_attrs=read-write: lib/core/pg-url.ts
  DATABASE_URL: [matching(/^postgres(ql)?:\/\/\S+$/, 'expected postgres://…'), 'postgres://postgres@127.0.0.1:5432/msgx'],
  INBOX_URL: [url, 'mysql://root@127.0.0.1:3306/aodbinterface'],
  REDIS_URL: [url, 'redis://127.0.0.1:6379/0'],
  KAFKA_BROKERS: [nonEmpty(), '127.0.0.1:9092'],
  MSGX_API_TOKEN: [v.string(), ''],
  // Secured connections (docs/operations.md "Production settings"). '' = not set: plain text,
  // credentials from the URL, exactly the local default. Every password can also be given as a
  // file: <NAME>_FILE (FILE_SECRETS below).
  DATABASE_PASSWORD: [v.string(), ''],
  DATABASE_TLS_MODE: [tlsMode, ''],
  DATABASE_TLS_CA: [v.string(), ''],
  DATABASE_TLS_CERT: [v.string(), ''],
  DATABASE_TLS_KEY: [v.string(), ''],
  INBOX_PASSWORD: [v.string(), ''],
  INBOX_TLS_MODE: [tlsMode, ''],
  INBOX_TLS_CA: [v.string(), ''],
  INBOX_TLS_CERT: [v.string(), ''],
  INBOX_TLS_KEY: [v.string(), ''],
  // Redis behind Sentinel (docs/operations.md "Production topology"): host:port of each Sentinel,
  // comma separated, and the master's name; '' = REDIS_URL's host is the server. REDIS_URL still
  // gives the database number, the credentials and rediss://.
  REDIS_SENTINELS: [v.string(), ''],
  REDIS_SENTINEL_MASTER: [v.string(), 'mymaster'],
  // The Sentinels' own login (their requirepass / ACL user); TLS to them follows REDIS_URL (rediss://).
  REDIS_SENTINEL_USERNAME: [v.string(), ''],
  REDIS_SENTINEL_PASSWORD: [v.string(), ''],
  REDIS_USERNAME: [v.string(), ''],
  REDIS_PASSWORD: [v.string(), ''],
  REDIS_TLS_MODE: [tlsMode, ''],
  REDIS_TLS_CA: [v.string(), ''],
  REDIS_TLS_CERT: [v.string(), ''],
  REDIS_TLS_KEY: [v.string(), ''],
  KAFKA_SECURITY_PROTOCOL: [oneOf(['', 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']), ''],
  KAFKA_SASL_MECHANISM: [oneOf(['', 'scram-sha-512', 'scram-sha-256', 'plain']), ''],
  KAFKA_SASL_USERNAME: [v.string(), ''],
  KAFKA_SASL_PASSWORD: [v.string(), ''],
  KAFKA_TLS_MODE: [tlsMode, ''],
  KAFKA_TLS_CA: [v.string(), ''],
  KAFKA_TLS_CERT: [v.string(), ''],
  KAFKA_TLS_KEY: [v.string(), ''],
  // OpenTelemetry's standard variables that the gateway reads itself (the SDK of this version leaves them to its caller)
  OTEL_TRACES_EXPORTER: [oneOf(['otlp', 'zipkin', 'console', 'none']), 'otlp'],
  OTEL_TRACES_SAMPLER: [oneOf(['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio']), 'parentbased_always_on'],
  OTEL_TRACES_SAMPLER_ARG: [
    v.pipe(
      v.string(),
      v.transform(Number),
      v.check((n) => n >= 0 && n <= 1, 'expected a ratio from 0 to 1'),
    ),
    '1',
  ],
} as const satisfies Record<string, readonly [v.GenericSchema<string, unknown>, string]>;

type ParamKey = keyof typeof PARAMS;
type ConnKey = keyof typeof CONNECTIONS;
export type Config = { [K in ParamKey]: v.InferOutput<(typeof PARAMS)[K][0]> } & {
  [K in ConnKey]: v.InferOutput<(typeof CONNECTIONS)[K][0]>;
};

export function envName(key: string): string {
  return (
    'MSGX_' +
    key
      .replace(/^msgx\./, '')
      .replace(/[.-]/g, '_')
      .toUpperCase()
  );
}

/** Parse and validate once. Throws ConfigError naming every bad key and why. */
export function loadConfig(given: Record<string, string | undefined> = process.env): Config {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  const env = withSecretFiles(given, problems);
  const take = (key: string, name: string, schema: v.GenericSchema<string, unknown>, dflt: string) => {
    const raw = env[name] ?? dflt;
    const r = v.safeParse(schema, raw);
    if (r.success) out[key] = r.output;
    else problems.push(`${key} (${name}=${JSON.stringify(secret(name, raw))}): ${r.issues.map((i) => i.message).join('; ')}`);
  };
  for (const [key, [schema, dflt]] of Object.entries(PARAMS)) take(key, envName(key), schema, dflt);
  for (const [key, [schema, dflt]] of Object.entries(CONNECTIONS)) take(key, key, schema, dflt);
  if (problems.length === 0) problems.push(...selfCheck(out as Config));
  if (problems.length) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
  const config = Object.freeze(out) as Config;
  registerSecrets(config);
  return config;
}

/**
 * Settings that may be given as a file instead (the Docker / Kubernetes secrets convention):
 * NAME_FILE = a path whose content (one trailing newline dropped) is the value. Both set: refused.
 */
export const FILE_SECRETS = [
  'DATABASE_URL',
  'DATABASE_PASSWORD',
  'INBOX_URL',
  'INBOX_PASSWORD',
  'REDIS_URL',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
  'KAFKA_SASL_PASSWORD',
  'MSGX_API_TOKEN',
] as const;

/** The environment with each NAME_FILE read into NAME (problems: unreadable file, both given). */
function withSecretFiles(env: Record<string, string | undefined>, problems: string[]): Record<string, string | undefined> {
  const out = { ...env };
  for (const name of FILE_SECRETS) {
    const path = env[`${name}_FILE`];
    if (!path) continue;
    if (env[name]) {
      problems.push(`${name} and ${name}_FILE are both set: give one`);
      continue;
    }
    try {
      out[name] = readFileSync(path, 'utf8').replace(/\r?\n$/, '');
    } catch (e) {
      problems.push(`${name}_FILE=${path}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }
  return out;
}

/** Every secret value of the configuration, so that no log line or output shows it (lib/core/secrets.ts). */
function registerSecrets(c: Config): void {
  for (const name of ['MSGX_API_TOKEN', 'DATABASE_PASSWORD', 'INBOX_PASSWORD', 'REDIS_PASSWORD', 'REDIS_SENTINEL_PASSWORD', 'KAFKA_SASL_PASSWORD'] as const) registerSecret(c[name]);
  for (const name of ['DATABASE_URL', 'INBOX_URL', 'REDIS_URL'] as const) {
    try {
      const u = new URL(name === 'DATABASE_URL' ? splitPgHosts(c[name]).url : c[name]);
      registerSecret(decodeURIComponent(u.password));
      for (const [k, v] of u.searchParams) if (/^(ssl)?(password|passwd|pass|pwd)$/i.test(k)) registerSecret(v);
    } catch {
      // validated as a URL already
    }
  }
}

/** Where and how each service is reached (lib/core/connections.ts), resolved once per Config. */
export interface Targets {
  postgres: PgTarget;
  mariadb: MysqlTarget;
  redis: RedisTarget;
  kafka: KafkaTarget;
}

const resolvedTargets = new WeakMap<Config, Targets>();

function resolveAll(c: Config): { targets: Targets; problems: string[] } {
  const tls = (p: 'DATABASE' | 'INBOX' | 'REDIS' | 'KAFKA') => ({ mode: c[`${p}_TLS_MODE`], ca: c[`${p}_TLS_CA`], cert: c[`${p}_TLS_CERT`], key: c[`${p}_TLS_KEY`] });
  const pg = resolvePostgres(c.DATABASE_URL, { password: c.DATABASE_PASSWORD || undefined, tls: tls('DATABASE') });
  const my = resolveMysql(c.INBOX_URL, { password: c.INBOX_PASSWORD || undefined, tls: tls('INBOX') });
  const r = slices(c).redis;
  const rd = resolveRedis(c.REDIS_URL, {
    username: c.REDIS_USERNAME || undefined,
    password: c.REDIS_PASSWORD || undefined,
    tls: tls('REDIS'),
    sentinels: r.sentinels,
    master: r.sentinelMaster,
    sentinelUsername: r.sentinelUsername || undefined,
    sentinelPassword: r.sentinelPassword || undefined,
  });
  const kf = resolveKafka(c.KAFKA_BROKERS, kafkaSecuritySettings(slices(c).kafka));
  return { targets: { postgres: pg.target, mariadb: my.target, redis: rd.target, kafka: kf.target }, problems: [...pg.problems, ...my.problems, ...rd.problems, ...kf.problems] };
}

/** The Kafka security settings of the kafka slice, as lib/core/connections.ts resolveKafka takes them. */
export function kafkaSecuritySettings(k: Slices['kafka']) {
  return {
    protocol: k.securityProtocol,
    mechanism: k.saslMechanism,
    username: k.saslUsername || undefined,
    password: k.saslPassword || undefined,
    tls: { mode: k.tlsMode, ca: k.tlsCa, cert: k.tlsCert, key: k.tlsKey },
  };
}

/**
 * Another database reached with this configuration's Postgres settings (npm run compare's --other,
 * npm run dry-run's --database): the DATABASE_TLS_* settings (unless the URL says its own
 * sslmode), and DATABASE_PASSWORD / _FILE unless the URL carries a password. Throws ConfigError
 * naming `name` on a contradiction, and on plain text off loopback as the configuration would.
 */
export function peerDatabase(c: Config, url: string, name: string): PgTarget {
  const tls = { mode: c.DATABASE_TLS_MODE, ca: c.DATABASE_TLS_CA, cert: c.DATABASE_TLS_CERT, key: c.DATABASE_TLS_KEY };
  let ownPassword = false;
  let ownMode = false;
  try {
    const u = new URL(splitPgHosts(url, name).url);
    ownPassword = u.password !== '';
    ownMode = u.searchParams.has('sslmode');
  } catch {
    // resolvePostgres names the problem
  }
  const r = resolvePostgres(url, { password: ownPassword ? undefined : c.DATABASE_PASSWORD || undefined, tls: ownMode ? {} : tls }, name);
  const problems = [...r.problems];
  if (!c['msgx.dev-mode'] && problems.length === 0)
    problems.push(
      ...plaintextProblems({ ...targets(c), postgres: r.target }, new Set(c['msgx.allow-plaintext']))
        .filter((p) => p.startsWith('postgres:'))
        .map((p) => p.replace('DATABASE_URL', name)),
    );
  if (problems.length) throw new ConfigError(`invalid ${name}:\n  - ${problems.join('\n  - ')}`);
  return r.target;
}

/** The connection targets of a loaded configuration (checked at load: never a problem here). */
export function targets(config: Config): Targets {
  let t = resolvedTargets.get(config);
  if (!t) {
    t = resolveAll(config).targets;
    resolvedTargets.set(config, t);
  }
  return t;
}

/**
 * The typed parts of the configuration, one per concern, declared once as
 * data: slice → field → key. A module receives the slice it uses (`slices(config).pump`),
 * never the whole Config; only the composition (workers/, lib/app/, lib/runtime/process.ts)
 * holds the whole object.
 */
const SLICES = {
  airport: { timezone: 'msgx.airport.timezone', dayCutover: 'msgx.airport.day-cutover' },
  io: { timeoutMs: 'msgx.io.timeout' },
  mirror: { checkEveryMs: 'msgx.mirror.check-every', timezone: 'msgx.airport.timezone', timeoutMs: 'msgx.io.timeout' },
  pump: {
    applyBatch: 'msgx.pipeline.apply-batch',
    messageBudgetMs: 'msgx.pipeline.message-budget',
    includeDayBoundary: 'msgx.identity.include-day-boundary',
    timeoutMs: 'msgx.io.timeout',
    ruleOverride: 'msgx.test.rule-override',
  },
  failures: { maxAttempts: 'msgx.pipeline.max-attempts', backoffMs: 'msgx.pipeline.backoff', infraAlertAfterMs: 'msgx.pipeline.infra-alert-after' },
  intake: {
    claimBatch: 'msgx.pipeline.claim-batch',
    idlePollMs: 'msgx.pipeline.idle-poll',
    gapSettleMs: 'msgx.intake.gap-settle',
    fullScanEveryMs: 'msgx.intake.full-scan-every',
    inboxRetentionMs: 'msgx.pipeline.inbox-retention',
    timeoutMs: 'msgx.io.timeout',
    readOnly: 'msgx.inbox.read-only',
    startAfter: 'msgx.inbox.start-after',
  },
  backfill: {
    batch: 'msgx.pipeline.backfill-batch',
    backoffMs: 'msgx.pipeline.backfill-backoff',
    maxAttempts: 'msgx.pipeline.backfill-max-attempts',
    overdueMs: 'msgx.pipeline.overdue-backfill',
    readOnly: 'msgx.inbox.read-only',
    timezone: 'msgx.airport.timezone',
    timeoutMs: 'msgx.io.timeout',
  },
  inbox: { readOnly: 'msgx.inbox.read-only', maxMessageBytes: 'msgx.inbox.max-message-bytes', timezone: 'msgx.airport.timezone', timeoutMs: 'msgx.io.timeout' },
  trace: { timezone: 'msgx.airport.timezone', msgTopic: 'msgx.kafka.msg-topic', schdTopic: 'msgx.kafka.schd-topic', timeoutMs: 'msgx.io.timeout', traceLink: 'msgx.tracing.link' },
  tracing: { on: 'msgx.tracing', exporter: 'OTEL_TRACES_EXPORTER', sampler: 'OTEL_TRACES_SAMPLER', samplerArg: 'OTEL_TRACES_SAMPLER_ARG', applyBatch: 'msgx.pipeline.apply-batch' },
  kafka: {
    brokers: 'KAFKA_BROKERS',
    clientId: 'msgx.kafka.client-id',
    msgTopic: 'msgx.kafka.msg-topic',
    schdTopic: 'msgx.kafka.schd-topic',
    stateTopic: 'msgx.kafka.state-topic',
    partitions: 'msgx.kafka.partitions',
    eventRetentionMs: 'msgx.pipeline.event-retention',
    timeoutMs: 'msgx.io.timeout',
    securityProtocol: 'KAFKA_SECURITY_PROTOCOL',
    saslMechanism: 'KAFKA_SASL_MECHANISM',
    saslUsername: 'KAFKA_SASL_USERNAME',
    saslPassword: 'KAFKA_SASL_PASSWORD',
    tlsMode: 'KAFKA_TLS_MODE',
    tlsCa: 'KAFKA_TLS_CA',
    tlsCert: 'KAFKA_TLS_CERT',
    tlsKey: 'KAFKA_TLS_KEY',
  },
  dispatch: {
    msgTopic: 'msgx.kafka.msg-topic',
    schdTopic: 'msgx.kafka.schd-topic',
    stateTopic: 'msgx.kafka.state-topic',
    timezone: 'msgx.airport.timezone',
    msgBatch: 'msgx.msg.batch',
    schdFlushLimit: 'msgx.schd.flush-limit',
    maxRecordBytes: 'msgx.schd.max-record-bytes',
    maxAttempts: 'msgx.dispatch.max-attempts',
    backoffMs: 'msgx.dispatch.backoff',
    reseedGapMs: 'msgx.dispatch.reseed-gap',
  },
  /** Who may do what over HTTP (lib/access/). */
  oidc: {
    issuer: 'msgx.oidc.issuer',
    audience: 'msgx.oidc.audience',
    clientId: 'msgx.oidc.client-id',
    scopes: 'msgx.oidc.scopes',
    resource: 'msgx.oidc.resource',
    roleClaim: 'msgx.oidc.role-claim',
    roleMap: 'msgx.oidc.role-map',
    clockSkewMs: 'msgx.oidc.clock-skew',
    timeoutMs: 'msgx.io.timeout',
  },
  retention: {
    schedule: 'msgx.retention.schedule',
    auditRetentionMs: 'msgx.audit.retention',
    historyPurgeAfterMs: 'msgx.history.purge-after',
    historyRetentionMs: 'msgx.history.retention',
    procStateRetentionMs: 'msgx.proc-state.retention',
    snapLogRetentionMs: 'msgx.snap-log.retention',
    reqTrackRetentionMs: 'msgx.req-track.retention',
    inboxRetentionMs: 'msgx.pipeline.inbox-retention',
    eventRetentionMs: 'msgx.pipeline.event-retention',
    readOnly: 'msgx.inbox.read-only',
    timeoutMs: 'msgx.io.timeout',
  },
  requests: {
    sender: 'msgx.requests.sender',
    routingIdRqrd: 'msgx.requests.routing-id-rqrd',
    routingIdRqfd: 'msgx.requests.routing-id-rqfd',
    dailyScheduleAt: 'msgx.requests.daily-schedule-at',
    reconcileWindowMs: 'msgx.requests.reconcile-window',
    timeoutMs: 'msgx.io.timeout',
    readOnly: 'msgx.inbox.read-only',
  },
  /** Where Redis is found when Sentinel watches it (lib/core/connections.ts resolveRedis). */
  redis: { sentinels: 'REDIS_SENTINELS', sentinelMaster: 'REDIS_SENTINEL_MASTER', sentinelUsername: 'REDIS_SENTINEL_USERNAME', sentinelPassword: 'REDIS_SENTINEL_PASSWORD' },
  http: {
    host: 'msgx.http.host',
    devMode: 'msgx.dev-mode',
    apiToken: 'MSGX_API_TOKEN',
    trustProxy: 'msgx.http.trust-proxy',
    allowedHosts: 'msgx.http.allowed-hosts',
    anonymousReads: 'msgx.http.anonymous-reads',
    apiKeysFile: 'msgx.api-keys-file',
    maxConnections: 'msgx.http.max-connections',
    requestTimeoutMs: 'msgx.http.request-timeout',
    headersTimeoutMs: 'msgx.http.headers-timeout',
    keepAliveTimeoutMs: 'msgx.http.keep-alive-timeout',
  },
} as const satisfies Record<string, Record<string, ParamKey | ConnKey>>;

type SliceSpec = typeof SLICES;
/** Every slice, typed: `Slices['pump']['applyBatch']` is the type of msgx.pipeline.apply-batch. */
export type Slices = { readonly [S in keyof SliceSpec]: { readonly [F in keyof SliceSpec[S]]: Config[SliceSpec[S][F] & keyof Config] } };
export type AirportConfig = Slices['airport'];

/** Every key some slice reads (the README's configuration table documents each). */
export function sliceKeys(): string[] {
  return [...new Set(Object.values(SLICES).flatMap((fields) => Object.values(fields) as string[]))].sort();
}

const built = new WeakMap<Config, Slices>();

/** The slices of a loaded configuration (built once per Config object, frozen). */
export function slices(config: Config): Slices {
  let s = built.get(config);
  if (!s) {
    const out: Record<string, Record<string, unknown>> = {};
    for (const [slice, fields] of Object.entries(SLICES)) {
      out[slice] = Object.freeze(Object.fromEntries(Object.entries(fields).map(([f, key]) => [f, config[key as keyof Config]])));
    }
    s = Object.freeze(out) as unknown as Slices;
    built.set(config, s);
  }
  return s;
}

/** Start-up self-checks: settings that contradict each other stop the process with the key named. */
function selfCheck(c: Config): string[] {
  const p: string[] = [];
  const max = c['msgx.pipeline.max-attempts'];
  const ladder = c['msgx.pipeline.backoff'];
  if (ladder.length !== max - 1) p.push(`msgx.pipeline.backoff has ${ladder.length} entries but msgx.pipeline.max-attempts=${max} needs exactly ${max - 1}`);
  if (c['msgx.pipeline.overdue-backfill'] > c['msgx.pipeline.inbox-retention']) p.push('msgx.pipeline.overdue-backfill (R) must not exceed msgx.pipeline.inbox-retention (R_keep)');
  // TLS / SASL settings against their URLs, files readable and what they should be
  const all = resolveAll(c);
  p.push(...all.problems);
  const dev = c['msgx.dev-mode'];
  if (dev && !LOOPBACK.has(c['msgx.http.host'])) p.push(`development mode (MSGX_DEV_MODE=true) only on a loopback address, not msgx.http.host=${c['msgx.http.host']}`);
  if (!dev && c.MSGX_API_TOKEN)
    p.push(
      'MSGX_API_TOKEN (the shared token) works only in development mode on loopback: give each system an API key (MSGX_API_KEYS_FILE) and people sign-in (MSGX_OIDC_ISSUER); docs/operations.md "Access and roles"',
    );
  if (c['msgx.oidc.issuer'] && !c['msgx.oidc.audience']) p.push('msgx.oidc.issuer is set: msgx.oidc.audience names this gateway in the tokens (their aud claim)');
  if (!dev) p.push(...plaintextProblems(all.targets, new Set(c['msgx.allow-plaintext'])));
  return p;
}

/**
 * Outside development mode a service reached in plain text off loopback is refused unless
 * msgx.allow-plaintext names it (the refusal names the setting): plain text on a network is a
 * decision, never a default (docs/operations.md "Production settings").
 */
function plaintextProblems(t: Targets, allowed: Set<string>): string[] {
  const off = (hosts: string[]) => hosts.filter((h) => !LOOPBACK.has(h.replace(/^\[|\]$/g, '').toLowerCase()));
  const hostOf = (url: string) => {
    try {
      return new URL(url).hostname;
    } catch {
      return '';
    }
  };
  const plain: [service: string, setting: string, hosts: string[], fix: string][] = [];
  if (!t.postgres.tls) plain.push(['postgres', 'DATABASE_URL', t.postgres.hosts?.map((h) => h.host) ?? [hostOf(t.postgres.url)], 'DATABASE_TLS_MODE=verify-full']);
  if (!t.mariadb.tls) plain.push(['mariadb', 'INBOX_URL', [hostOf(t.mariadb.url)], 'INBOX_TLS_MODE=verify-full']);
  if (!t.redis.tls) plain.push(['redis', t.redis.sentinel ? 'REDIS_SENTINELS' : 'REDIS_URL', t.redis.sentinel?.sentinels.map((x) => x.host) ?? [hostOf(t.redis.url)], 'rediss://']);
  if (!t.kafka.tls) plain.push(['kafka', 'KAFKA_BROKERS', t.kafka.brokers.map((b) => b.replace(/:\d+$/, '')), 'KAFKA_SECURITY_PROTOCOL=SASL_SSL']);
  return plain
    .filter(([service, , hosts]) => !allowed.has(service) && off(hosts).length > 0)
    .map(
      ([service, setting, hosts, fix]) =>
        `${service}: ${setting} reaches ${off(hosts).join(', ')} in plain text: use TLS (${fix}), or say plain text is intended with MSGX_ALLOW_PLAINTEXT=${service} (outside development mode plain text off loopback is refused)`,
    );
}

/** Every configuration key with its environment name and default (README table, --help). */
export function describeConfig(): { key: string; env: string; default: string }[] {
  return [
    ...Object.entries(PARAMS).map(([key, [, d]]) => ({ key, env: envName(key), default: d })),
    ...Object.entries(CONNECTIONS).map(([key, [, d]]) => ({ key, env: key, default: d })),
    ...FILE_SECRETS.map((name) => ({ key: `${name}_FILE`, env: `${name}_FILE`, default: '' })),
  ];
}

/** A raw setting as an error message may show it: URLs redacted, the API token and passwords never. */
const secret = (name: string, raw: string) => (name === 'MSGX_API_TOKEN' || /_PASSWORD$/.test(name) ? '***' : /_URL$/.test(name) ? redactUrl(raw) : raw);
