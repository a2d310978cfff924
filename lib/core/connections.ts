// Where and how to connect to each service (docs/operations.md "Production settings"): the URL
// or brokers, the password when it is given apart from the URL, TLS (verification mode, CA,
// client certificate and key, as file paths) and Kafka's SASL. Resolved once from the
// configuration (lib/core/config.ts `targets`), or from a bare URL (tests, benches); every
// contradiction between a setting and its URL is a problem naming both, refused at start.
// The edges turn a target into their client's options (lib/db/tls.ts, lib/db/postgres.ts,
// lib/db/mysql.ts, lib/db/redis.ts, lib/dispatch/kafka.ts).
import { systemClock } from './clock.ts';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { splitPgHosts, type PgHost } from './pg-url.ts';

/** verify-full: the chain AND the host name; verify-ca: the chain only (a private CA that issues only your servers' certificates). */
export type TlsMode = 'verify-full' | 'verify-ca';
export type ServiceName = 'postgres' | 'mariadb' | 'redis' | 'kafka';

/** The prefix of a service's settings: DATABASE_*, INBOX_*, REDIS_*, KAFKA_*. */
export const SETTING_PREFIX: Record<ServiceName, string> = { postgres: 'DATABASE', mariadb: 'INBOX', redis: 'REDIS', kafka: 'KAFKA' };

export interface TlsSettings {
  mode: TlsMode;
  /** PEM file of the CA(s) the server's certificate must chain to (none: the system's CAs). */
  ca?: string;
  /** PEM files of the client certificate and its key (mutual TLS). */
  cert?: string;
  key?: string;
}

export interface PgTarget {
  service: 'postgres';
  /** The URL without TLS parameters (the TLS settings are in `tls`). */
  url: string;
  /** Given apart from the URL (DATABASE_PASSWORD / _FILE). */
  password?: string;
  tls?: TlsSettings;
  /** A URL naming several hosts (lib/core/pg-url.ts): all of them, in order; `url` names the first. */
  hosts?: PgHost[];
}

export interface MysqlTarget {
  service: 'mariadb';
  url: string;
  password?: string;
  tls?: TlsSettings;
}

export interface RedisTarget {
  service: 'redis';
  url: string;
  username?: string;
  password?: string;
  tls?: TlsSettings;
  /**
   * Sentinel mode: the Sentinels (asked for the master's address), the master's name and the
   * Sentinels' own login; the URL's host is then not used. TLS to the Sentinels is the master's.
   */
  sentinel?: { sentinels: { host: string; port: number }[]; master: string; username?: string; password?: string };
}

export type KafkaProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL';
export type SaslMechanism = 'plain' | 'scram-sha-256' | 'scram-sha-512';

export interface KafkaTarget {
  service: 'kafka';
  brokers: string[];
  protocol: KafkaProtocol;
  tls?: TlsSettings;
  sasl?: { mechanism: SaslMechanism; username: string; password: string };
}

/** The raw settings of one service (environment values, '' = not set). */
export interface RawTls {
  mode?: string;
  ca?: string;
  cert?: string;
  key?: string;
}

type Resolved<T> = { target: T; problems: string[] };

const VERIFYING = new Set(['verify-full', 'verify-ca']);
/** libpq's and MySQL's names of modes that do not verify the server (refused: anyone in the path could answer). */
const NOT_VERIFYING = new Set(['allow', 'prefer', 'require', 'no-verify', 'preferred', 'required']);

/** libpq / MySQL spellings → ours. */
function normalMode(v: string): string {
  const m = v.trim().toLowerCase().replace(/_/g, '-');
  if (m === 'disabled') return 'disable';
  if (m === 'verify-identity') return 'verify-full';
  return m;
}

/**
 * The TLS settings of a URL-based service: mode from the setting or the URL (they must agree),
 * files from the settings or the URL's parameters (Postgres: sslrootcert, sslcert, sslkey).
 */
