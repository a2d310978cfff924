// No secret leaks (docs/operations.md "Production settings"): with a password set for every
// service (from files, and one inside a URL), the SASL password and an API key, real
// processes run against the local services where those credentials fail (MariaDB refuses the
// password, Redis has none configured, the Kafka listener speaks no SASL): their log lines, the
// errors they log, /healthz, /metrics and an api error answer are searched for every secret
// value; so are --help and the output of a real run of every CLI, and a configuration error.
// None may appear (each may appear as *** or not at all).
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_INBOX_URL, TEST_PG_URL, TEST_REDIS_URL, testEnv } from '../support/env.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { sisMessage } from '../support/services.ts';
import { keyLine } from '../../lib/access/keys.ts';

const SECRETS = {
  database: 'LEAK-pg-password-3b9d71',
  databaseUrl: 'LEAK-pg-url-password-8c2e',
  inbox: 'LEAK-inbox-password-51fa0c',
  redis: 'LEAK-redis-password-e07d22',
  kafka: 'LEAK-kafka-sasl-password-94ab',
  token: 'msgxk_LEAK-api-key-0123456789abcdef0123456789',
};
let dir: string;
let env: Record<string, string>;
const procs: Proc[] = [];

const file = (name: string, text: string) => {
  const f = join(dir, name);
  writeFileSync(f, `${text}\n`, { mode: 0o600 });
  return f;
};
const leaks = (text: string) => Object.entries(SECRETS).filter(([, v]) => text.includes(v) || text.includes(encodeURIComponent(v)));

/** The URL without its password (a local login's, docs/decisions.md "Local logins"): this test's own is given as a file. */
const redactedPassword = (url: string) => url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1@');

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'msgx-leak-'));
  env = {
    // Postgres trusts local connections: the password is sent and ignored, so the processes run
    DATABASE_URL: redactedPassword(TEST_PG_URL),
    DATABASE_PASSWORD_FILE: file('pg', SECRETS.database),
    // MariaDB's root has no password here: this one is refused
    INBOX_URL: redactedPassword(TEST_INBOX_URL),
    INBOX_PASSWORD_FILE: file('inbox', SECRETS.inbox),
    // Redis has no password configured: AUTH fails
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PASSWORD_FILE: file('redis', SECRETS.redis),
    // the local listener speaks no SASL
    KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT',
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: 'msgx',
    KAFKA_SASL_PASSWORD_FILE: file('kafka', SECRETS.kafka),
    MSGX_API_TOKEN: '',
    MSGX_API_KEYS_FILE: file('api-keys', keyLine('leak-test', 'admin', SECRETS.token)),
    MSGX_DEV_MODE: 'false',
    MSGX_KAFKA_MSG_TOPIC: 'leak.test.msg',
  };
});

afterAll(async () => {
  await stopAll(procs);
  rmSync(dir, { recursive: true, force: true });
});

describe('no secret in any output', () => {
  it('processes: log lines, /healthz, /metrics and an api error answer', async () => {
    const ps = ['api', 'pump', 'msg-dispatch'].map((n) => startWorker(n, { ...env, MSGX_LOG_LEVEL: 'debug' }));
    procs.push(...ps);
    const bodies: string[] = [];
    for (const p of ps) {
      // each names the service it cannot use (the credentials were sent and refused)
      await waitFor(
        `${p.name} /healthz 503`,
        async () => {
          const r = await fetch(`http://127.0.0.1:${p.port}/healthz`).catch(() => null);
          if (r?.status !== 503) return false;
          bodies.push(await r.text());
          return true;
        },
        40_000,
        250,
      );
      bodies.push(await (await fetch(`http://127.0.0.1:${p.port}/metrics`)).text());
    }
    const api = ps[0];
    const sent = await fetch(`http://127.0.0.1:${api.port}/cminmsgs/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.token}`, 'content-type': 'application/xml' },
      body: sisMessage(),
    });
    expect(sent.status).toBeGreaterThanOrEqual(500);
    bodies.push(await sent.text());
    const denied = await fetch(`http://127.0.0.1:${api.port}/ops/states`, { headers: { authorization: 'Bearer wrong-token' } });
    bodies.push(await denied.text());
    await new Promise((r) => setTimeout(r, 3000));
    const logs = ps.flatMap((p) => p.logs).join('\n');
    // the failures were logged (this is no test of an empty log)
    expect(logs).toMatch(/mariadb: the server refused the user name or password/);
    expect(logs).toMatch(/redis/);
    expect(leaks(logs)).toEqual([]);
    expect(leaks(bodies.join('\n'))).toEqual([]);
    await stopAll(ps);
  }, 120_000);

  const CLIS: [string, string[]][] = [
    ['migrate', []],
    ['inject', ['<file>']],
    ['replay', ['--state', 'DEAD', '--reason', 'EXHAUSTED', '--force']],
    ['backfill-resume', ['1']],
    ['dispatch-replay', ['999999']],
    ['dispatch-skip', ['999999']],
    ['recover-restore', ['--dry-run']],
    ['request', ['rqrd', 'SLST']],
    ['kafka-tail', ['--idle', '2']],
    ['healthcheck', ['pump']],
  ];

  // side by side (vitest's maxConcurrency at a time): each CLI run is a process of its own
  it.concurrent.each(CLIS)(
    'the %s CLI: --help, a run that meets a refused credential, and an unknown option',
    async (cli, args) => {
      const run = (a: string[], extra: Record<string, string> = {}) =>
        new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) =>
          execFile(
            process.execPath,
            [`scripts/${cli}.ts`, ...a.map((x) => (x === '<file>' ? file('msg.xml', sisMessage()) : x))],
            { env: { ...process.env, ...testEnv({ ...env, ...extra }) }, encoding: 'utf8', timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
            (err, stdout, stderr) => resolve({ status: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }),
          ),
        );
      const outputs = [
        await run(['--help']),
        await run(args),
        await run(args, { DATABASE_PASSWORD_FILE: '', DATABASE_URL: TEST_PG_URL.replace('postgres@', `postgres:${SECRETS.databaseUrl}@`) }),
        await run(['--no-such-option']),
      ];
      expect(outputs[0].status).toBe(0);
      for (const o of outputs) expect(leaks(`${o.stdout}\n${o.stderr}`)).toEqual([]);
    },
    120_000,
  );

  it('a configuration error names the setting, never the value of a secret', () => {
    const r = spawnSync(process.execPath, ['workers/pump.ts'], {
      env: { ...process.env, ...testEnv({ ...env, MSGX_PIPELINE_CLAIM_BATCH: 'x', DATABASE_PASSWORD_FILE: '', DATABASE_URL: `postgres://u:${SECRETS.databaseUrl}@h:notaport/x` }) },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('msgx.pipeline.claim-batch');
    expect(leaks(r.stdout + r.stderr)).toEqual([]);
  });
});
