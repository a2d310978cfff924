// Redis edge: a client whose commands fail fast (bounded by msgx.io.timeout) instead of queueing
// forever while Redis is down — the pump must see the failure and hold the head (INV-10).
//
// A command that times out means the connection did not answer: on a frozen path (NAT / firewall
// state lost, failover behind a virtual IP) it never will, and ioredis alone would keep sending
// every later command down the same socket. So a timeout destroys the socket: ioredis reconnects
// (retryStrategy) on a NEW connection and the next command runs there. `onFault` hears of it
// (the process's readiness, lib/runtime/health.ts).
import { Redis, type RedisOptions } from 'ioredis';
import { resolveRedis, targetOf, type RedisTarget } from '../core/connections.ts';
import type { ConnectionOptions } from 'node:tls';
import { tlsOptions } from './tls.ts';

/** Where a connection goes: a bare redis:// / rediss:// URL, or a configured target (lib/core/config.ts `targets`). */
export type RedisWhere = string | RedisTarget;

/**
 * The URL and the options every Redis connection gets (the edge, the readiness check, the probes):
 * the ACL user and password when given apart from the URL, TLS for rediss:// (verified: lib/db/tls.ts).
 * The one factory of Redis connection options.
 */
export function redisEndpoint(where: RedisWhere): { url: string; options: { username?: string; password?: string; tls?: ConnectionOptions } & SentinelOptions } {
  const t = typeof where === 'string' ? targetOf(resolveRedis(where, {}, 'the Redis URL')) : where;
  return {
    url: t.url,
    options: {
      ...(t.username !== undefined ? { username: t.username } : {}),
      ...(t.password !== undefined ? { password: t.password } : {}),
      ...(t.tls ? { tls: tlsOptions(t.tls) } : {}),
      ...(t.sentinel ? sentinelOptions(t.sentinel, t.tls ? tlsOptions(t.tls) : undefined) : {}),
    },
  };
}

type SentinelOptions = Pick<RedisOptions, 'sentinels' | 'name' | 'enableTLSForSentinelMode' | 'failoverDetector' | 'sentinelTLS' | 'sentinelUsername' | 'sentinelPassword'>;

/**
 * ioredis's own Sentinel mode: it asks the Sentinels for the master's address at every
 * (re)connection and checks the server it reaches is the master; failoverDetector subscribes to
 * the Sentinels' +switch-master and leaves the old master at once (docs/operations.md
 * "Production topology"). The URL's database, credentials and TLS apply to the master; the
 * Sentinels get the same TLS (a rogue answer cannot name the master) and their own login.
 */
function sentinelOptions(s: NonNullable<RedisTarget['sentinel']>, tls: ConnectionOptions | undefined): SentinelOptions {
  return {
    sentinels: s.sentinels.map((x) => ({ host: x.host, port: x.port })),
    name: s.master,
    failoverDetector: true,
    ...(s.username !== undefined ? { sentinelUsername: s.username } : {}),
    ...(s.password !== undefined ? { sentinelPassword: s.password } : {}),
    ...(tls ? { enableTLSForSentinelMode: true, sentinelTLS: tls } : {}),
  };
}

/** A Redis client for one check or one script (the caller's options over the endpoint's). */
export function newRedis(where: RedisWhere, options: Omit<RedisOptions, 'replyMapping'>): Redis {
  const e = redisEndpoint(where);
  return new Redis(e.url, { ...options, ...e.options });
}

type Sent = Parameters<Redis['sendCommand']>;

const watched = new WeakSet<object>();

class SelfHealingRedis extends Redis {
  onFault?: (err: Error) => void;

  override sendCommand(...args: Sent): ReturnType<Redis['sendCommand']> {
    const [command] = args;
    // Once per command: a command ioredis sends again after a reconnect may have timed out
    // already, and its settled promise would destroy the new connection the moment it is ready.
    if (this.status !== 'ready' || watched.has(command)) return super.sendCommand(...args);
    watched.add(command);
    const stream = (this as unknown as { stream?: { destroy(): void } }).stream;
    command.promise.catch((e: Error) => {
      if (e?.message !== 'Command timed out') return;
      // only the socket the command went down (a reconnect may have replaced it already)
      if ((this as unknown as { stream?: unknown }).stream === stream) stream?.destroy();
      this.onFault?.(e);
    });
    return super.sendCommand(...args);
  }
}

export function createRedis(where: RedisWhere, timeoutMs: number, o: { onFault?: (err: Error) => void } = {}): Redis {
  const options = {
    commandTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: false,
    keepAlive: 10_000, // TCP keepalive after 10 s idle: a half-open connection does not linger
    retryStrategy: (times: number) => Math.min(times * 200, 2000),
    // A command that failed (timed out, connection lost) has been reported to its caller, who
    // retries or holds the head: it is never sent again behind its back on the next connection
    // (an old SET replayed after a newer one would put stale state into Redis).
    autoResendUnfulfilledCommands: false,
  } satisfies RedisOptions;
  const e = redisEndpoint(where);
  const r = new SelfHealingRedis(e.url, { ...options, ...e.options });
  r.onFault = o.onFault;
  r.on('error', () => {}); // surfaced per command
  return r;
}

/**
 * Until the client is connected and ready, at most timeoutMs: a one-shot command line's first
 * command must not race the connection (enableOfflineQueue is off, so a command sent before
 * 'ready' fails at once with "Stream isn't writeable"). The error names the last connection error.
 */
export async function redisReady(r: Redis, timeoutMs: number): Promise<void> {
  if (r.status === 'ready') return;
  let last: Error | undefined;
  let timer: NodeJS.Timeout | undefined;
  let onReady: (() => void) | undefined;
  const onError = (e: Error) => (last = e);
  r.on('error', onError);
  try {
    await new Promise<void>((resolve, reject) => {
      onReady = resolve;
      r.once('ready', onReady);
      timer = setTimeout(() => reject(new Error(`redis not ready within ${timeoutMs} ms${last ? ` (${last.message})` : ''}`)), timeoutMs);
    });
  } finally {
    clearTimeout(timer);
    if (onReady) r.off('ready', onReady);
    r.off('error', onError);
  }
}

/** Start over on a new connection (the current one may hang on a frozen path): ioredis reconnects. */
export function reconnectRedis(r: Redis): void {
  (r as unknown as { stream?: { destroy(): void } }).stream?.destroy();
}

export type { Redis };
