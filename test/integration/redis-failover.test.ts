// Redis behind Sentinel with a failover (docs/operations.md "Production topology"): a primary,
// a replica and three Sentinels of the test's own (scripts/topology/redis.ts, own ports, state
// under .local/). The gateway's client (lib/db/redis.ts, REDIS_SENTINELS + master name through
// ioredis's Sentinel mode) follows the promoted replica after the primary is SIGKILLed, with
// the writes the replica had.
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveRedis, targetOf } from '../../lib/core/connections.ts';
import { createRedis, type Redis } from '../../lib/db/redis.ts';
import { SENTINEL_MASTER, startRedisSentinels, type RedisSentinelSet } from '../../scripts/topology/redis.ts';
import { freePort } from '../support/ports.ts';
import { endWithThisProcess } from '../support/processes.ts';
import { until } from '../support/tls.ts';

const ROOT = resolve('.local/topology-test/redis');
let set: RedisSentinelSet;
let redis: Redis;

beforeAll(async () => {
  set = startRedisSentinels(ROOT, {
    primary: await freePort(),
    replica: await freePort(),
    sentinels: [await freePort(), await freePort(), await freePort()],
  });
  // each redis-server daemonized (a session of its own): ended with this test process
  for (const f of readdirSync(ROOT).filter((n) => n.endsWith('.pid'))) endWithThisProcess(join(ROOT, f));
  // the URL's host is not used in Sentinel mode: the Sentinels name the master
  const target = targetOf(resolveRedis('redis://127.0.0.1:1/2', { sentinels: set.sentinelList, master: SENTINEL_MASTER }));
  redis = createRedis(target, 1000);
  await until('the client through the Sentinels', async () => (await redis.ping()) === 'PONG', 20_000);
}, 60_000);
afterAll(() => {
  redis?.disconnect();
  set?.stop();
});

const port = async () => Number(/tcp_port:(\d+)/.exec(await redis.info('server'))?.[1]);

describe('Redis Sentinel failover', () => {
  it('SIGKILL of the primary: Sentinel promotes the replica, the client follows it within 10 s with the replicated writes', async () => {
    expect(await port()).toBe(set.primary.port);
    for (let i = 0; i < 100; i++) await redis.set(`k:${i}`, String(i));
    await until('the replica has every write', async () => (await redis.wait(1, 500)) === 1, 20_000);
    set.primary.kill();
    const killed = Date.now();
    await until('a write on the new master', async () => (await redis.set('after', '1')) === 'OK', 30_000);
    const seconds = (Date.now() - killed) / 1000;
    console.info(`drill redis sentinel: writes after SIGKILL of the primary: ${seconds.toFixed(1)} s`);
    expect(await port()).toBe(set.replica.port);
    expect(set.masterPort()).toBe(set.replica.port);
    expect(await redis.get('k:99')).toBe('99');
    expect(await redis.dbsize()).toBe(101);
    expect(seconds).toBeLessThan(10);
  }, 60_000);
});
