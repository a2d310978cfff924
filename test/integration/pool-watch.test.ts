// The pool watchdog ends the server sessions of connections the process lost. A pooled connection
// in the middle of a transaction (a row and an advisory lock taken) is reset under the client by
// a half-open path: the client sees its connection fail, while the server keeps the session,
// its transaction and its locks (the proxy's halfopen mode). Without the watchdog the locks stay
// until idle_in_transaction_session_timeout (60 s); with it the session is ended from a fresh
// connection and the locks are free again within a few seconds. A session of the same pid that
// started after the failure is left alone. The machine's Postgres is only connected to.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/core/clock.ts';
import { connectClient, createPool } from '../../lib/db/postgres.ts';
import { watchPool, type PoolWatch } from '../../lib/runtime/pool-watch.ts';
import { FaultProxy } from '../support/fault-proxy.ts';
import { TEST_PG_URL } from '../support/env.ts';
import { waitFor } from '../support/processes.ts';
import { silentLog } from '../support/services.ts';

const KEY = 7_990_001; // an advisory lock key of this file only
const TABLE = 'pool_watch_test';
let px: FaultProxy;
let admin: pg.Client;

beforeAll(async () => {
  px = await FaultProxy.start({ port: Number(new URL(TEST_PG_URL).port || 5432) });
  admin = await connectClient(TEST_PG_URL, 'pool-watch-admin');
  await admin.query(`create table if not exists ${TABLE} (id int primary key, n int not null)`);
  await admin.query(`insert into ${TABLE} values (1, 0) on conflict (id) do nothing`);
});
afterAll(async () => {
  await admin?.query(`drop table if exists ${TABLE}`).catch(() => {});
  await admin?.end();
  await px?.close();
});

/** The sessions of application `app` on the server: pid and state. */
async function sessions(app: string): Promise<{ pid: number; state: string }[]> {
  const r = await admin.query<{ pid: number; state: string }>('select pid, state from pg_stat_activity where application_name = $1 order by pid', [app]);
  return r.rows;
}

describe('pool watch: sessions of lost connections', () => {
  let pool: pg.Pool;
  let watch: PoolWatch;
  const ended: number[][] = [];
  beforeAll(() => {
    pool = createPool(px.url(TEST_PG_URL), { max: 2, name: 'pool-watch-test' });
    watch = watchPool(pool, { url: px.url(TEST_PG_URL), clock: systemClock, log: silentLog, onLostEnded: (pids) => ended.push(pids) });
  });
  afterAll(async () => {
    await watch?.stop();
    await pool?.end();
  });

  it('a connection reset in the middle of a transaction: its session, transaction and locks are ended within 5 s (not 60)', async () => {
    const c = await pool.connect();
    const pid = (c as pg.PoolClient & { processID: number }).processID;
    await c.query('begin');
    await c.query(`update ${TABLE} set n = n + 1 where id = 1`);
    await c.query('select pg_advisory_xact_lock($1)', [KEY]);
    expect(await sessions('msgx-pool-watch-test')).toEqual([{ pid, state: 'idle in transaction' }]);

    const t0 = Date.now();
    await px.set('halfopen');
    await px.set('pass');
    // the client learns of the reset on its next call; the server still holds the session
    await expect(c.query('select 1')).rejects.toThrow();
    c.release(true);
    expect((await admin.query('select pid from pg_stat_activity where pid = $1', [pid])).rowCount).toBe(1);

    // the watch says it ended it (its answer can come after the backend is gone: wait for both)
    await waitFor('the watch ended the lost session', () => ended.some((pids) => pids.includes(pid)), 10_000, 50);
    await waitFor('the lost session gone from the server', async () => (await admin.query('select 1 from pg_stat_activity where pid = $1', [pid])).rowCount === 0, 5000, 50);
    const ms = Date.now() - t0;
    console.log(`[pool-watch] the lost session ended ${ms} ms after the reset`);
    expect(ms).toBeLessThan(5000);
    expect(ended).toEqual([[pid]]);
    // its locks went with it: the row and the advisory lock are free, the update rolled back
    await admin.query("set lock_timeout = '1s'");
    const r = await admin.query<{ locked: boolean; n: number }>(`select pg_try_advisory_lock($1) as locked, (select n from ${TABLE} where id = 1 for update) as n`, [KEY]);
    expect(r.rows[0]).toEqual({ locked: true, n: 0 });
    await admin.query('select pg_advisory_unlock($1)', [KEY]);
    await admin.query('reset lock_timeout');
    // the pool works on a new connection
    expect((await pool.query('select 2 as two')).rows).toEqual([{ two: 2 }]);
  }, 30_000);

  it('a lost connection whose pid now belongs to a session started after the failure: that session is left alone', async () => {
    // the watchdog's check runs as a statement any role can call: feed it a lost entry whose
    // failure is in the future of every session (age 0 ms after the newest backend started)
    const other = await connectClient(TEST_PG_URL, 'pool-watch-other');
    try {
      const pid = (other as pg.Client & { processID: number }).processID;
      const { terminateLost } = await import('../../lib/sql/locks.ts');
      const { createSessionDb } = await import('../../lib/db/postgres.ts');
      const db = createSessionDb(admin);
      // failed 1 h ago: the session (started a moment ago) is newer; wrong name: not ours
      expect(await terminateLost(db, [pid], ['msgx-pool-watch-other'], [3_600_000])).toEqual([]);
      expect(await terminateLost(db, [pid], ['msgx-someone-else'], [0])).toEqual([]);
      expect((await other.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
      // the same pid and name, failed after the session started: ended
      await new Promise((r) => setTimeout(r, 50));
      expect(await terminateLost(db, [pid], ['msgx-pool-watch-other'], [0])).toEqual([{ pid }]);
      await waitFor('the session gone', async () => (await admin.query('select 1 from pg_stat_activity where pid = $1', [pid])).rowCount === 0, 5000, 50);
      await expect(other.query('select 1')).rejects.toThrow();
    } finally {
      await other.end().catch(() => {});
    }
  });
});
