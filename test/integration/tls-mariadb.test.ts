// The AODB inbox (CMINMSGS) on MariaDB over TLS (docs/operations.md "Production settings"): a
// mariadbd started by this test (.local/tls/mariadb, its own port) with
// require_secure_transport=ON and user msgx REQUIRE SSL with a password; a CA and certificates
// made with openssl. The real inject CLI writes a snapshot into it, the real intake, pump and
// backfill take it (INBOX_TLS_MODE=verify-full, INBOX_TLS_CA, INBOX_PASSWORD_FILE): the message
// ends SUCCEEDED and its processing time is written back into the secured inbox. Each bad
// configuration: intake's /healthz 503 names mariadb and the setting, a few log lines, nothing
// taken, processed or DEAD; a contradiction is refused at start.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveMysql } from '../../lib/core/connections.ts';
import { createAodbPool, type Inbox } from '../../lib/db/mysql.ts';
import { TEST_INBOX_URL } from '../support/env.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { freshDir, makePki, secretFile, startMariadb, type Pki, type SecureMariadb } from '../support/tls.ts';

const PASSWORD = 'mariadb-Secret-5d1c8e2a';
let pki: Pki;
let server: SecureMariadb;
let s: TestServices;
let inbox: Inbox;
let env: Record<string, string>;
const procs: Proc[] = [];

beforeAll(async () => {
  pki = makePki(freshDir('pki-mariadb'));
  server = await startMariadb(pki, PASSWORD);
  env = { INBOX_URL: server.url, INBOX_PASSWORD_FILE: secretFile(pki.dir, 'inbox-password', PASSWORD), INBOX_TLS_MODE: 'verify-full', INBOX_TLS_CA: pki.ca };
  inbox = createAodbPool(resolveMysql(server.url, { password: PASSWORD, tls: { mode: 'verify-full', ca: pki.ca } }).target, { timeoutMs: 5000 });
  s = await openServices();
  await resetPipeline(s);
  await resetDomain(s);
}, 180_000);

afterAll(async () => {
  await stopAll(procs);
  await inbox?.end().catch(() => {});
  await s?.close();
  await server?.stop();
});

async function healthz(p: Proc) {
  const res = await fetch(`http://127.0.0.1:${p.port}/healthz`, { signal: AbortSignal.timeout(2000) });
  return { status: res.status, body: (await res.json()) as { reason?: string; dependencies: Record<string, { up: boolean; reason: string | null }> } };
}
const errorLines = (p: Proc) => p.logs.filter((l) => /"level":(50|60)/.test(l));
const processed = async () => {
  const [rows] = await inbox.query<import('mysql2').RowDataPacket[]>('SELECT CMINMSGS_ID id, CMINMSGS_DATE_PROCESSED p FROM cminmsgs ORDER BY CMINMSGS_ID');
  return rows.map((r) => ({ id: Number(r.id), processed: r.p !== null }));
};

