// A Postgres that refuses at start (full: 53300; starting up: 57P03; not listening while it
// restarts) is waited for: the worker processes (the api on the plain runner, intake on the
// leader loop) log one line per attempt, answer /healthz 503 meanwhile, never exit, and become
// ready once Postgres takes connections. A start that fails after the duty opened its
// connections closes them before the next attempt. Through the entry points (workers/*.ts).
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCKS } from '../../lib/db/postgres.ts';
import { FaultProxy } from '../support/fault-proxy.ts';
import { TEST_PG_URL, TEST_REDIS_URL } from '../support/env.ts';
import { hasLog, startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openEmptyServices } from '../support/services.ts';

/** A server that answers every connection's startup with a FATAL ErrorResponse (the wire format of a refusing Postgres). */
function refusingPostgres(port: number, code: string, message: string): Promise<net.Server> {
  const field = (t: string, v: string) => Buffer.concat([Buffer.from(t), Buffer.from(`${v}\0`)]);
  const refuse = (s: net.Socket) => {
    const body = Buffer.concat([field('S', 'FATAL'), field('V', 'FATAL'), field('C', code), field('M', message), Buffer.from([0])]);
    const head = Buffer.alloc(5);
    head.write('E');
    head.writeInt32BE(body.length + 4, 1);
    s.end(Buffer.concat([head, body]));
  };
  const server = net.createServer((s) => {
    s.on('error', () => {});
    s.once('data', (b: Buffer) => {
      // an SSLRequest is declined ('N'); the startup message follows
      if (b.length === 8 && b.readInt32BE(4) === 80_877_103) {
        s.write('N');
        s.once('data', () => refuse(s));
      } else refuse(s);
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

const close = (s: net.Server) => new Promise<void>((resolve) => s.close(() => resolve()));

const healthz = async (p: Proc) => {
  const r = await fetch(`http://127.0.0.1:${p.port}/healthz`, { signal: AbortSignal.timeout(3000) });
  return { status: r.status, body: (await r.json()) as { reason?: string } };
};

const procs: Proc[] = [];
afterAll(() => stopAll(procs));

describe('a transient refusal at start', () => {
  it('too many clients, starting up, connection refused: each process waits with a line per attempt and becomes ready', async () => {
    // one port: the stand-ins first, then the proxy to the real server
    const free = await new Promise<net.Server>((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => resolve(s));
    });
    const port = (free.address() as net.AddressInfo).port;
    await close(free);
    const target = new URL(TEST_PG_URL);
    const url = new URL(TEST_PG_URL);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    const env = { DATABASE_URL: url.toString() };

    let server = await refusingPostgres(port, '53300', 'sorry, too many clients already');
    const ps = ['api', 'intake'].map((name) => startWorker(name, env));
    procs.push(...ps);
    for (const p of ps) {
      await waitFor(`${p.name}: two refused attempts logged`, () => p.logs.filter((l) => l.includes('start: ') && l.includes('too many clients')).length >= 2, 60_000);
      // not ready meanwhile, and /healthz names Postgres (once its check has failed twice)
      const h = await waitFor(
        `${p.name}: /healthz names postgres`,
        async () => {
          const r = await healthz(p);
          return r.body.reason?.includes('postgres') && r;
        },
        30_000,
        250,
      );
      expect(h.status).toBe(503);
    }

    await close(server);
    server = await refusingPostgres(port, '57P03', 'the database system is starting up');
    for (const p of ps) await waitFor(`${p.name}: a "starting up" attempt logged`, () => p.logs.some((l) => l.includes('start: ') && l.includes('starting up')), 30_000);

    await close(server); // nothing listens: connection refused, as while a server restarts
    for (const p of ps) await waitFor(`${p.name}: a refused connection logged`, () => p.logs.some((l) => l.includes('start: ') && l.includes('ECONNREFUSED')), 30_000);

    const proxy = await FaultProxy.start({ host: target.hostname, port: Number(target.port || 5432) }, port);
    try {
      for (const p of ps) {
        await waitFor(`${p.name} ready`, async () => (await healthz(p)).status === 200, 60_000, 250);
        expect(p.child.exitCode).toBeNull();
        // one line per attempt, each naming what Postgres answered, and no fatal line
        expect(p.logs.filter((l) => l.includes('start: ')).length).toBeGreaterThanOrEqual(4);
        expect(hasLog(p, '"level":60')).toBe(false);
      }
    } finally {
      await stopAll(ps);
      await proxy.close();
    }
  }, 240_000);
});

/** The established TCP connections of process `pid` to `port` (`ss`: the kernel's own list). */
function connectionsTo(pid: number, port: number): number {
  const out = execFileSync('ss', ['-Htnp', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(`pid=${pid},`)).length;
}

describe('a start that fails halfway', () => {
  it('closes what the duty opened before it retries: after three failed starts the pump holds no more Redis connections than before', async () => {
    // empty stores first: a pump whose restore check finds Redis ahead of Postgres (another file's flights) is held, not ready
    const s = await openEmptyServices();
    const redisPort = Number(new URL(TEST_REDIS_URL).port || 6379);
    const pump = startWorker('pump');
    procs.push(pump);
    try {
      await waitFor('pump ready', async () => (await healthz(pump)).status === 200, 60_000, 250);
      const pid = pump.child.pid!;
      const before = connectionsTo(pid, redisPort);
      expect(before).toBeGreaterThan(0);
      // The job table locked: a new leader's start blocks at its first look at the job queue (after
      // the duty opened its inbox pool, Redis client, decode worker and watches); each such
      // statement is cancelled, so that start fails there and the leader loop tries again.
      await s.sessionClient.query('begin');
      await s.sessionClient.query('lock table graphile_worker._private_jobs in access exclusive mode');
      // the leader session ended: the pump stops its duty and starts it again
      await sql`select pg_terminate_backend(pid) from pg_locks where locktype = 'advisory' and objid = ${LOCKS.PUMP_LEADER} and granted and database = (select oid from pg_database where datname = current_database())`.execute(
        s.db,
      );
      let after = new Date(0);
      for (let i = 1; i <= 3; i++) {
        const blocked = await waitFor(
          `start ${i} blocked at the job queue`,
          async () =>
            (
              await sql<{ pid: number; since: Date }>`select pid, query_start as since from pg_stat_activity
                where datname = current_database() and wait_event_type = 'Lock' and query like '-- jobs.locking_workers%' and query_start > ${after}`.execute(s.db)
            ).rows[0],
          30_000,
          100,
        );
        after = blocked.since;
        await sql`select pg_cancel_backend(${blocked.pid}::int)`.execute(s.db);
      }
      // the first failure is logged (the next ones of the minute are counted, not repeated: lib/runtime/health.ts)
      await waitFor('a failed start logged', () => pump.logs.some((l) => l.includes('leadership loop error') && l.includes('canceling statement')), 20_000);
      // and, its duty not running, the pump is not ready meanwhile
      const held = await healthz(pump);
      expect(held.status).toBe(503);
      expect(held.body.reason).toContain('the last start of the duty failed');
      await s.sessionClient.query('commit');
      await waitFor('pump leads again', () => pump.logs.filter((l) => l.includes('leader lock taken')).length >= 2, 30_000);
      await waitFor('pump ready again', async () => (await healthz(pump)).status === 200, 60_000, 250);
      // each failed start closed what it opened: the connections come back to the count before
      // (three starts that kept theirs would hold at least three more for good)
      await waitFor(`the pump's Redis connections back to ${before}`, () => connectionsTo(pid, redisPort) <= before, 15_000, 250);
      expect(pump.child.exitCode).toBeNull();
      expect(hasLog(pump, '"level":60')).toBe(false);
    } finally {
      await s.sessionClient.query('rollback').catch(() => {});
      await stopAll([pump]);
      await s.close();
    }
  }, 180_000);
});

describe('a port another program holds', () => {
  it('is one line naming the address and the setting, exit 1, no stack trace', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
    const port = (holder.address() as net.AddressInfo).port;
    const retention = startWorker('retention', { MSGX_HTTP_PORT_RETENTION: String(port) });
    procs.push(retention);
    try {
      expect(await retention.exited).toBe(1);
      const line = `retention: 127.0.0.1:${port} is in use (another npm start, or another program): set MSGX_HTTP_PORT_RETENTION (or MSGX_HTTP_HOST)`;
      expect(retention.logs).toContain(line);
      expect(retention.logs.filter((l) => /^\s+at |EADDRINUSE: address|node:net/.test(l))).toEqual([]);
    } finally {
      await close(holder);
    }
  }, 60_000);
});
