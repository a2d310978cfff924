// The fault proxy's freeze mode against a local echo server: the connections open when the
// freeze starts stop moving bytes, new connections pass, and back to pass the frozen ones
// deliver what they held.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../../support/fault-proxy.ts';

let echo: net.Server;
let proxy: FaultProxy;

function connect(port: number): Promise<{ socket: net.Socket; received: () => string }> {
  return new Promise((resolve, reject) => {
    let data = '';
    const socket = net.connect(port, '127.0.0.1', () => resolve({ socket, received: () => data }));
    socket.on('data', (b) => (data += b.toString()));
    socket.once('error', reject);
    socket.on('error', () => {});
  });
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function echoed(c: { received: () => string }, text: string, ms = 2000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (c.received().includes(text)) return true;
    await pause(20);
  }
  return false;
}

describe('fault proxy: freeze', () => {
  beforeAll(async () => {
    echo = net.createServer((s) => {
      s.on('error', () => {});
      s.pipe(s);
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    proxy = await FaultProxy.start({ port: (echo.address() as net.AddressInfo).port });
  });
  afterAll(async () => {
    await proxy.close();
    await new Promise((r) => echo.close(r));
  });

  it('stalls the open connections both ways, lets new ones pass, and releases what was held on pass', async () => {
    const old = await connect(proxy.port);
    old.socket.write('before');
    expect(await echoed(old, 'before')).toBe(true);

    await proxy.set('freeze');
    expect(proxy.counts().frozen).toBe(1);
    old.socket.write('during');
    expect(await echoed(old, 'during', 500)).toBe(false); // nothing moves on the frozen one

    const fresh = await connect(proxy.port);
    fresh.socket.write('new');
    expect(await echoed(fresh, 'new')).toBe(true); // a new connection passes
    expect(proxy.counts().frozen).toBe(1); // and is not frozen

    await proxy.set('pass');
    expect(proxy.counts().frozen).toBe(0);
    expect(await echoed(old, 'during')).toBe(true); // what was held flows again
    old.socket.destroy();
    fresh.socket.destroy();
  });
});
