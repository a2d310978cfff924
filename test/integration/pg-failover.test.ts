// Postgres failover with a streaming standby of the test's own (docs/operations.md "Production
// topology"): a primary and a standby started here (scripts/topology/postgres.ts, own ports and
// data under .local/), the primary SIGKILLed and the standby promoted. The gateway's pool reaches
// the promoted standby without a configuration change: through a DATABASE_URL naming both hosts
// (the pool asks which one is not in recovery) and through a virtual IP (the fault proxy, moved).
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../lib/db/migrate.ts';
import { connectClient, createPool } from '../../lib/db/postgres.ts';
import { startPgPair, type PgPair } from '../../scripts/topology/postgres.ts';
import { FaultProxy } from '../support/fault-proxy.ts';
import { endWithThisProcess, hasLog, metricValue, startWorker, stopAll, waitFor } from '../support/processes.ts';
import { freePort } from '../support/ports.ts';
import { until } from '../support/tls.ts';

const ROOT = resolve('.local/topology-test/pg');
let pair: PgPair;

const where = async (pool: ReturnType<typeof createPool>) => (await pool.query<{ port: number; standby: boolean }>('select inet_server_port() as port, pg_is_in_recovery() as standby')).rows[0];

/** Keep writing until the pool writes again; seconds from `since`. */
async function writesAgain(pool: ReturnType<typeof createPool>, since: number, value: number): Promise<number> {
  await until('a write through the pool', async () => (await pool.query('insert into t values ($1)', [value])).rowCount === 1, 30_000);
  return (Date.now() - since) / 1000;
}

/** Each postmaster of the pair (pg_ctl gives it a session of its own) ends with this test process. */
const endWithTest = (p: PgPair) => {
  for (const n of [p.primary, p.standby]) endWithThisProcess(join(n.data, 'postmaster.pid'));
};

describe('Postgres failover', () => {
  beforeAll(async () => {
    pair = startPgPair(join(ROOT, 'sync'), { primary: await freePort(), standby: await freePort() }, true);
    endWithTest(pair);
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
      // a backend of the dead postmaster may still commit (the synchronous standby has it then)
      const late = await pool.query('insert into t values (0)').then(
        () => 1,
        () => 0,
      );
      // until the promotion no host accepts writes: said so, with each host's reason
      const refused = await until('a new connection refused', async () => {
        const e = await connectClient(url, 'topology-refused').then(
          (c) => void c.end(),
          (err: Error) => err,
        );
        return e && /no host of the Postgres URL accepts writes/.test(e.message) && e;
      });
      expect(refused.message).toContain(`127.0.0.1:${pair.standby.port} is in recovery`);
      const promoted = Date.now();
      pair.standby.promote();
      const seconds = await writesAgain(pool, promoted, 101);
      console.info(`drill postgres host-list URL: writes after promote: ${seconds.toFixed(1)} s`);
      expect(await where(pool)).toEqual({ port: pair.standby.port, standby: false });
      // synchronous standby: every acknowledged row is there; the late insert, when its client
      // saw an error, may still have committed (in doubt, as any commit whose answer was lost)
      const n = Number((await pool.query('select count(*) as n from t')).rows[0].n);
      expect(n).toBeGreaterThanOrEqual(101 + late);
      expect(n).toBeLessThanOrEqual(102);
      expect(seconds).toBeLessThan(15);
    } finally {
      await pool.end();
    }
  }, 120_000);

  it('a worker process on the host-list URL after the failover (migrations, graphile-worker, checks on the promoted standby); autovacuum = off is named, readiness unaffected', async () => {
    pair.standby.psql('alter system set autovacuum = off');
    pair.standby.psql('select pg_reload_conf()');
    pair.standby.psql('create database msgx_proc');
    const url = pair.hostListUrl('msgx_proc');
    await migrate(url);
    const p = startWorker('retention', { DATABASE_URL: url });
    try {
      await waitFor('the WARN line', () => hasLog(p, 'Postgres runs with autovacuum = off'), 60_000);
      expect(p.logs.filter((l) => l.includes('autovacuum = off') && l.includes('"level":40'))).toHaveLength(1);
      const health = await waitFor('/healthz with the note', async () => {
        const body = (await (await fetch(`http://127.0.0.1:${p.port}/healthz`)).json()) as Record<string, unknown>;
        return body['postgres-autovacuum-off'] ? body : undefined;
      });
      expect(health.postgres).toBe('up');
      expect(JSON.stringify(health.conditions ?? [])).not.toContain('autovacuum');
      expect(String(health.reason ?? '')).not.toContain('autovacuum');
      expect(await metricValue(p, 'msgx_postgres_autovacuum')).toBe(0);
    } finally {
      await stopAll([p]);
    }
  }, 120_000);

  it('through a virtual IP (the fault proxy, moved to the promoted standby): the same URL, writes resume', async () => {
    const p = startPgPair(join(ROOT, 'vip'), { primary: await freePort(), standby: await freePort() }, true);
    endWithTest(p);
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
