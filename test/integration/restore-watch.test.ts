// The restore check (lib/watches/restore.ts RestoreWatch) at a process's start, with Redis behind a
// fault proxy of the test's own: a client still connecting is waited for, not counted as a failed
// check; a duty that runs once at start (retention's kick) waits for the first check instead of
// being skipped while it is under way, and is still held when Postgres is behind.
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { createDb, createPool } from '../../lib/db/postgres.ts';
import { createRedis, type Redis } from '../../lib/db/redis.ts';
import { RestoreWatch } from '../../lib/watches/restore.ts';
import { TEST_PG_URL, TEST_REDIS_URL } from '../support/env.ts';
import { FaultProxy } from '../support/fault-proxy.ts';
import { openServices, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';

let s: TestServices;
let proxy: FaultProxy;
const pool = createPool(TEST_PG_URL, { max: 2, name: 'restore-watch-test' });
const db = createDb(pool);
const open: { watch?: RestoreWatch; redis?: Redis } = {};

beforeAll(async () => {
  s = await openServices();
  proxy = await FaultProxy.start({ port: Number(new URL(TEST_REDIS_URL).port || 6379) });
});

afterAll(async () => {
  await proxy.close();
  await pool.end();
  await s.close();
});

beforeEach(async () => {
  await resetPipeline(s);
  await resetDomain(s);
  await sql`update intake_cursor set watermark = 10`.execute(s.db); // in use: the Redis check runs
  await proxy.set('pass');
});

afterEach(() => {
  open.watch?.stop();
  open.redis?.disconnect();
});

/** A watch on a Redis client made now, through the proxy, as a process makes it at start; its log lines kept. */
function watchNow(timeoutMs: number): { watch: RestoreWatch; lines: string[] } {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, new Writable({ write: (b, _e, done) => (lines.push(String(b)), done()) }));
  open.redis = createRedis(proxy.url(TEST_REDIS_URL), timeoutMs);
  open.watch = new RestoreWatch({ db, inbox: s.inbox, redis: open.redis, clock: new ManualClock('2026-12-01T00:00:00Z'), timeoutMs, log, heldEveryMs: 60_000 });
  return { watch: open.watch, lines };
}

describe('the restore check at start (RestoreWatch)', () => {
  it('waits for a Redis client that is still connecting: the first check completes, nothing is held', async () => {
    await proxy.set('blackhole'); // the connection is accepted and waits, as on a loaded machine
    const { watch, lines } = watchNow(3000);
    const started = watch.start();
    await new Promise((r) => setTimeout(r, 400));
    await proxy.set('pass');
    await started;
    expect(lines.filter((l) => l.includes('restore check could not run'))).toEqual([]);
    expect(watch.held()).toBe(false);
  });

  it('a first check that failed is tried again by heldOnceChecked, which answers for the check it waited for', async () => {
    await proxy.set('blackhole');
    const { watch, lines } = watchNow(300);
    await watch.start(); // Redis never answered within its deadline
    expect(lines.some((l) => l.includes('restore check could not run') && l.includes('redis not ready within 300 ms'))).toBe(true);
    expect(watch.held()).toBe(true);
    expect(watch.unchecked()).toBe(true);
    await proxy.set('pass');
    expect(await watch.heldOnceChecked(5000)).toBe(false);
    expect(watch.unchecked()).toBe(false);
  });

  it('still held after the first check when Redis holds a flight Postgres lacks (behind, not unchecked)', async () => {
    await s.redis.set('msgx:flight:777', JSON.stringify({ FLID: '777', STATE: 'ACTIVE', STATE_VERSION: 5 }));
    const { watch } = watchNow(3000);
    expect(await watch.heldOnceChecked(5000)).toBe(true);
    expect(watch.unchecked()).toBe(false);
    expect(watch.findings()).toEqual([{ source: 'redis', detail: expect.stringContaining('777') }]);
  });
});
