// Postgres over TLS (docs/operations.md "Production settings"): a Postgres 15 started by this test
// (.local/tls/postgres, its own port) that accepts TCP connections only with TLS (hostssl),
// scram-sha-256 for user msgx and certificate authentication for user certuser; a CA and
// certificates made with openssl. The real migrate CLI and the real intake process (leader
// lock, pool, graphile-worker, readiness check) run against it with DATABASE_TLS_MODE=verify-full,
// DATABASE_TLS_CA and DATABASE_PASSWORD_FILE, and take an inbox row into PROC_STATE over TLS.
// Each bad configuration ends as described: /healthz 503 naming postgres, the setting to look at,
// a few log lines (no flood), the process alive and retrying; a contradiction is refused at start.
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePostgres } from '../../lib/core/connections.ts';
import { connectClient } from '../../lib/db/postgres.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, putInbox, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { freshDir, makePki, secretFile, startPostgres, type Pki, type SecurePostgres } from '../support/tls.ts';

const PASSWORD = 'pg-Secret-7f3a9c1e';
let pki: Pki;
let server: SecurePostgres;
let s: TestServices;
let env: Record<string, string>;
const procs: Proc[] = [];
/**
 * A server that speaks Postgres's protocol only in plain text: it declines every SSLRequest ('N'),
 * as a Postgres with ssl = off does (the machine's own Postgres may have TLS on: Debian's default).
 */
let plainOnly: net.Server;
const plainOnlyUrl = () => `postgres://msgx@127.0.0.1:${(plainOnly.address() as net.AddressInfo).port}/msgx`;

beforeAll(async () => {
  plainOnly = net.createServer((c) => {
    c.on('error', () => {});
    c.on('data', (b: Buffer) => {
      if (b.length === 8 && b.readInt32BE(4) === 80_877_103) c.write('N');
      else c.end();
    });
  });
  await new Promise<void>((resolve) => plainOnly.listen(0, '127.0.0.1', () => resolve()));
  pki = makePki(freshDir('pki-postgres'), 'certuser');
  server = await startPostgres(pki, PASSWORD);
  env = {
    DATABASE_URL: server.url(),
    DATABASE_PASSWORD_FILE: secretFile(pki.dir, 'database-password', PASSWORD),
    DATABASE_TLS_MODE: 'verify-full',
    DATABASE_TLS_CA: pki.ca,
  };
  s = await openServices();
  await resetPipeline(s);
}, 120_000);

afterAll(async () => {
  await stopAll(procs);
  await s?.close();
  server?.stop();
  plainOnly?.close();
});

/** The settings resolved as the gateway resolves them, for the test's own checks. */
const target = () => resolvePostgres(server.url(), { password: PASSWORD, tls: { mode: 'verify-full', ca: pki.ca } }).target;

async function healthz(p: Proc) {
  const res = await fetch(`http://127.0.0.1:${p.port}/healthz`, { signal: AbortSignal.timeout(2000) });
  return { status: res.status, body: (await res.json()) as { reason?: string; dependencies: Record<string, { up: boolean; reason: string | null }> } };
}

const errorLines = (p: Proc) => p.logs.filter((l) => /"level":(50|60)/.test(l));

