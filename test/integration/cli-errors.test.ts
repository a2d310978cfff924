// Every CLI that connects (scripts/*.ts, as `npm run <name>` starts them), with a wrong password
// and with a contradictory setting: a bad setting is one line naming the setting, exit 2; a
// refused connection is one line naming the service and the setting to check, exit 1; never a
// stack trace or a driver's error object. The wrong passwords are refused by servers of this
// test (Postgres and Kafka with TLS and passwords, test/support/tls.ts) and by the machine's
// MariaDB (root has no password: a given one is refused).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../deploy/docker.ts';
import { TEST_INBOX_URL, testEnv } from '../support/env.ts';
import { resolveKafka } from '../../lib/core/connections.ts';
import { probes } from '../../lib/runtime/probe.ts';
import { freshDir, kafkaAvailable, makePki, type Pki, type SecureKafka, type SecurePostgres, secretFile, startKafka, startPostgres, until } from '../support/tls.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const PASSWORD = 'cli-Secret-5d81b2e4';
type Service = 'postgres' | 'mariadb' | 'kafka';

/** Each CLI that connects, arguments that get it to its first connection, the service it reaches first; its name prefixes its lines. */
const CLIS: { script: string; args: string[]; first: Service; name?: string }[] = [
  { script: 'migrate', args: [], first: 'postgres' },
  { script: 'replay', args: ['1'], first: 'postgres' },
  { script: 'backfill-resume', args: ['1'], first: 'postgres' },
  { script: 'dispatch-replay', args: ['1'], first: 'postgres' },
  { script: 'dispatch-skip', args: ['1'], first: 'postgres' },
  { script: 'dispatch-resend', args: ['--acknowledge'], first: 'postgres' },
  { script: 'recover-restore', args: ['--dry-run'], first: 'postgres' },
  { script: 'compare', args: ['--other', 'postgres://nobody@127.0.0.1:1/none'], first: 'postgres' },
  { script: 'dry-run', args: ['--from', '1', '--database', 'postgres://nobody@127.0.0.1:1/none'], first: 'postgres' },
  { script: 'request', args: ['list'], first: 'postgres' },
  { script: 'inject', args: ['examples/sample/2-gate.xml'], first: 'mariadb' },
  { script: 'kafka-tail', args: ['--idle', '1'], first: 'kafka', name: 'kafka:tail' },
];

let pki: Pki;
let pg: SecurePostgres;
let kafka: SecureKafka | undefined;

const cli = (script: string, args: string[], env: Record<string, string>) => run(process.execPath, [`scripts/${script}.ts`, ...args], { env: { ...process.env, ...env }, timeoutMs: 60_000 });

