// The Redis edge (lib/db/redis.ts) after a black hole: commands sent while the path was dead time
// out and their connection is thrown away; connections opened meanwhile hang in their handshake.
// When the path comes back the client must be usable again. It once was not: ioredis re-sent the
// timed-out commands on the new connection, their settled timeouts destroyed it the moment it was
// ready, and the client reconnected in a loop forever (the pump held its head until restarted).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, redisReady, type Redis } from '../../lib/db/redis.ts';
import { TEST_REDIS_URL } from '../support/env.ts';
import { FaultProxy } from '../support/fault-proxy.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let px: FaultProxy;
let r: Redis;

describe('Redis edge: usable again after a black hole', () => {
  beforeAll(async () => {
    const u = new URL(TEST_REDIS_URL);
    px = await FaultProxy.start({ port: Number(u.port || 6379) });
    u.port = String(px.port);
    r = createRedis(u.toString(), 1000);
    await new Promise((ready) => (r.status === 'ready' ? ready(null) : r.once('ready', ready)));
  });
  afterAll(async () => {
    r?.disconnect();
    await px?.close();
  });

  it('commands time out during the black hole, and succeed again once the path is back', async () => {
    await r.set('msgx:test:edge', 'before');
    px.set('blackhole');
    const during: string[] = [];
    for (let i = 0; i < 8; i++) {
      await r.set('msgx:test:edge', `during-${i}`).then(
        () => during.push('ok'),
        (e: Error) => during.push(e.message),
      );
      await sleep(500);
    }
    expect(during).toContain('Command timed out');
    expect(during).not.toContain('ok');
    px.set('pass');
    let answered = false;
    for (let i = 0; i < 40 && !answered; i++) {
      answered = await r.set('msgx:test:edge', 'after').then(
        () => true,
        () => false,
      );
      if (!answered) await sleep(250);
    }
    expect(answered).toBe(true);
    // and it stays usable (no reconnect loop), with no stale command replayed over the new value
    for (let i = 0; i < 5; i++) {
      await sleep(300);
      expect(await r.get('msgx:test:edge')).toBe('after');
    }
    expect(r.status).toBe('ready');
  }, 60_000);
});

describe('Redis edge: a one-shot command line waits for the connection (redisReady)', () => {
  it('a command sent before ready fails at once; after redisReady it runs', async () => {
    const c = createRedis(TEST_REDIS_URL, 2000);
    try {
      // what recover-restore once did under load: its first command raced the connection
      await expect(c.ping()).rejects.toThrow("Stream isn't writeable");
      await redisReady(c, 2000);
      expect(await c.ping()).toBe('PONG');
      await redisReady(c, 2000); // already ready: at once
    } finally {
      c.disconnect();
    }
  });

  it('a black-holed path: rejects after its deadline, naming it', async () => {
    const u = new URL(TEST_REDIS_URL);
    const hole = await FaultProxy.start({ port: Number(u.port || 6379) });
    hole.set('blackhole');
    u.port = String(hole.port);
    const c = createRedis(u.toString(), 300);
    const t0 = Date.now();
    try {
      await expect(redisReady(c, 600)).rejects.toThrow(/^redis not ready within 600 ms/);
      expect(Date.now() - t0).toBeLessThan(5000);
    } finally {
      c.disconnect();
      await hole.close();
    }
  });
});
