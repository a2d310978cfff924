// Secured connections, the parts without a server (docs/operations.md "Production settings"): the
// settings and their contradictions (refused at start), secrets from files, redaction of every
// secret in logs / errors / CLI output, the options each client gets, the explanation of a failed
// connection and its failure class (never DEAD).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, slices, targets } from '../../lib/core/config.ts';
import { resolveKafka, resolvePostgres, resolveRedis } from '../../lib/core/connections.ts';
import { classify, isInfraError } from '../../lib/core/errors.ts';
import { redactUrl, scrub } from '../../lib/core/secrets.ts';
import { mysqlTarget } from '../../lib/db/mysql.ts';
import { connectionSettings, pgEndpoint } from '../../lib/db/postgres.ts';
import { redisEndpoint } from '../../lib/db/redis.ts';
import { explainConnectionError, kafkaSecurity } from '../../lib/db/tls.ts';
import { kafkaClientConfig, kafkaOptions } from '../../lib/dispatch/kafka.ts';
import { createLogger } from '../../lib/runtime/log.ts';

let dir: string;
let ca: string;
let key: string;
let cert: string;
const file = (name: string, text: string) => {
  const f = join(dir, name);
  writeFileSync(f, text);
  return f;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'msgx-secure-config-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '1', '-subj', '/CN=unit'], {
    cwd: dir,
    stdio: 'ignore',
  });
  ca = join(dir, 'cert.pem');
  cert = ca;
  key = join(dir, 'key.pem');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refused = (env: Record<string, string>, message: RegExp | string) => {
  expect(() => loadConfig(env)).toThrow(ConfigError);
  expect(() => loadConfig(env)).toThrow(message);
};

describe('the plain default is exactly as before', () => {
  it('no setting: plain targets, the URLs passed through unchanged', () => {
    const c = loadConfig({});
    const t = targets(c);
    expect(t.postgres).toEqual({ service: 'postgres', url: 'postgres://postgres@127.0.0.1:5432/msgx' });
    expect(t.mariadb).toEqual({ service: 'mariadb', url: 'mysql://root@127.0.0.1:3306/aodbinterface' });
    expect(t.redis).toEqual({ service: 'redis', url: 'redis://127.0.0.1:6379/0' });
    expect(t.kafka).toEqual({ service: 'kafka', brokers: ['127.0.0.1:9092'], protocol: 'PLAINTEXT' });
    // Postgres: the connection string as it was, no ssl option (pg's own default applies)
    expect(pgEndpoint(t.postgres)).toEqual({ connectionString: 'postgres://postgres@127.0.0.1:5432/msgx' });
    expect(connectionSettings('postgres://u@h/db', 'x')).toMatchObject({ connectionString: 'postgres://u@h/db', application_name: 'msgx-x' });
    expect(mysqlTarget(t.mariadb)).toEqual({ host: '127.0.0.1', port: 3306, user: 'root', password: '', database: 'aodbinterface' });
    expect(redisEndpoint(t.redis)).toEqual({ url: 'redis://127.0.0.1:6379/0', options: {} });
    expect(kafkaClientConfig(kafkaOptions(slices(c).kafka, createLogger('t', 'silent')))).toEqual({ brokers: ['127.0.0.1:9092'] });
  });
});

