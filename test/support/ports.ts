import { createServer } from 'node:net';

const given = new Set<number>();

/**
 * A TCP port nobody listens on now, and not one this process has handed out before: the kernel
 * can answer the same port to two binds in a row once the first is closed (a runner test gave
 * the pump and the api one port, and the api exited with EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((res, rej) => {
      const s = createServer();
      s.once('error', rej);
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => res(p));
      });
    });
    if (!given.has(port)) {
      given.add(port);
      return port;
    }
  }
}
