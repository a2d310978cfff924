// Redis behind Sentinel, secured (docs/operations.md "Production settings"): a master that takes
// TLS only with an ACL user, and a Sentinel that also takes TLS only and wants a password (its
// `requirepass`), both started by this test with its CA. The gateway asks the Sentinel over TLS
// with REDIS_SENTINEL_PASSWORD for the master, then reaches the master over TLS with its own
// user: the client of lib/db/redis.ts, and the real pump process whose /healthz says Redis is up.
// Before, the Sentinel was asked in plain text without a login: both are refused here.
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, targets } from '../../lib/core/config.ts';
import { createRedis, newRedis, redisReady } from '../../lib/db/redis.ts';
import { freePort } from '../support/ports.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, resetPipeline, type TestServices } from '../support/services.ts';
import { freshDir, makePki, secretFile, until, type Pki } from '../support/tls.ts';

const MASTER_PW = 'master-Pw-58e1c0';
const SENTINEL_PW = 'sentinel-Pw-7d2a94';
let pki: Pki;
let dir: string;
let masterPort: number;
let sentinelPort: number;
const children: ChildProcess[] = [];
const procs: Proc[] = [];
let s: TestServices;
let env: Record<string, string>;

const tls = () => [`tls-cert-file ${pki.server.cert}`, `tls-key-file ${pki.server.key}`, `tls-ca-cert-file ${pki.ca}`, 'tls-auth-clients no', 'bind 127.0.0.1', 'port 0'];

function start(name: string, lines: string[], sentinel = false): void {
  const conf = join(dir, `${name}.conf`);
  writeFileSync(conf, `${[...lines, `dir ${dir}`, `logfile ${join(dir, `${name}.log`)}`].join('\n')}\n`, { mode: 0o600 });
  const child = spawn('redis-server', [conf, ...(sentinel ? ['--sentinel'] : [])], { stdio: 'ignore' });
  children.push(child);
}

beforeAll(async () => {
  dir = freshDir('redis-sentinel-tls');
  pki = makePki(freshDir('pki-redis-sentinel'));
  masterPort = await freePort();
  sentinelPort = await freePort();
  start('master', [...tls(), `tls-port ${masterPort}`, 'save ""', 'appendonly no', 'user default off', `user msgx on >${MASTER_PW} ~* &* +@all`]);
  start(
    'sentinel',
    [
      ...tls(),
      `tls-port ${sentinelPort}`,
      'tls-replication yes', // the Sentinel reaches the master over TLS too
      `requirepass ${SENTINEL_PW}`,
      'sentinel monitor mymaster 127.0.0.1 ' + `${masterPort} 1`,
      'sentinel auth-user mymaster msgx',
      `sentinel auth-pass mymaster ${MASTER_PW}`,
      'sentinel down-after-milliseconds mymaster 5000',
    ],
    true,
  );
  s = await openServices();
  await resetPipeline(s);
  env = {
    REDIS_URL: 'rediss://127.0.0.1:1/0', // in Sentinel mode the host is not used: the Sentinel names the master
    REDIS_USERNAME: 'msgx',
    REDIS_PASSWORD_FILE: secretFile(dir, 'redis-password', MASTER_PW),
    REDIS_TLS_CA: pki.ca,
    REDIS_SENTINELS: `127.0.0.1:${sentinelPort}`,
    REDIS_SENTINEL_PASSWORD_FILE: secretFile(dir, 'sentinel-password', SENTINEL_PW),
  };
  // the Sentinel knows the master once it answers over TLS
  const probe = newRedis(targets(loadConfig({ ...env, MSGX_DEV_MODE: 'true' })).redis, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  await until(
    'the master through the Sentinel',
    async () => {
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        probe.disconnect();
        return false;
      }
    },
    30_000,
  );
  probe.disconnect();
}, 90_000);

afterAll(async () => {
  await stopAll(procs);
  for (const c of children) c.kill('SIGKILL');
  await s?.close();
});

const client = (extra: Record<string, string>) => createRedis(targets(loadConfig({ ...env, MSGX_DEV_MODE: 'true', ...extra })).redis, 2000);

describe('Redis Sentinel with TLS and a password', () => {
  it("the gateway's client: the Sentinel over TLS with its password, then the master over TLS with its user", async () => {
    const r = client({});
    try {
      await redisReady(r, 10_000);
      expect(await r.set('sentinel-tls', 'ok')).toBe('OK');
      expect(await r.get('sentinel-tls')).toBe('ok');
      expect(Number(/tcp_port:(\d+)/.exec(await r.info('server'))?.[1])).toBe(masterPort); // the master (its only port: TLS)
    } finally {
      r.disconnect();
    }
  });

  it('without the Sentinel password the Sentinel refuses to name the master', async () => {
    const r = client({ REDIS_SENTINEL_PASSWORD_FILE: '' });
    try {
      await expect(redisReady(r, 4000)).rejects.toThrow(/not ready/);
    } finally {
      r.disconnect();
    }
  });

  it('the pump process reaches Redis through the secured Sentinel: /healthz says redis is up', async () => {
    const pump = startWorker('pump', env);
    procs.push(pump);
    const h = await waitFor(
      'pump ready',
      async () => {
        const r = await fetch(`http://127.0.0.1:${pump.port}/healthz`, { signal: AbortSignal.timeout(2000) });
        const body = (await r.json()) as { ok: boolean; dependencies?: Record<string, { up: boolean }> };
        return body.dependencies?.redis?.up && body;
      },
      60_000,
      250,
    );
    expect(h.dependencies?.redis?.up).toBe(true);
    expect(pump.logs.join('\n')).not.toContain(SENTINEL_PW);
  }, 90_000);
});