describe('settings', () => {
  it('Postgres: TLS mode, CA, client certificate, the password apart (the URL keeps no TLS parameter)', () => {
    const c = loadConfig({
      DATABASE_URL: 'postgres://msgx@db.example:5432/msgx',
      DATABASE_PASSWORD: 'pw-1234',
      DATABASE_TLS_MODE: 'verify-full',
      DATABASE_TLS_CA: ca,
      DATABASE_TLS_CERT: cert,
      DATABASE_TLS_KEY: key,
    });
    const e = pgEndpoint(targets(c).postgres);
    expect(e.connectionString).toBeUndefined();
    expect(e).toMatchObject({ host: 'db.example', port: '5432', user: 'msgx', database: 'msgx', password: 'pw-1234' });
    expect(e.ssl).toMatchObject({ rejectUnauthorized: true });
    expect((e.ssl as { ca: string }).ca).toContain('BEGIN CERTIFICATE');
    expect((e.ssl as { key: string }).key).toContain('PRIVATE KEY');
  });

  it("Postgres: libpq's sslmode / sslrootcert in the URL are the same settings", () => {
    const t = resolvePostgres(`postgres://u@h/db?sslmode=verify-ca&sslrootcert=${ca}&application_name=x`);
    expect(t.problems).toEqual([]);
    expect(t.target.tls).toEqual({ mode: 'verify-ca', ca });
    expect(t.target.url).toBe('postgres://u@h/db?application_name=x');
    // verify-ca: the chain is checked, the host name is not
    expect((pgEndpoint(t.target).ssl as { checkServerIdentity: () => unknown }).checkServerIdentity()).toBeUndefined();
  });

  it('MariaDB: verify-full checks the host name; an IP address is checked as itself', () => {
    const m = mysqlTarget(targets(loadConfig({ INBOX_URL: 'mysql://msgx@10.0.0.5:3306/aodb', INBOX_PASSWORD: 'pw-5678', INBOX_TLS_MODE: 'verify-full', INBOX_TLS_CA: ca })).mariadb);
    expect(m).toMatchObject({ host: '10.0.0.5', password: 'pw-5678', ssl: { rejectUnauthorized: true, verifyIdentity: true } });
    expect(typeof m.stream).toBe('function');
  });

  it('Redis: rediss:// with a CA and an ACL user', () => {
    const e = redisEndpoint(targets(loadConfig({ REDIS_URL: 'rediss://r.example:6380/0', REDIS_USERNAME: 'msgx', REDIS_PASSWORD: 'pw-9abc', REDIS_TLS_CA: ca })).redis);
    expect(e.url).toBe('rediss://r.example:6380/0');
    expect(e.options).toMatchObject({ username: 'msgx', password: 'pw-9abc', tls: { rejectUnauthorized: true } });
  });

  it('Kafka: SASL_SSL with SCRAM-SHA-512 (or PLAIN), mutual TLS as an option', () => {
    const c = loadConfig({
      KAFKA_BROKERS: 'k1:9093,k2:9093',
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'msgx',
      KAFKA_SASL_PASSWORD: 'pw-def0',
      KAFKA_TLS_CA: ca,
      KAFKA_TLS_CERT: cert,
      KAFKA_TLS_KEY: key,
    });
    const k = kafkaClientConfig(kafkaOptions(slices(c).kafka, createLogger('t', 'silent')));
    expect(k.brokers).toEqual(['k1:9093', 'k2:9093']);
    expect(k.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'msgx', password: 'pw-def0' });
    expect(k.ssl).toMatchObject({ rejectUnauthorized: true });
    expect(kafkaSecurity(resolveKafka('SASL_SSL://k:9093', { mechanism: 'plain', username: 'u', password: 'p' }).target).sasl?.mechanism).toBe('plain');
  });
});

describe('secrets from files (NAME_FILE)', () => {
  it('every password and the API token can come from a file; one trailing newline dropped', () => {
    const c = loadConfig({
      DATABASE_PASSWORD_FILE: file('pg', 'pg-from-file\n'),
      INBOX_PASSWORD_FILE: file('my', 'my-from-file\n'),
      REDIS_PASSWORD_FILE: file('rd', 'rd-from-file'),
      KAFKA_SASL_PASSWORD_FILE: file('kf', 'kf-from-file\r\n'),
      MSGX_API_TOKEN_FILE: file('tok', 'token-from-file\n'),
      DATABASE_URL_FILE: file('url', 'postgres://u@h:5432/db\n'),
      KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'u',
      MSGX_DEV_MODE: 'true', // (the shared token is for development mode only)
    });
    expect([c.DATABASE_PASSWORD, c.INBOX_PASSWORD, c.REDIS_PASSWORD, c.KAFKA_SASL_PASSWORD, c.MSGX_API_TOKEN, c.DATABASE_URL]).toEqual([
      'pg-from-file',
      'my-from-file',
      'rd-from-file',
      'kf-from-file',
      'token-from-file',
      'postgres://u@h:5432/db',
    ]);
  });

  it('both NAME and NAME_FILE, or an unreadable file: refused naming the setting', () => {
    refused({ DATABASE_PASSWORD: 'x', DATABASE_PASSWORD_FILE: file('p2', 'y') }, 'DATABASE_PASSWORD and DATABASE_PASSWORD_FILE are both set: give one');
    refused({ REDIS_PASSWORD_FILE: join(dir, 'missing') }, /REDIS_PASSWORD_FILE=.*missing: cannot be read \(ENOENT\)/);
  });
});