describe('Postgres with TLS required', () => {
  it('the migrate CLI migrates over TLS with the password from a file; its output shows no secret', () => {
    const r = spawnSync(process.execPath, ['scripts/migrate.ts'], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`migrated postgres://msgx@127.0.0.1:${server.port}/msgx_tls`);
    expect(r.stdout + r.stderr).not.toContain(PASSWORD);
  });

  it('the intake process takes an inbox row into PROC_STATE over TLS; every connection of it is encrypted', async () => {
    const id = await putInbox(s.inbox, sisMessage());
    const p = startWorker('intake', env);
    procs.push(p);
    const c = await connectClient(target(), 'tls-test');
    try {
      await waitFor('the row in PROC_STATE of the TLS Postgres', async () => (await c.query('select state from proc_state where msg_id = $1', [id])).rowCount === 1, 30_000, 250);
      expect((await healthz(p)).status).toBe(200);
      const conns = await c.query<{ app: string; ssl: boolean }>(
        "select a.application_name app, s.ssl from pg_stat_activity a join pg_stat_ssl s using (pid) where a.application_name like 'msgx-intake%' or a.application_name like 'msgx-watch%'",
      );
      expect(conns.rows.length).toBeGreaterThan(0);
      expect(conns.rows.filter((r) => !r.ssl)).toEqual([]);
      // the TLS state of every service is logged at start, never the password
      expect(p.logs.find((l) => l.includes('intake starting'))).toContain('"postgres":"verify-full"');
      expect(p.logs.join('\n')).not.toContain(PASSWORD);
    } finally {
      await c.end();
      await stopAll([p]);
    }
  }, 60_000);

  it('a client certificate (mutual TLS) authenticates user certuser', async () => {
    const t = resolvePostgres(server.url().replace('msgx@', 'certuser@'), { tls: { mode: 'verify-full', ca: pki.ca, cert: pki.client.cert, key: pki.client.key } });
    expect(t.problems).toEqual([]);
    const c = await connectClient(t.target, 'tls-cert');
    try {
      expect((await c.query('select current_user u, (select ssl from pg_stat_ssl where pid = pg_backend_pid()) ssl')).rows[0]).toEqual({ u: 'certuser', ssl: true });
    } finally {
      await c.end();
    }
  });

  const BAD: [string, () => Record<string, string>, RegExp][] = [
    ['a wrong CA', () => ({ DATABASE_TLS_CA: pki.otherCa }), /postgres: the server's certificate is not signed by a CA this gateway trusts .*DATABASE_TLS_CA/],
    ['a certificate for another host name', () => ({ DATABASE_URL: server.url().replace('127.0.0.1', 'localhost') }), /postgres: the server's certificate is for another host name .*DATABASE_URL/],
    [
      'a wrong password',
      () => ({ DATABASE_PASSWORD_FILE: secretFile(pki.dir, 'wrong-password', 'not-the-password') }),
      /postgres: the server refused the user name or password: check DATABASE_PASSWORD/,
    ],
    ['plain text to a server that requires TLS', () => ({ DATABASE_TLS_MODE: '', DATABASE_TLS_CA: '' }), /postgres: the server requires TLS .*DATABASE_TLS_MODE=verify-full/],
    ['TLS to a server that does not speak it', () => ({ DATABASE_URL: plainOnlyUrl(), DATABASE_PASSWORD_FILE: '' }), /postgres: the server does not speak TLS/],
  ];

  // These cases (and the api's next) run side by side: each process reaches no Postgres at all
  // (so no leader lock or row is shared), and the TLS server is only read; each one watches its own
  // process's log lines for 8 s.
  it.concurrent.each(BAD)(
    '%s: /healthz 503 names postgres and the setting, a few log lines, still running and retrying',
    async (_what, bad, reason) => {
      const p = startWorker('intake', { ...env, ...bad() });
      procs.push(p);
      try {
        const h = await waitFor('/healthz 503', async () => {
          const x = await healthz(p).catch(() => null);
          return x?.status === 503 && x.body.dependencies.postgres?.up === false && x;
        });
        expect(h.body.dependencies.postgres.up).toBe(false);
        expect(h.body.dependencies.postgres.reason).toMatch(reason);
        expect(h.body.reason).toMatch(reason);
        const before = errorLines(p).length;
        await new Promise((r) => setTimeout(r, 8000));
        // retrying (the process is alive, its leader loop and checks go on) without a line per attempt
        expect(p.child.exitCode).toBeNull();
        expect(errorLines(p).length - before).toBeLessThanOrEqual(1);
        expect(errorLines(p).length).toBeLessThanOrEqual(4);
        expect(p.logs.some((l) => reason.test(l))).toBe(true);
        expect(p.logs.join('\n')).not.toContain(PASSWORD);
      } finally {
        await stopAll([p]);
      }
    },
    60_000,
  );

  it.concurrent('a process without a leader lock (api) with a wrong CA: /healthz 503 names it, the runner is retried, no exit', async () => {
    const p = startWorker('api', { ...env, DATABASE_TLS_CA: pki.otherCa });
    procs.push(p);
    try {
      const h = await waitFor('/healthz 503', async () => {
        const x = await healthz(p).catch(() => null);
        return x?.status === 503 && x.body.dependencies.postgres?.up === false && x;
      });
      expect(h.body.dependencies.postgres.reason).toMatch(/DATABASE_TLS_CA/);
      await new Promise((r) => setTimeout(r, 6000));
      expect(p.child.exitCode).toBeNull();
      expect(errorLines(p).length).toBeLessThanOrEqual(4);
    } finally {
      await stopAll([p]);
    }
  }, 60_000);

  it('an expired server certificate: /healthz names it; back to a good one, the process recovers by itself', async () => {
    server.useCert(pki.expired);
    const p = startWorker('intake', env);
    procs.push(p);
    try {
      const h = await waitFor('/healthz 503', async () => {
        const x = await healthz(p).catch(() => null);
        return x?.status === 503 && x.body.dependencies.postgres?.up === false && x;
      });
      expect(h.body.dependencies.postgres.reason).toMatch(/postgres: the server's certificate has expired/);
      server.useCert(pki.server);
      await waitFor('/healthz 200 again', async () => (await healthz(p).catch(() => null))?.status === 200, 30_000, 250);
    } finally {
      server.useCert(pki.server);
      await stopAll([p]);
    }
  }, 60_000);

  it.each([
    [{ DATABASE_URL: 'postgres://msgx@127.0.0.1:1/x?sslmode=disable', DATABASE_TLS_MODE: 'verify-full' }, /DATABASE_TLS_MODE=verify-full contradicts DATABASE_URL, which says plain text/],
    [{ DATABASE_TLS_MODE: '', DATABASE_TLS_CA: '/nonexistent/ca.pem' }, /DATABASE_TLS_CA ask\(s\) for TLS but DATABASE_URL says plain text/],
    [{ DATABASE_URL: 'postgres://msgx@127.0.0.1:1/x?sslmode=require', DATABASE_TLS_MODE: '' }, /sslmode=require, which does not verify the server's certificate/],
    [{ DATABASE_TLS_CA: '/nonexistent/ca.pem' }, /DATABASE_TLS_CA=\/nonexistent\/ca.pem: cannot be read \(ENOENT\)/],
  ])('a contradiction or an unreadable file is refused at start: %o', (bad, message) => {
    const r = spawnSync(process.execPath, ['workers/intake.ts'], { env: { ...process.env, ...env, ...bad }, encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toContain(PASSWORD);
  });
});
