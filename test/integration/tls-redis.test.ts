// Redis over TLS with an ACL user (docs/operations.md "Production settings"): a redis-server
// started by this test (.local/tls/redis, its own port) that listens with TLS only, the default
// user switched off and user msgx with a password; a CA and certificates made with openssl. The
// real intake and pump run with REDIS_URL=rediss://…, REDIS_USERNAME, REDIS_PASSWORD_FILE and
// REDIS_TLS_CA: a snapshot from the inbox ends SUCCEEDED and its flights are in the secured Redis.
// Each bad configuration: the pump's /healthz 503 names redis and the setting, a few log lines,
// and the waiting message is neither applied nor DEAD; a contradiction is refused at start.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRedis } from '../../lib/core/connections.ts';
import { createRedis } from '../../lib/db/redis.ts';
import { TEST_REDIS_URL } from '../support/env.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';
import { freshDir, makePki, secretFile, startRedis, type Pki, type SecureRedis } from '../support/tls.ts';

const PASSWORD = 'redis-Secret-42b7e0d9';
let pki: Pki;
let server: SecureRedis;
let s: TestServices;
let env: Record<string, string>;
const procs: Proc[] = [];

beforeAll(async () => {
  pki = makePki(freshDir('pki-redis'));
  server = await startRedis(pki, PASSWORD);
  env = { REDIS_URL: server.url, REDIS_USERNAME: 'msgx', REDIS_PASSWORD_FILE: secretFile(pki.dir, 'redis-password', PASSWORD), REDIS_TLS_CA: pki.ca };
  s = await openServices();
  await resetPipeline(s);
  await resetDomain(s);
}, 120_000);

afterAll(async () => {
  await stopAll(procs);
  await s?.close();
  await server?.stop();
});

async function healthz(p: Proc) {
  const res = await fetch(`http://127.0.0.1:${p.port}/healthz`, { signal: AbortSignal.timeout(2000) });
  return { status: res.status, body: (await res.json()) as { reason?: string; dependencies: Record<string, { up: boolean; reason: string | null }> } };
}
const errorLines = (p: Proc) => p.logs.filter((l) => /"level":(50|60)/.test(l));