describe('contradictions and bad files are refused at start', () => {
  it.each([
    [{ DATABASE_TLS_MODE: 'verify-full', DATABASE_URL: 'postgres://u@h/db?sslmode=disable' }, 'DATABASE_TLS_MODE=verify-full contradicts DATABASE_URL, which says plain text'],
    [{ DATABASE_TLS_MODE: 'disable', DATABASE_URL: 'postgres://u@h/db?sslmode=verify-full' }, 'DATABASE_TLS_MODE=disable contradicts DATABASE_URL, which says verify-full'],
    [{ DATABASE_URL: 'postgres://u@h/db?sslmode=require' }, "sslmode=require, which does not verify the server's certificate"],
    [{ DATABASE_TLS_MODE: 'verify-ca' }, 'DATABASE_TLS_MODE=verify-ca needs DATABASE_TLS_CA'],
    [{ DATABASE_PASSWORD: 'x1234', DATABASE_URL: 'postgres://u:inline@h/db' }, 'DATABASE_PASSWORD is set and DATABASE_URL carries a password too'],
    [{ INBOX_TLS_MODE: 'verify-full', INBOX_URL: 'mysql://u@h/db?ssl-mode=DISABLED' }, 'INBOX_TLS_MODE=verify-full contradicts INBOX_URL, which says plain text'],
    [{ REDIS_TLS_MODE: 'verify-full' }, 'REDIS_TLS_MODE=verify-full asks for TLS but REDIS_URL says plain text (redis://; use rediss://)'],
    [{ REDIS_URL: 'rediss://h:6380/0', REDIS_TLS_MODE: 'disable' }, 'REDIS_TLS_MODE=disable contradicts REDIS_URL, which says TLS (rediss://)'],
    [{ REDIS_URL: 'http://h:6379/0' }, 'REDIS_URL must start with redis:// (plain) or rediss:// (TLS)'],
    [{ KAFKA_SASL_MECHANISM: 'scram-sha-512' }, 'KAFKA_SASL_MECHANISM ask(s) for SASL but the Kafka protocol is PLAINTEXT'],
    [
      { KAFKA_SECURITY_PROTOCOL: 'SASL_SSL', KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'u' },
      'KAFKA_SECURITY_PROTOCOL=SASL_SSL needs KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE',
    ],
    [{ KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT', KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' }, 'sends the password in clear text: use SASL_SSL'],
    [{ KAFKA_SECURITY_PROTOCOL: 'SSL', KAFKA_BROKERS: 'PLAINTEXT://k:9092' }, 'KAFKA_SECURITY_PROTOCOL=SSL contradicts KAFKA_BROKERS, which says PLAINTEXT://'],
    [{ KAFKA_SECURITY_PROTOCOL: 'TLS' }, 'KAFKA_SECURITY_PROTOCOL'],
  ])('%o', (env, message) => refused(env as Record<string, string>, message));

  it('TLS files: each readable and what it should be; a certificate and its key go together', () => {
    const notPem = file('not-pem', 'hello');
    refused({ DATABASE_TLS_MODE: 'verify-full', DATABASE_TLS_CA: notPem }, `DATABASE_TLS_CA=${notPem}: not a PEM certificate`);
    refused({ DATABASE_TLS_MODE: 'verify-full', DATABASE_TLS_CERT: cert, DATABASE_TLS_KEY: notPem }, `DATABASE_TLS_KEY=${notPem}: not an unencrypted PEM private key`);
    refused({ DATABASE_TLS_MODE: 'verify-full', DATABASE_TLS_CERT: cert }, 'DATABASE_TLS_CERT and DATABASE_TLS_KEY go together');
    refused({ REDIS_URL: 'rediss://h/0', REDIS_TLS_CA: join(dir, 'nope.pem') }, /REDIS_TLS_CA=.*nope\.pem: cannot be read \(ENOENT\)/);
  });
});

