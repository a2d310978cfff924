// Postgres failover with a streaming standby of the test's own (docs/operations.md "Production
// topology"): a primary and a standby started here (scripts/topology/postgres.ts, own ports and
// data under .local/), the primary SIGKILLed and the standby promoted. The gateway's pool reaches
// the promoted standby without a configuration change: through a DATABASE_URL naming both hosts
// (the pool asks which one is not in recovery) and through a virtual IP (the fault proxy, moved).
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, createPool } from '../../lib/db/postgres.ts';
import { startPgPair, type PgPair } from '../../scripts/topology/postgres.ts';
import { FaultProxy } from '../support/fault-proxy.ts';
import { freePort, until } from '../support/tls.ts';

const ROOT = resolve('.local/topology-test/pg');
let pair: PgPair;

const where = async (pool: ReturnType<typeof createPool>) => (await pool.query<{ port: number; standby: boolean }>('select inet_server_port() as port, pg_is_in_recovery() as standby')).rows[0];

/** Keep writing until the pool writes again; seconds from `since`. */
async function writesAgain(pool: ReturnType<typeof createPool>, since: number, value: number): Promise<number> {
  await until('a write through the pool', async () => (await pool.query('insert into t values ($1)', [value])).rowCount === 1, 30_000);
  return (Date.now() - since) / 1000;
}

describe('Postgres failover', () => {
  beforeAll(async () => {
    pair = startPgPair(join(ROOT, 'sync'), { primary: await freePort(), standby: await freePort() }, true);
    pair.primary.psql('create database msgx_topo');
    pair.primary.psql('create table t (x int)', 'msgx_topo');
  }, 120_000);
  afterAll(() => pair?.stop());

  it('a DATABASE_URL naming the standby first connects to the primary, and to the promoted standby after the primary dies', async () => {
    const url = pair.hostListUrl('msgx_topo');
    const pool = createPool(url, { max: 3, name: 'topology-test' });
    try {
      expect(await where(pool)).toEqual({ port: pair.primary.port, standby: false });
      const session = await connectClient(url, 'topology-session');
      expect((await session.query('select inet_server_port() as port')).rows[0].port).toBe(pair.primary.port);
      await session.end();
      await pool.query('insert into t select generate_series(1, 100)');

      pair.primary.kill();
      // no host accepts writes until the promotion: said so, with each host's reason
      const refused = await pool.query('insert into t values (0)').catch((e: Error) => e);
      expect(String(refused)).toMatch(/no host of the Postgres URL accepts writes|terminat|ECONNREFUSED/);
      const promoted = Date.now();
      pair.standby.promote();
      const seconds = await writesAgain(pool, promoted, 101);
      console.info(`drill postgres host-list URL: writes after promote: ${seconds.toFixed(1)} s`);
      expect(await where(pool)).toEqual({ port: pair.standby.port, standby: false });
      // synchronous standby: every committed row is there
      expect(Number((await pool.query('select count(*) as n from t')).rows[0].n)).toBe(101);
      expect(seconds).toBeLessThan(15);
    } finally {
      await pool.end();
    }
  }, 120_000);

  it('through a virtual IP (the fault proxy, moved to the promoted standby): the same URL, writes resume', async () => {
    const p = startPgPair(join(ROOT, 'vip'), { primary: await freePort(), standby: await freePort() }, true);
    const vip = await FaultProxy.start({ port: p.primary.port });
    try {
      p.primary.psql('create database msgx_topo');
      p.primary.psql('create table t (x int)', 'msgx_topo');
      const pool = createPool(vip.url(p.primary.url('msgx_topo')), { max: 3, name: 'topology-vip' });
      try {
        await pool.query('insert into t select generate_series(1, 100)');
        p.primary.kill();
        const promoted = Date.now();
        p.standby.promote();
        vip.moveTo({ port: p.standby.port });
        const seconds = await writesAgain(pool, promoted, 101);
        console.info(`drill postgres virtual IP: writes after promote: ${seconds.toFixed(1)} s`);
        expect(await where(pool)).toEqual({ port: p.standby.port, standby: false });
        expect(Number((await pool.query('select count(*) as n from t')).rows[0].n)).toBe(101);
        expect(seconds).toBeLessThan(15);
      } finally {
        await pool.end();
      }
    } finally {
      await vip.close();
      p.stop();
    }
  }, 120_000);
});