describe('Redis with TLS and an ACL user', () => {
  it('a snapshot from the inbox is applied by the real pump and mirrored into the secured Redis', async () => {
    await putInbox(s.inbox, bigSnapshot(3, 7001));
    const intake = startWorker('intake', env);
    const pump = startWorker('pump', env);
    procs.push(intake, pump);
    try {
      await waitFor('snapshot applied', async () => (await procRows(s.db))[0]?.state === 'SUCCEEDED', 60_000, 200);
      const r = createRedis(resolveRedis(server.url, { username: 'msgx', password: PASSWORD, tls: { ca: pki.ca } }).target, 5000);
      try {
        await waitFor('a client of the secured Redis', () => r.status === 'ready');
        expect(await r.exists('msgx:flight:7001', 'msgx:flight:7002', 'msgx:flight:7003')).toBe(3);
      } finally {
        r.disconnect();
      }
      expect((await healthz(pump)).status).toBe(200);
      expect(pump.logs.find((l) => l.includes('pump starting'))).toContain('"redis":"verify-full"');
      expect(pump.logs.join('\n')).not.toContain(PASSWORD);
    } finally {
      await stopAll([pump]);
    }
  }, 90_000);

  const BAD: [string, () => Record<string, string>, RegExp][] = [
    ['a wrong CA', () => ({ REDIS_TLS_CA: pki.otherCa }), /redis: the server's certificate is not signed by a CA this gateway trusts .*REDIS_TLS_CA/],
    ['a certificate for another host name', () => ({ REDIS_URL: server.url.replace('127.0.0.1', 'localhost') }), /redis: the server's certificate is for another host name .*REDIS_URL/],
    ['a wrong password', () => ({ REDIS_PASSWORD_FILE: secretFile(pki.dir, 'wrong-password', 'not-the-password') }), /redis: the server refused the user name or password: check REDIS_PASSWORD/],
    [
      'no credentials (the default user is off)',
      () => ({ REDIS_USERNAME: '', REDIS_PASSWORD_FILE: '' }),
      /redis: the server requires a user name and password|redis: the server refused the user name or password/,
    ],
    [
      'TLS to a server that does not speak it',
      () => ({ REDIS_URL: TEST_REDIS_URL.replace('redis://', 'rediss://'), REDIS_USERNAME: '', REDIS_PASSWORD_FILE: '' }),
      /redis connect did not answer .*no answer to the TLS handshake \(the server may not speak TLS on this port: check REDIS_URL/,
    ],
  ];

  // These cases run side by side: each pump's dependency check has a connection of its own (the
  // leader lock decides only who applies, and nothing can be), and each watches its own log lines.
  it.concurrent.each(BAD)(
    '%s: the pump /healthz 503 names redis and the setting; the waiting message is neither applied nor DEAD',
    async (_what, bad, reason) => {
      await putInbox(s.inbox, bigSnapshot(1, 7100 + Math.floor(Math.random() * 800)));
      const pump = startWorker('pump', { ...env, ...bad() });
      procs.push(pump);
      try {
        const h = await waitFor('/healthz 503', async () => {
          const x = await healthz(pump).catch(() => null);
          return x?.status === 503 && x.body.dependencies.redis?.up === false && x;
        });
        expect(h.body.dependencies.redis.reason).toMatch(reason);
        const before = errorLines(pump).length;
        await new Promise((r) => setTimeout(r, 8000));
        // an exit here is a crash the assertion alone would not explain: its last lines go to the output
        if (pump.child.exitCode !== null) console.error(`[tls-redis] the pump exited (${pump.child.exitCode}):\n${pump.logs.slice(-15).join('\n')}`);
        expect(pump.child.exitCode).toBeNull();
        expect(errorLines(pump).length - before).toBeLessThanOrEqual(2);
        const rows = await procRows(s.db);
        expect(rows.filter((r) => r.state === 'DEAD')).toEqual([]);
        // the first snapshot (applied before) is the only SUCCEEDED one
        expect(rows.filter((r) => r.state === 'SUCCEEDED').length).toBe(1);
        expect(pump.logs.join('\n')).not.toContain(PASSWORD);
      } finally {
        await stopAll([pump]);
      }
    },
    60_000,
  );

  it('an expired server certificate: /healthz names it; a good one again and the held messages are applied', async () => {
    await server.useCert(pki.expired);
    const pump = startWorker('pump', env);
    procs.push(pump);
    try {
      const h = await waitFor('/healthz 503', async () => {
        const x = await healthz(pump).catch(() => null);
        return x?.status === 503 && x.body.dependencies.redis?.up === false && x;
      });
      expect(h.body.dependencies.redis.reason).toMatch(/redis: the server's certificate has expired/);
      await server.useCert(pki.server);
      await waitFor('every held message applied', async () => (await procRows(s.db)).every((r) => r.state === 'SUCCEEDED'), 60_000, 250);
      expect((await procRows(s.db)).filter((r) => r.state === 'DEAD')).toEqual([]);
    } finally {
      await server.useCert(pki.server);
      await stopAll([pump]);
    }
  }, 90_000);

  it.each([
    [{ REDIS_URL: 'redis://127.0.0.1:1/0' }, /REDIS_TLS_CA ask\(s\) for TLS but REDIS_URL says plain text \(redis:\/\/; rediss:\/\/ is TLS\)/],
    [{ REDIS_TLS_MODE: 'disable' }, /REDIS_TLS_MODE=disable contradicts REDIS_URL, which says TLS/],
    [{ REDIS_PASSWORD: 'x1y2z3w4', REDIS_URL: `rediss://msgx:inline-pw@127.0.0.1:1/0` }, /REDIS_PASSWORD_FILE is the safer one|REDIS_PASSWORD and REDIS_PASSWORD_FILE are both set/],
  ])('a contradiction is refused at start: %o', (bad, message) => {
    const r = spawnSync(process.execPath, ['workers/pump.ts'], { env: { ...process.env, ...env, ...bad }, encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toContain(PASSWORD);
    expect(r.stderr).not.toContain('inline-pw');
  });
});
