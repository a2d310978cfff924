// A TCP fault proxy for outage tests: sits between the system under test and one service
// (Postgres, MariaDB, Redis, Kafka) on a port of its own, and breaks the path on demand
// without touching the service itself — `npm test` never stops, restarts or reconfigures a
// server it did not start. Modes:
//   pass       bytes flow both ways (new connections are forwarded);
//   refuse     the service "is down": the listener is closed (new connections are refused) and
//              every open connection is reset on both sides (the server ends those sessions);
//   blackhole  bytes stop moving: nothing is read on either side, new connections are accepted
//              and left waiting; when the mode goes back to pass, what was held flows again
//              (like a network path that comes back: TCP retransmits, nothing is lost). A new
//              connection whose client gave up before then never reaches the server (a real
//              path would not have completed its handshake);
//   halfopen   the client side of every open connection is reset while the server keeps its
//              session (its socket stays open, what it sends is read and dropped): the state a
//              dead client host or a NAT timeout leaves behind. New connections pass.
//   freeze     the connections open when the freeze starts stop moving bytes (nothing is read
//              on either side; the peers' writes fill the kernel buffers and get no answer)
//              while NEW connections pass normally: what a NAT / firewall state loss or a
//              failover behind a virtual IP does to the sessions that were open. Back to pass,
//              the frozen connections move again (what they held flows).
// Sessions kept by halfopen stay open until the server ends them (pg_terminate_backend, its
// own timeouts) or the proxy is closed.
// deliverLate(true): a frozen connection its client gave up on (closed while frozen) still hands
// what it had sent to the server once the freeze ends, as a network path that comes back does
// with the segments it held — the late write a frozen connection can deliver.
import net from 'node:net';

export type FaultMode = 'pass' | 'refuse' | 'blackhole' | 'halfopen' | 'freeze';

interface Pair {
  client: net.Socket;
  upstream: net.Socket | null;
  /** halfopen: the client is gone, the server side is kept. */
  zombie: boolean;
  /** Accepted during a black hole: what the client sent meanwhile, and the listener that keeps it. */
  early?: { chunks: Buffer[]; keep: (b: Buffer) => void };
}

export class FaultProxy {
  private server: net.Server | null = null;
  private readonly pairs = new Set<Pair>();
  private mode: FaultMode = 'pass';
  private late = false;
  /** Connections accepted during a black hole: forwarded when the path comes back. */
  private readonly held = new Set<Pair>();
  /** Connections stalled by freeze (open when it started). */
  private readonly frozen = new Set<Pair>();

  target: { host: string; port: number };
  port: number;

  private constructor(target: { host: string; port: number }, port: number) {
    this.target = target;
    this.port = port;
  }

  /** Listen on `port` (0: any free port) of 127.0.0.1, forwarding to host:port. */
  static async start(target: { host?: string; port: number }, port = 0): Promise<FaultProxy> {
    const p = new FaultProxy({ host: target.host ?? '127.0.0.1', port: target.port }, port);
    await p.listen();
    return p;
  }

  /** host:port of the proxy. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get current(): FaultMode {
    return this.mode;
  }

  /** Open connections (client side alive), sessions kept by halfopen, connections frozen by freeze. */
  counts(): { open: number; zombies: number; frozen: number } {
    let zombies = 0;
    for (const p of this.pairs) if (p.zombie) zombies++;
    return { open: this.pairs.size - zombies, zombies, frozen: this.frozen.size };
  }