/** The settings of each service with the right password, and each with a wrong one. */
function settings(service: Service, password: string): Record<string, string> {
  const wrong = secretFile(pki.dir, `password-${service}-${password.length}`, password);
  if (service === 'postgres') return { DATABASE_URL: pg.url(), DATABASE_TLS_MODE: 'verify-full', DATABASE_TLS_CA: pki.ca, DATABASE_PASSWORD_FILE: wrong };
  // the machine's MariaDB: its user (root without password, or a local login whose password the URL carries) with another password
  if (service === 'mariadb') return { INBOX_URL: TEST_INBOX_URL.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1@'), INBOX_PASSWORD_FILE: wrong };
  return {
    KAFKA_BROKERS: kafka!.brokers,
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: 'msgx',
    KAFKA_SASL_PASSWORD_FILE: wrong,
    KAFKA_TLS_CA: pki.ca,
  };
}

/** One line on stderr, nothing on stdout: no stack (`    at …`), no error object (`{`), no password. */
function oneLine(name: string, r: { stdout: string; stderr: string }): string {
  const lines = r.stderr.trimEnd().split('\n');
  expect({ name, lines: lines.length, stdout: r.stdout }).toEqual({ name, lines: 1, stdout: '' });
  expect(r.stderr).not.toMatch(/^\s+at |\{|Node\.js v/m);
  expect(r.stderr).not.toContain(PASSWORD);
  return lines[0];
}

beforeAll(async () => {
  pki = makePki(freshDir('pki-cli-errors'));
  [pg, kafka] = await Promise.all([startPostgres(pki, PASSWORD), kafkaAvailable() ? startKafka(pki, PASSWORD) : Promise.resolve(undefined)]);
  if (kafka) {
    const target = resolveKafka(kafka.brokers, { protocol: 'SASL_SSL', mechanism: 'scram-sha-512', username: 'msgx', password: PASSWORD, tls: { ca: pki.ca } }).target;
    await until(
      'the broker answers',
      () =>
        probes
          .kafka(target, 5000)()
          .then(() => true),
      90_000,
    );
  }
}, 180_000);

afterAll(async () => {
  pg?.stop();
  await kafka?.stop();
});

describe('every CLI that connects', () => {
  it('is in this list (each scripts/*.ts that reaches a service first)', () => {
    const connecting = readdirSync(path.join(ROOT, 'scripts'))
      .filter((f) => f.endsWith('.ts') && f !== 'args.ts')
      .filter((f) => /\b(reach|runOperatorCli)\(/.test(readFileSync(path.join(ROOT, 'scripts', f), 'utf8')))
      .map((f) => f.replace(/\.ts$/, ''));
    expect(connecting.sort()).toEqual(CLIS.map((c) => c.script).sort());
  });

  it('the right password gets through (the servers of this test take it)', async () => {
    const r = await cli('migrate', [], { ...testEnv(), ...settings('postgres', PASSWORD) });
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
  }, 60_000);

  it.each(CLIS)(
    '$script: a wrong password is one line naming the service and the setting, exit 1',
    async ({ script, args, first, name = script }) => {
      if (first === 'kafka' && !kafka) return console.warn('SKIPPED(no-kafka-jars): scripts/services resolves them');
      const r = await cli(script, args, { ...testEnv(), ...settings(first, 'not-the-password') });
      const line = oneLine(script, r);
      const expected = {
        postgres: `${name}: postgres: the server refused the user name or password: check DATABASE_PASSWORD / DATABASE_PASSWORD_FILE (and the user in DATABASE_URL)`,
        mariadb: `${name}: mariadb: the server refused the user name or password: check INBOX_PASSWORD / INBOX_PASSWORD_FILE (and the user in INBOX_URL); a user that must use TLS (REQUIRE SSL) is refused like this over plain text (INBOX_TLS_MODE)`,
        kafka: `${name}: kafka: the broker refused the SASL user name or password: check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD_FILE and KAFKA_SASL_MECHANISM`,
      }[first];
      expect({ status: r.status, line }).toEqual({ status: 1, line: expected });
    },
    60_000,
  );

  const CONTRADICTIONS: Record<Service, [Record<string, string>, RegExp]> = {
    postgres: [{ DATABASE_URL: 'postgres://msgx@127.0.0.1:5432/msgx?sslmode=disable', DATABASE_TLS_MODE: 'verify-full' }, /invalid configuration: .*DATABASE_TLS_MODE/],
    mariadb: [{ INBOX_PASSWORD: 'a', INBOX_PASSWORD_FILE: '/dev/null' }, /invalid configuration: INBOX_PASSWORD and INBOX_PASSWORD_FILE are both set: give one/],
    kafka: [{ KAFKA_SECURITY_PROTOCOL: 'PLAINTEXT', KAFKA_TLS_CA: '/dev/null' }, /invalid configuration: KAFKA_TLS_CA ask\(s\) for TLS but the Kafka protocol is PLAINTEXT/],
  };
  it.each(CLIS)(
    '$script: a contradictory setting is one line naming the setting, exit 2',
    async ({ script, args, first, name = script }) => {
      const [env, reason] = CONTRADICTIONS[first];
      const r = await cli(script, args, { ...testEnv(), ...env });
      const line = oneLine(script, r);
      expect({ status: r.status, line }).toEqual({ status: 2, line: expect.stringMatching(new RegExp(`^${name}: ${reason.source}`)) });
    },
    60_000,
  );

  it.each([
    ['a CA that did not sign the server certificate', { DATABASE_TLS_CA: '' }, /migrate: postgres: the server's certificate is not signed by a CA this gateway trusts \(\w+\): check DATABASE_TLS_CA/],
    [
      'a host name the certificate does not name',
      { DATABASE_URL: '' },
      /migrate: postgres: the server's certificate is for another host name .*the host in DATABASE_URL must be one of the certificate's names/,
    ],
    ['no server', { DATABASE_URL: 'postgres://msgx@127.0.0.1:1/msgx_tls' }, /migrate: postgres: no connection \(connect ECONNREFUSED 127\.0\.0\.1:1\): check DATABASE_URL and that the server runs/],
  ])(
    'migrate: %s is one line naming the service and the setting, exit 1',
    async (_what, change, expected) => {
      const env = { ...testEnv(), ...settings('postgres', PASSWORD) };
      if ('DATABASE_TLS_CA' in change) env.DATABASE_TLS_CA = pki.otherCa;
      else if (change.DATABASE_URL === '') env.DATABASE_URL = pg.url().replace('127.0.0.1', 'localhost');
      else Object.assign(env, change);
      const r = await cli('migrate', [], env);
      expect({ status: r.status, line: oneLine('migrate', r) }).toEqual({ status: 1, line: expect.stringMatching(expected) });
    },
    60_000,
  );
});
