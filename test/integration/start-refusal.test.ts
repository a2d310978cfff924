// A Postgres that refuses at start (full: 53300; starting up: 57P03; not listening while it
// restarts) is waited for: the worker processes (the api on the plain runner, intake on the
// leader loop) log one line per attempt, answer /healthz 503 meanwhile, never exit, and become
// ready once Postgres takes connections. Through the entry points (workers/*.ts).
import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.ts';
import { TEST_PG_URL } from '../support/env.ts';
import { hasLog, startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';

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