describe('the inbox on MariaDB with TLS required', () => {
  it('inject writes into the secured inbox; intake, pump and backfill take the snapshot and write the processing time back', async () => {
    const file = join(pki.dir, 'snapshot.xml');
    writeFileSync(file, bigSnapshot(2, 8001));
    const r = spawnSync(process.execPath, ['scripts/inject.ts', file], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout + r.stderr).not.toContain(PASSWORD);
    expect(await processed()).toEqual([{ id: 1, processed: false }]);
    const ps = ['intake', 'pump', 'backfill'].map((n) => startWorker(n, env));
    procs.push(...ps);
    try {
      await waitFor('snapshot applied', async () => (await procRows(s.db))[0]?.state === 'SUCCEEDED', 60_000, 200);
      await waitFor('processing time written back into the secured inbox', async () => (await processed())[0]?.processed, 30_000, 250);
      for (const p of ps) {
        expect((await healthz(p)).status).toBe(200);
        expect(p.logs.find((l) => l.includes(`${p.name} starting`))).toContain('"mariadb":"verify-full"');
        expect(p.logs.join('\n')).not.toContain(PASSWORD);
      }
    } finally {
      await stopAll(ps);
    }
  }, 120_000);

  const BAD: [string, () => Record<string, string>, RegExp][] = [
    ['a wrong CA', () => ({ INBOX_TLS_CA: pki.otherCa }), /mariadb: the server's certificate is not signed by a CA this gateway trusts .*INBOX_TLS_CA/],
    ['a certificate for another host name', () => ({ INBOX_URL: server.url.replace('127.0.0.1', 'localhost') }), /mariadb: the server's certificate is for another host name .*INBOX_URL/],
    ['a wrong password', () => ({ INBOX_PASSWORD_FILE: secretFile(pki.dir, 'wrong-password', 'not-the-password') }), /mariadb: the server refused the user name or password: check INBOX_PASSWORD/],
    [
      'plain text to a server that requires TLS',
      () => ({ INBOX_TLS_MODE: '', INBOX_TLS_CA: '' }),
      /mariadb: .*a user that must use TLS \(REQUIRE SSL\) is refused like this over plain text \(INBOX_TLS_MODE\)/,
    ],
    ['TLS to a server that does not speak it', () => ({ INBOX_URL: TEST_INBOX_URL, INBOX_PASSWORD_FILE: '' }), /mariadb: the server does not speak TLS/],
  ];

  // These cases run side by side: each intake's dependency check has a connection of its own (the
  // leader lock decides only who takes rows, and none is taken), and each watches its own log lines.
  it.concurrent.each(BAD)(
    '%s: intake /healthz 503 names mariadb and the setting; nothing taken, processed or DEAD',
    async (_what, bad, reason) => {
      const before = (await procRows(s.db)).length;
      await putInbox(inbox, sisMessage());
      const p = startWorker('intake', { ...env, ...bad() });
      procs.push(p);
      try {
        const h = await waitFor('/healthz 503', async () => {
          const x = await healthz(p).catch(() => null);
          return x?.status === 503 && x.body.dependencies.mariadb?.up === false && x;
        });
        expect(h.body.dependencies.mariadb.reason).toMatch(reason);
        const lines = errorLines(p).length;
        await new Promise((r) => setTimeout(r, 8000));
        expect(p.child.exitCode).toBeNull();
        expect(errorLines(p).length - lines).toBeLessThanOrEqual(2);
        const rows = await procRows(s.db);
        expect(rows.length).toBe(before);
        expect(rows.filter((r) => r.state === 'DEAD')).toEqual([]);
        expect((await processed()).filter((r) => r.processed).length).toBe(1);
        expect(p.logs.join('\n')).not.toContain(PASSWORD);
      } finally {
        await stopAll([p]);
      }
    },
    60_000,
  );

  it('an expired server certificate: /healthz names it; a good one again and intake takes the waiting rows', async () => {
    server.useCert(pki.expired);
    const p = startWorker('intake', env);
    procs.push(p);
    try {
      const h = await waitFor('/healthz 503', async () => {
        const x = await healthz(p).catch(() => null);
        return x?.status === 503 && x.body.dependencies.mariadb?.up === false && x;
      });
      expect(h.body.dependencies.mariadb.reason).toMatch(/mariadb: the server's certificate has expired/);
      server.useCert(pki.server);
      const ids = (await processed()).map((r) => r.id);
      await waitFor('every inbox row taken', async () => (await procRows(s.db)).length === ids.length, 60_000, 250);
      expect((await procRows(s.db)).filter((r) => r.state === 'DEAD')).toEqual([]);
    } finally {
      server.useCert(pki.server);
      await stopAll([p]);
    }
  }, 90_000);

  it.each([
    ['the URL says plain text', () => ({ INBOX_URL: 'mysql://msgx@127.0.0.1:1/aodbinterface?ssl-mode=DISABLED' }), /INBOX_TLS_MODE=verify-full contradicts INBOX_URL, which says plain text/],
    ['a CA with TLS off', () => ({ INBOX_TLS_MODE: 'disable' }), /INBOX_TLS_CA ask\(s\) for TLS but INBOX_URL says plain text/],
    ['a password twice', () => ({ INBOX_PASSWORD: 'x1y2z3w4' }), /INBOX_PASSWORD and INBOX_PASSWORD_FILE are both set: give one/],
    ['a certificate without its key', () => ({ INBOX_TLS_CERT: pki.client.cert }), /INBOX_TLS_CERT and INBOX_TLS_KEY go together/],
  ] as [string, () => Record<string, string>, RegExp][])('a contradiction is refused at start: %s', (_what, bad, message) => {
    const r = spawnSync(process.execPath, ['workers/intake.ts'], { env: { ...process.env, ...env, ...bad() }, encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toContain(PASSWORD);
  });
});
