// `npm run compare` and `npm run dry-run` reach their databases and the inbox with the same
// connection settings as the processes (docs/operations.md "Production settings"): a Postgres
// and a MariaDB started by this test that take TLS connections only, the password of each from a
// file (DATABASE_PASSWORD_FILE, INBOX_PASSWORD_FILE), verify-full with the test's CA. Given the
// bare URLs, as before, both commands connected in plain text and were refused by the servers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMysql } from '../../lib/core/connections.ts';
import { createAodbPool, type Inbox } from '../../lib/db/mysql.ts';
import { runCli } from '../support/processes.ts';
import { putInbox, sisMessage } from '../support/services.ts';
import { freshDir, makePki, secretFile, startMariadb, startPostgres, type Pki, type SecureMariadb, type SecurePostgres } from '../support/tls.ts';

const PG_PASSWORD = 'pg-Compare-4b8e21';
const MY_PASSWORD = 'my-Compare-9c1f73';
let pki: Pki;
let pg: SecurePostgres;
let my: SecureMariadb;
let inbox: Inbox;
let env: Record<string, string | undefined>;

beforeAll(async () => {
  pki = makePki(freshDir('pki-compare'));
  pg = await startPostgres(pki, PG_PASSWORD);
  my = await startMariadb(pki, MY_PASSWORD);
  for (const db of ['msgx_other', 'msgx_scratch']) pg.psql(`create database ${db} owner msgx`);
  env = {
    ...process.env,
    MSGX_DEV_MODE: 'false',
    MSGX_API_TOKEN: '',
    MSGX_LOG_LEVEL: 'warn',
    DATABASE_URL: pg.url(),
    DATABASE_PASSWORD_FILE: secretFile(pki.dir, 'database-password', PG_PASSWORD),
    DATABASE_TLS_MODE: 'verify-full',
    DATABASE_TLS_CA: pki.ca,
    INBOX_URL: my.url,
    INBOX_PASSWORD_FILE: secretFile(pki.dir, 'inbox-password', MY_PASSWORD),
    INBOX_TLS_MODE: 'verify-full',
    INBOX_TLS_CA: pki.ca,
  };
  for (const db of ['msgx_tls', 'msgx_other']) {
    const r = await runCli(process.execPath, ['scripts/migrate.ts'], { ...env, DATABASE_URL: pg.url(db) });
    expect(r.code, r.err).toBe(0);
  }
  inbox = createAodbPool(resolveMysql(my.url, { password: MY_PASSWORD, tls: { mode: 'verify-full', ca: pki.ca } }).target, { timeoutMs: 5000 });
  await putInbox(inbox, sisMessage());
}, 180_000);

afterAll(async () => {
  await inbox?.end().catch(() => {});
  pg?.stop();
  await my?.stop();
});

describe('the CLIs that compare installations use the connection settings', () => {
  it('npm run compare: both databases over TLS with the password file; the other URL gets the same settings', async () => {
    const r = await runCli('npm', ['run', '-s', 'compare', '--', '--other', pg.url('msgx_other'), '--wait', '1s'], env);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^compared at inbox position \d+/);
    expect(r.out + r.err).not.toContain(PG_PASSWORD);
  }, 60_000);

  it('npm run dry-run: the live database, the scratch database and the inbox over TLS with the password files', async () => {
    const r = await runCli('npm', ['run', '-s', 'dry-run', '--', '--from', '1', '--to', '1', '--database', pg.url('msgx_scratch')], env);
    expect(r.err).not.toMatch(/could not compare|pg_hba|SSL|TLS|refused|password/i);
    expect([0, 1]).toContain(r.code); // compared (equal or not): every connection was made
    expect(r.err).toContain('dry-run: applying 1 message(s) 1..1 into postgres://msgx@127.0.0.1');
    expect(r.out).toMatch(/^compared at inbox position \d+/);
  }, 120_000);

  it('a plain-text URL off loopback for --other is refused outside development mode, naming the setting', async () => {
    const r = await runCli('npm', ['run', '-s', 'compare', '--', '--other', 'postgres://msgx@db.airport.example/msgx?sslmode=disable'], env);
    expect(r.code).toBe(2);
    expect(r.err).toContain('postgres: --other reaches db.airport.example in plain text');
    expect(r.err).toContain('MSGX_ALLOW_PLAINTEXT=postgres');
  });
});