describe('no secret in any text', () => {
  it('a configuration error never shows a password, the token or a URL password', () => {
    for (const env of [
      { DATABASE_URL: 'postgres://u:hunter2-url@h:notaport/x' },
      { DATABASE_PASSWORD: 'hunter2-pw', DATABASE_URL: 'postgres://u:other-url-pw@h/db' },
      { MSGX_API_TOKEN: 'tok-secret-1', MSGX_PIPELINE_CLAIM_BATCH: 'x' },
      { KAFKA_SASL_PASSWORD: 'kafka-pw-77', KAFKA_SECURITY_PROTOCOL: 'SASL_SSL' },
    ]) {
      let message = '';
      try {
        loadConfig(env);
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).not.toBe('');
      for (const secret of ['hunter2-url', 'hunter2-pw', 'other-url-pw', 'tok-secret-1', 'kafka-pw-77']) expect(message).not.toContain(secret);
    }
  });

  it('scrub: every loaded secret, any URL password and any PEM private key become ***', () => {
    loadConfig({ DATABASE_PASSWORD: 'pg-scrub-me', REDIS_URL: 'redis://:url-scrub-me@h/0', MSGX_API_TOKEN: 'token-scrub-me', MSGX_DEV_MODE: 'true' });
    const text = 'a pg-scrub-me b url-scrub-me c token-scrub-me d mysql://u:p4ss@h/x e -----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY----- f';
    const out = scrub(text);
    for (const secret of ['pg-scrub-me', 'url-scrub-me', 'token-scrub-me', 'p4ss', 'MIGH']) expect(out).not.toContain(secret);
    expect(out).toContain('mysql://u:***@h/x');
    expect(redactUrl('postgres://:secret@db:5432/msgx')).toBe('postgres://:***@db:5432/msgx');
    expect(redactUrl('see postgres://a:b@h and redis://c:d@i')).toBe('see postgres://a:***@h and redis://c:***@i');
  });

  it('a password given as a URL query parameter (?password=) is scrubbed too, and registered as a secret', () => {
    expect(redactUrl('postgres://u@db/msgx?sslmode=verify-full&password=q-secret-1&x=1')).toBe('postgres://u@db/msgx?sslmode=verify-full&password=***&x=1');
    expect(redactUrl('mysql://u@h/db?PASSWORD=a;pwd=b&sslpassword=c')).toBe('mysql://u@h/db?PASSWORD=***;pwd=***&sslpassword=***');
    loadConfig({ INBOX_URL: 'mysql://msgx@h:3306/aodb?password=q-secret-2', MSGX_DEV_MODE: 'true' });
    expect(scrub('the driver said: access denied (using password q-secret-2)')).not.toContain('q-secret-2');
  });

  it('a log line carrying a secret in any field writes *** instead', () => {
    loadConfig({ INBOX_PASSWORD: 'log-secret-42' });
    const lines: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => (lines.push(String(chunk)), true)) as typeof process.stdout.write;
    try {
      const log = createLogger('unit', 'info');
      log.error({ err: new Error('failed with log-secret-42'), url: 'mysql://u:log-secret-42@h/db' }, 'password log-secret-42');
      log.flush?.();
    } finally {
      process.stdout.write = write;
    }
    const text = lines.join('');
    expect(text).toContain('***');
    expect(text).not.toContain('log-secret-42');
  });
});