function resolveTls(service: ServiceName, urlName: string, urlMode: string | null, urlFiles: RawTls, raw: RawTls, problems: string[]): TlsSettings | undefined {
  const p = SETTING_PREFIX[service];
  const setMode = raw.mode ? normalMode(raw.mode) : '';
  const fromUrl = urlMode === null ? '' : normalMode(urlMode);
  if (fromUrl && NOT_VERIFYING.has(fromUrl)) {
    problems.push(`${urlName} says sslmode=${urlMode}, which does not verify the server's certificate: use verify-full (${p}_TLS_MODE=verify-full) with ${p}_TLS_CA`);
    return undefined;
  }
  if (fromUrl && fromUrl !== 'disable' && !VERIFYING.has(fromUrl)) {
    problems.push(`${urlName}: unknown TLS mode ${urlMode} (disable, verify-ca, verify-full)`);
    return undefined;
  }
  if (setMode && fromUrl && setMode !== fromUrl) {
    problems.push(`${p}_TLS_MODE=${raw.mode} contradicts ${urlName}, which says ${fromUrl === 'disable' ? 'plain text' : fromUrl} (${urlMode}): say it in one place`);
    return undefined;
  }
  const mode = setMode || fromUrl || 'disable';
  const file = (what: 'ca' | 'cert' | 'key', setting: string) => {
    const a = raw[what] || '';
    const b = urlFiles[what] || '';
    if (a && b && a !== b) problems.push(`${setting}=${a} contradicts ${urlName}'s ${what === 'ca' ? 'sslrootcert' : `ssl${what}`}=${b}: say it in one place`);
    return a || b || undefined;
  };
  const ca = file('ca', `${p}_TLS_CA`);
  const cert = file('cert', `${p}_TLS_CERT`);
  const key = file('key', `${p}_TLS_KEY`);
  if (mode === 'disable') {
    const asked = [ca && `${p}_TLS_CA`, cert && `${p}_TLS_CERT`, key && `${p}_TLS_KEY`].filter(Boolean);
    if (asked.length) problems.push(`${asked.join(', ')} ask(s) for TLS but ${urlName} says plain text${service === 'redis' ? ' (redis://; rediss:// is TLS)' : ` (set ${p}_TLS_MODE=verify-full)`}`);
    return undefined;
  }
  if (!VERIFYING.has(mode)) {
    problems.push(`${p}_TLS_MODE=${raw.mode}: expected disable, verify-ca or verify-full`);
    return undefined;
  }
  if (mode === 'verify-ca' && !ca) problems.push(`${p}_TLS_MODE=verify-ca needs ${p}_TLS_CA (the private CA that issued the server's certificate)`);
  if (!!cert !== !!key) problems.push(`${p}_TLS_CERT and ${p}_TLS_KEY go together (the client certificate and its key)`);
  checkFiles(p, { ca, cert, key }, problems);
  return { mode: mode as TlsMode, ...(ca ? { ca } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
}

/** Each file readable and what it should be (a certificate, a private key); the message names the setting and the path, never the content. */
function checkFiles(prefix: string, f: RawTls, problems: string[]): void {
  const read = (setting: string, path: string): string | null => {
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      problems.push(`${setting}=${path}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      return null;
    }
  };
  for (const what of ['ca', 'cert'] as const) {
    const path = f[what];
    if (!path) continue;
    const setting = `${prefix}_TLS_${what.toUpperCase()}`;
    const text = read(setting, path);
    if (text === null) continue;
    try {
      const c = new X509Certificate(text);
      if (what === 'cert' && Date.parse(c.validTo) < systemClock.now().getTime()) problems.push(`${setting}=${path}: the client certificate expired on ${c.validTo}`);
    } catch {
      problems.push(`${setting}=${path}: not a PEM certificate`);
    }
  }
  if (f.key) {
    const text = read(`${prefix}_TLS_KEY`, f.key);
    if (text !== null) {
      try {
        createPrivateKey(text);
      } catch {
        problems.push(`${prefix}_TLS_KEY=${f.key}: not an unencrypted PEM private key`);
      }
    }
  }
}

function parseUrl(name: string, url: string, problems: string[]): URL | null {
  try {
    return new URL(url);
  } catch {
    problems.push(`${name} is not a URL`);
    return null;
  }
}

/** Password given twice (in the URL and apart): refused, one place only. */
function passwordOnce(p: string, urlName: string, u: URL, password: string | undefined, problems: string[]): void {
  if (password && u.password) problems.push(`${p}_PASSWORD is set and ${urlName} carries a password too: give it in one place (${p}_PASSWORD_FILE is the safer one)`);
}

const PG_TLS_PARAMS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey'];

export function resolvePostgres(given: string, o: { password?: string; tls?: RawTls } = {}, urlName = 'DATABASE_URL'): Resolved<PgTarget> {
  const split = splitPgHosts(given, urlName);
  const problems: string[] = [...split.problems];
  const url = split.url;
  const hosts = split.hosts.length > 1 ? { hosts: split.hosts } : {};
  const u = parseUrl(urlName, url, problems);
  if (!u) return { target: { service: 'postgres', url }, problems };
  passwordOnce('DATABASE', urlName, u, o.password, problems);
  const q = u.searchParams;
  const tls = resolveTls(
    'postgres',
    urlName,
    q.get('sslmode'),
    { ca: q.get('sslrootcert') ?? undefined, cert: q.get('sslcert') ?? undefined, key: q.get('sslkey') ?? undefined },
    o.tls ?? {},
    problems,
  );
  const stripped = PG_TLS_PARAMS.some((k) => q.has(k)) ? withoutParams(u, PG_TLS_PARAMS) : url;
  return { target: { service: 'postgres', url: stripped, ...(o.password ? { password: o.password } : {}), ...(tls ? { tls } : {}), ...hosts }, problems };
}

const MY_TLS_PARAMS = ['sslmode', 'ssl-mode'];

export function resolveMysql(url: string, o: { password?: string; tls?: RawTls } = {}, urlName = 'INBOX_URL'): Resolved<MysqlTarget> {
  const problems: string[] = [];
  const u = parseUrl(urlName, url, problems);
  if (!u) return { target: { service: 'mariadb', url }, problems };
  passwordOnce('INBOX', urlName, u, o.password, problems);
  const q = u.searchParams;
  const tls = resolveTls('mariadb', urlName, q.get('ssl-mode') ?? q.get('sslmode'), {}, o.tls ?? {}, problems);
  const stripped = MY_TLS_PARAMS.some((k) => q.has(k)) ? withoutParams(u, MY_TLS_PARAMS) : url;
  return { target: { service: 'mariadb', url: stripped, ...(o.password ? { password: o.password } : {}), ...(tls ? { tls } : {}) }, problems };
}

/** REDIS_SENTINELS: host:port, comma separated ('' = none). */
function sentinelsOf(list: string, master: string, problems: string[]): RedisTarget['sentinel'] {
  const items = list
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  if (items.length === 0) return undefined;
  const sentinels = items.map((x) => /^([^:\s]+):(\d{1,5})$/.exec(x)).map((m) => (m ? { host: m[1], port: Number(m[2]) } : null));
  if (sentinels.some((x) => x === null)) problems.push(`REDIS_SENTINELS=${list}: expected host:port, comma separated`);
  if (!master.trim()) problems.push('REDIS_SENTINELS is set: REDIS_SENTINEL_MASTER names the master the Sentinels watch');
  return { sentinels: sentinels.filter((x) => x !== null), master: master.trim() };
}

export function resolveRedis(
  url: string,
  o: { username?: string; password?: string; tls?: RawTls; sentinels?: string; master?: string; sentinelUsername?: string; sentinelPassword?: string } = {},
  urlName = 'REDIS_URL',
): Resolved<RedisTarget> {
  const problems: string[] = [];
  const listed = sentinelsOf(o.sentinels ?? '', o.master ?? '', problems);
  const login = { ...(o.sentinelUsername ? { username: o.sentinelUsername } : {}), ...(o.sentinelPassword ? { password: o.sentinelPassword } : {}) };
  if (!listed && Object.keys(login).length) problems.push("REDIS_SENTINEL_USERNAME / REDIS_SENTINEL_PASSWORD are set but REDIS_SENTINELS is not: they are the Sentinels' login");
  if (o.sentinelUsername && !o.sentinelPassword) problems.push('REDIS_SENTINEL_USERNAME needs REDIS_SENTINEL_PASSWORD (or REDIS_SENTINEL_PASSWORD_FILE)');
  const sentinel = listed && { ...listed, ...login };
  const u = parseUrl(urlName, url, problems);
  if (!u) return { target: { service: 'redis', url }, problems };
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') problems.push(`${urlName} must start with redis:// (plain) or rediss:// (TLS)`);
  passwordOnce('REDIS', urlName, u, o.password, problems);
  if (o.username && u.username && decodeURIComponent(u.username) !== o.username) problems.push(`REDIS_USERNAME=${o.username} contradicts the user in ${urlName}: give it in one place`);
  const raw = { ...(o.tls ?? {}) };
  // rediss:// is verify-full unless REDIS_TLS_MODE narrows it to verify-ca
  const urlMode = u.protocol === 'rediss:' ? (raw.mode && normalMode(raw.mode) === 'verify-ca' ? 'verify-ca' : 'verify-full') : 'disable';
  if (raw.mode && normalMode(raw.mode) !== 'disable' && urlMode === 'disable') {
    problems.push(`REDIS_TLS_MODE=${raw.mode} asks for TLS but ${urlName} says plain text (redis://; use rediss://)`);
    return { target: { service: 'redis', url }, problems };
  }
  if (raw.mode && normalMode(raw.mode) === 'disable' && urlMode !== 'disable') {
    problems.push(`REDIS_TLS_MODE=disable contradicts ${urlName}, which says TLS (rediss://)`);
    return { target: { service: 'redis', url }, problems };
  }
  const tls = resolveTls('redis', urlName, urlMode, {}, { ...raw, mode: '' }, problems);
  return {
    target: { service: 'redis', url, ...(o.username ? { username: o.username } : {}), ...(o.password ? { password: o.password } : {}), ...(tls ? { tls } : {}), ...(sentinel ? { sentinel } : {}) },
    problems,
  };
}

const PROTOCOLS = new Set<KafkaProtocol>(['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']);
const MECHANISMS = new Set<SaslMechanism>(['plain', 'scram-sha-256', 'scram-sha-512']);

export function resolveKafka(brokers: string, o: { protocol?: string; mechanism?: string; username?: string; password?: string; tls?: RawTls } = {}): Resolved<KafkaTarget> {
  const problems: string[] = [];
  const list: string[] = [];
  const prefixes = new Set<string>();
  for (const b of brokers
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    const m = /^([A-Za-z_]+):\/\/(.+)$/.exec(b);
    if (m) prefixes.add(m[1].toUpperCase());
    list.push(m ? m[2] : b);
  }
  if (prefixes.size > 1) problems.push(`KAFKA_BROKERS mixes protocols (${[...prefixes].join(', ')}): one protocol for all brokers`);
  const fromBrokers = [...prefixes][0] as KafkaProtocol | undefined;
  const set = (o.protocol ?? '').trim().toUpperCase() as KafkaProtocol | '';
  if (fromBrokers && !PROTOCOLS.has(fromBrokers)) problems.push(`KAFKA_BROKERS: unknown protocol ${fromBrokers}:// (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)`);
  if (set && !PROTOCOLS.has(set)) problems.push(`KAFKA_SECURITY_PROTOCOL=${o.protocol}: expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL`);
  if (set && fromBrokers && set !== fromBrokers) problems.push(`KAFKA_SECURITY_PROTOCOL=${set} contradicts KAFKA_BROKERS, which says ${fromBrokers}://: say it in one place`);
  const protocol: KafkaProtocol = (set || fromBrokers || 'PLAINTEXT') as KafkaProtocol;
  const wantsTls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const wantsSasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
  const raw = o.tls ?? {};
  let tls: TlsSettings | undefined;
  if (wantsTls && raw.mode && !VERIFYING.has(normalMode(raw.mode))) {
    problems.push(`KAFKA_TLS_MODE=${raw.mode} with KAFKA_SECURITY_PROTOCOL=${protocol}: expected verify-full (the default) or verify-ca`);
  } else if (wantsTls) {
    tls = resolveTls('kafka', 'KAFKA_SECURITY_PROTOCOL', raw.mode || 'verify-full', {}, { ...raw, mode: '' }, problems);
  } else {
    const asked = [raw.mode && normalMode(raw.mode) !== 'disable' && 'KAFKA_TLS_MODE', raw.ca && 'KAFKA_TLS_CA', raw.cert && 'KAFKA_TLS_CERT', raw.key && 'KAFKA_TLS_KEY'].filter(Boolean);
    if (asked.length) problems.push(`${asked.join(', ')} ask(s) for TLS but the Kafka protocol is ${protocol} (KAFKA_SECURITY_PROTOCOL=SSL or SASL_SSL)`);
  }
  const mechanism = (o.mechanism ?? '').trim().toLowerCase() as SaslMechanism | '';
  let sasl: KafkaTarget['sasl'];
  if (wantsSasl) {
    if (!mechanism) problems.push(`KAFKA_SECURITY_PROTOCOL=${protocol} needs KAFKA_SASL_MECHANISM (scram-sha-512, scram-sha-256 or plain)`);
    else if (!MECHANISMS.has(mechanism)) problems.push(`KAFKA_SASL_MECHANISM=${o.mechanism}: expected scram-sha-512, scram-sha-256 or plain`);
    if (!o.username) problems.push(`KAFKA_SECURITY_PROTOCOL=${protocol} needs KAFKA_SASL_USERNAME`);
    if (!o.password) problems.push(`KAFKA_SECURITY_PROTOCOL=${protocol} needs KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE`);
    if (protocol === 'SASL_PLAINTEXT' && mechanism === 'plain') problems.push('KAFKA_SASL_MECHANISM=plain over SASL_PLAINTEXT sends the password in clear text: use SASL_SSL');
    if (mechanism && MECHANISMS.has(mechanism) && o.username && o.password) sasl = { mechanism, username: o.username, password: o.password };
  } else {
    const asked = [mechanism && 'KAFKA_SASL_MECHANISM', o.username && 'KAFKA_SASL_USERNAME', o.password && 'KAFKA_SASL_PASSWORD'].filter(Boolean);
    if (asked.length) problems.push(`${asked.join(', ')} ask(s) for SASL but the Kafka protocol is ${protocol} (KAFKA_SECURITY_PROTOCOL=SASL_SSL)`);
  }
  return { target: { service: 'kafka', brokers: list, protocol, ...(tls ? { tls } : {}), ...(sasl ? { sasl } : {}) }, problems };
}

/** The URL without the given query parameters. */
function withoutParams(u: URL, names: readonly string[]): string {
  const c = new URL(u.toString());
  for (const n of names) c.searchParams.delete(n);
  return c.toString();
}

/** A bare URL (tests, benches, a URL an operator gave): its own TLS parameters, nothing else; a contradiction throws. */
export function targetOf<T>(r: Resolved<T>): T {
  if (r.problems.length) throw new Error(r.problems.join('; '));
  return r.target;
}

/**
 * A broker list as kafkajs asks for it whenever it opens a seed connection (a new client, admin,
 * producer or a reconnect): the list from a random broker on. A kafkajs client given a plain list
 * seeds every new connection from its first broker, so with that broker down a new admin never
 * reached the brokers that serve (seen in the three-broker drill, RELIABILITY.md R10).
 */
export function anySeed(brokers: readonly string[]): () => string[] {
  return () => {
    const k = Math.floor(Math.random() * brokers.length);
    return [...brokers.slice(k), ...brokers.slice(0, k)];
  };
}