  /** A url (postgres://, mysql://, redis://) with its host:port replaced by the proxy's. */
  url(serviceUrl: string): string {
    const u = new URL(serviceUrl);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /**
   * Move the address to another server, as a virtual IP moves in a failover: connections open now
   * are reset (their server is gone), new ones go to `target`.
   */
  moveTo(target: { host?: string; port: number }): void {
    this.target = { host: target.host ?? '127.0.0.1', port: target.port };
    for (const p of this.pairs) this.kill(p);
  }

  /** See the header: frozen connections deliver what they held even when their client has closed. */
  deliverLate(on: boolean): void {
    this.late = on;
  }

  async set(mode: FaultMode): Promise<void> {
    const was = this.mode;
    this.mode = mode;
    if (mode !== 'freeze') this.frozen.clear();
    if (mode === 'freeze') {
      if (was === 'refuse') await this.listen();
      for (const p of this.pairs)
        if (!p.zombie && p.upstream && !this.held.has(p)) {
          this.stall(p);
          this.frozen.add(p);
        }
      return;
    }
    if (mode === 'refuse') {
      const closed = this.unlisten();
      for (const p of this.pairs) this.kill(p);
      await closed;
      return;
    }
    if (was === 'refuse') await this.listen();
    if (mode === 'blackhole') {
      for (const p of this.pairs) if (!p.zombie && p.upstream) this.stall(p);
      return;
    }
    if (mode === 'halfopen') {
      for (const p of this.pairs) if (!p.zombie) this.halfOpen(p);
      for (const p of this.held) this.kill(p);
      this.held.clear();
      return;
    }
    // pass
    for (const p of this.pairs) if (!p.zombie && p.upstream && !this.held.has(p)) this.flow(p);
    for (const p of this.held) this.forward(p);
    this.held.clear();
  }

  async close(): Promise<void> {
    const closed = this.unlisten(); // resolves once every connection is gone: kill them first
    for (const p of this.pairs) this.kill(p);
    this.pairs.clear();
    await closed;
  }

  private listen(): Promise<void> {
    const server = net.createServer((client) => this.accept(client));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        this.port = (server.address() as net.AddressInfo).port;
        server.off('error', reject);
        resolve();
      });
    });
  }

  private unlisten(): Promise<void> {
    const s = this.server;
    this.server = null;
    return s ? new Promise((r) => s.close(() => r())) : Promise.resolve();
  }

  private accept(client: net.Socket): void {
    const p: Pair = { client, upstream: null, zombie: false };
    this.pairs.add(p);
    client.on('error', () => {});
    client.on('close', () => {
      if (p.zombie) return;
      // late delivery: the pipe ended the upstream gracefully after the held bytes; its close ends the pair
      if (this.late && p.upstream && !p.upstream.destroyed) return;
      this.kill(p);
    });
    if (this.mode === 'blackhole') {
      // read and kept, so that a client that closes is seen (its 'close' ends the pair): only the
      // ones still open when the path comes back reach the server
      const chunks: Buffer[] = [];
      const keep = (b: Buffer) => void chunks.push(b);
      client.on('data', keep);
      p.early = { chunks, keep };
      this.held.add(p);
      return;
    }
    this.forward(p);
  }

  private forward(p: Pair): void {
    const up = net.connect(this.target.port, this.target.host);
    p.upstream = up;
    if (p.early) {
      p.client.off('data', p.early.keep);
      for (const c of p.early.chunks) up.write(c);
      p.early = undefined;
    }
    up.setNoDelay(true);
    p.client.setNoDelay(true);
    up.on('error', () => {});
    up.on('close', () => this.kill(p));
    this.flow(p);
  }

  private flow(p: Pair): void {
    p.client.unpipe();
    p.upstream!.unpipe();
    p.client.pipe(p.upstream!);
    p.upstream!.pipe(p.client);
    p.client.resume();
    p.upstream!.resume();
  }

  /** Nothing is read on either side: the peers' writes stay in the kernel buffers. */
  private stall(p: Pair): void {
    p.client.unpipe();
    p.upstream!.unpipe();
    p.client.pause();
    p.upstream!.pause();
  }

  private halfOpen(p: Pair): void {
    p.zombie = true;
    const up = p.upstream;
    if (up) {
      up.unpipe(p.client);
      p.client.unpipe(up);
      up.on('data', () => {}); // the server's writes go nowhere, it is never blocked
      up.resume();
    } else {
      this.pairs.delete(p);
    }
    p.client.resetAndDestroy();
  }

  private kill(p: Pair): void {
    this.pairs.delete(p);
    this.held.delete(p);
    this.frozen.delete(p);
    if (!p.client.destroyed) p.client.resetAndDestroy();
    if (p.upstream && !p.upstream.destroyed) p.upstream.resetAndDestroy();
  }
}