describe('a failed connection is explained, and never makes a message DEAD', () => {
  const err = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});
  it.each([
    ['postgres', err('self-signed certificate in certificate chain', 'SELF_SIGNED_CERT_IN_CHAIN'), /postgres: .*not signed by a CA .*DATABASE_TLS_CA/],
    ['mariadb', err('certificate has expired', 'HANDSHAKE_SSL_ERROR'), /mariadb: the server's certificate has expired/],
    ['redis', err("Hostname/IP does not match certificate's altnames: Host: a. is not in the cert's altnames: DNS:b", 'ERR_TLS_CERT_ALTNAME_INVALID'), /redis: .*another host name .*REDIS_URL/],
    ['postgres', err('password authentication failed for user "msgx"', '28P01'), /postgres: .*DATABASE_PASSWORD/],
    ['redis', err('WRONGPASS invalid username-password pair or user is disabled.'), /redis: .*REDIS_PASSWORD .*REDIS_USERNAME/],
    ['kafka', Object.assign(new Error('SASL SCRAM SHA512 authentication failed: invalid credentials'), { name: 'KafkaJSSASLAuthenticationError' }), /kafka: .*KAFKA_SASL_PASSWORD_FILE/],
    ['postgres', err('The server does not support SSL connections'), /postgres: the server does not speak TLS/],
    ['mariadb', err('Server does not support secure connection', 'HANDSHAKE_NO_SSL_SUPPORT'), /mariadb: the server does not speak TLS/],
  ] as const)('%s: %s', (service, e, message) => {
    const x = explainConnectionError(service, e);
    expect(x?.message).toMatch(message);
    expect(isInfraError(x)).toBe(true);
    // the raw error too: a message whose step met it fails as INFRA (retried, not counted), never CODEC/INTERNAL
    expect(classify(e, 'handler').cls).toBe('INFRA');
  });

  it('an outage stays an outage (not explained as a setting)', () => {
    expect(explainConnectionError('postgres', err('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'))).toBeNull();
  });

  it('a bare URL resolves its own TLS parameters; a contradiction in it throws', () => {
    expect(resolveRedis('rediss://h/0').target.tls).toEqual({ mode: 'verify-full' });
    expect(() => pgEndpoint('postgres://u@h/db?sslmode=prefer')).toThrow(/does not verify the server's certificate/);
  });
});

describe('Redis Sentinel: the same TLS as the master, a login of its own', () => {
  it('rediss:// with Sentinels: TLS to the Sentinels (the CA of the master) and their user and password', () => {
    const c = loadConfig({
      REDIS_URL: 'rediss://redis-m:6379/0',
      REDIS_TLS_CA: ca,
      REDIS_SENTINELS: 's1:26379,s2:26379',
      REDIS_SENTINEL_USERNAME: 'sentinel-user',
      REDIS_SENTINEL_PASSWORD_FILE: file('spw', 'sentinel-pw-1\n'),
      MSGX_DEV_MODE: 'true',
    });
    const t = targets(c).redis;
    expect(t.sentinel).toEqual({
      sentinels: [
        { host: 's1', port: 26379 },
        { host: 's2', port: 26379 },
      ],
      master: 'mymaster',
      username: 'sentinel-user',
      password: 'sentinel-pw-1',
    });
    const o = redisEndpoint(t).options;
    expect(o).toMatchObject({ sentinelUsername: 'sentinel-user', sentinelPassword: 'sentinel-pw-1', enableTLSForSentinelMode: true });
    expect(o.sentinelTLS).toBe(o.tls); // one set of TLS options: the master's CA verifies the Sentinels
    expect(o.sentinelTLS?.rejectUnauthorized).toBe(true);
    expect(scrub('sentinel said sentinel-pw-1')).not.toContain('sentinel-pw-1');
  });

  it('a Sentinel login without Sentinels, or a user without a password: refused naming the settings', () => {
    expect(() => loadConfig({ REDIS_SENTINEL_PASSWORD: 'x1234', MSGX_DEV_MODE: 'true' })).toThrow(/REDIS_SENTINEL_USERNAME \/ REDIS_SENTINEL_PASSWORD are set but REDIS_SENTINELS is not/);
    expect(() => loadConfig({ REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_USERNAME: 'u', MSGX_DEV_MODE: 'true' })).toThrow(/REDIS_SENTINEL_USERNAME needs REDIS_SENTINEL_PASSWORD/);
  });
});

