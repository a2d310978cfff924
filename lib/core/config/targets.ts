// Where and how each service is reached (lib/core/connections.ts), resolved from a loaded
// configuration once, and the rule that plain text off loopback is a decision, not a default.
import { resolveKafka, resolveMysql, resolvePostgres, resolveRedis, type KafkaTarget, type MysqlTarget, type PgTarget, type RedisTarget } from '../connections.ts';
import { splitPgHosts } from '../pg-url.ts';
import type { Config } from './keys.ts';
import { type Slices, slices } from './slices.ts';
import { ConfigError, LOOPBACK } from './values.ts';

/** Where and how each service is reached (lib/core/connections.ts), resolved once per Config. */
export interface Targets {
  postgres: PgTarget;
  mariadb: MysqlTarget;
  redis: RedisTarget;
  kafka: KafkaTarget;
}

const resolvedTargets = new WeakMap<Config, Targets>();

export function resolveAll(c: Config): { targets: Targets; problems: string[] } {
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
 * Outside development mode a service reached in plain text off loopback is refused unless
 * msgx.allow-plaintext names it (the refusal names the setting): plain text on a network is a
 * decision, never a default (docs/operations.md "Production settings").
 */
export function plaintextProblems(t: Targets, allowed: Set<string>): string[] {
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