describe('plain text is a decision outside development mode', () => {
  const prod = { MSGX_DEV_MODE: 'false' };
  it('off loopback, a plain-text service is refused naming MSGX_ALLOW_PLAINTEXT; loopback and development mode pass', () => {
    const remote = {
      DATABASE_URL: 'postgres://u@db.airport.example/msgx',
      INBOX_URL: 'mysql://u@aodb.airport.example/x',
      REDIS_URL: 'redis://cache.airport.example/0',
      KAFKA_BROKERS: 'k1.airport.example:9092',
    };
    let message = '';
    try {
      loadConfig({ ...prod, ...remote });
    } catch (e) {
      message = (e as Error).message;
    }
    for (const [service, setting] of [
      ['postgres', 'DATABASE_URL'],
      ['mariadb', 'INBOX_URL'],
      ['redis', 'REDIS_URL'],
      ['kafka', 'KAFKA_BROKERS'],
    ])
      expect(message).toContain(`${service}: ${setting} reaches`);
    expect(message).toContain('MSGX_ALLOW_PLAINTEXT=postgres');
    expect(() => loadConfig({ ...prod, ...remote, MSGX_ALLOW_PLAINTEXT: 'postgres,mariadb,redis,kafka' })).not.toThrow();
    expect(() => loadConfig({ ...remote, MSGX_DEV_MODE: 'true' })).not.toThrow();
    expect(() => loadConfig(prod)).not.toThrow(); // the local defaults: loopback
    expect(() => loadConfig({ ...prod, REDIS_SENTINELS: 's1.airport.example:26379' })).toThrow(/redis: REDIS_SENTINELS reaches s1.airport.example in plain text/);
    expect(() => loadConfig({ ...prod, MSGX_ALLOW_PLAINTEXT: 'postgres,ftp' })).toThrow(/msgx.allow-plaintext/);
  });
});

describe('access settings', () => {
  it('the shared token outside development mode, development mode off loopback, an issuer without audience or over http: refused', () => {
    expect(() => loadConfig({ MSGX_API_TOKEN: 'x'.repeat(40) })).toThrow(/MSGX_API_TOKEN \(the shared token\) works only in development mode on loopback/);
    expect(() => loadConfig({ MSGX_DEV_MODE: 'true', MSGX_HTTP_HOST: '0.0.0.0' })).toThrow(/development mode \(MSGX_DEV_MODE=true\) only on a loopback address/);
    expect(() => loadConfig({ MSGX_OIDC_ISSUER: 'https://idp.airport.example/realms/gw' })).toThrow(/msgx.oidc.audience names this gateway/);
    expect(() => loadConfig({ MSGX_OIDC_ISSUER: 'http://idp.airport.example/realms/gw', MSGX_OIDC_AUDIENCE: 'gw' })).toThrow(/https:\/\/ URL/);
    const c = loadConfig({ MSGX_OIDC_ISSUER: 'https://idp.airport.example/realms/gw', MSGX_OIDC_AUDIENCE: 'gw', MSGX_HTTP_ALLOWED_HOSTS: 'api, intake', MSGX_HTTP_ANONYMOUS_READS: '/all/flights' });
    expect(slices(c).http.allowedHosts).toEqual(['api', 'intake']);
    expect(slices(c).oidc).toMatchObject({ clockSkewMs: 30_000, roleClaim: 'roles', scopes: 'openid profile email' });
  });
});
