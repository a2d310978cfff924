// Redis edge: a client whose commands fail fast (bounded by msgx.io.timeout) instead of queueing
// forever while Redis is down — the pump must see the failure and hold the head (INV-10).
import { Redis } from 'ioredis';

export function createRedis(url: string, timeoutMs: number): Redis {
  const r = new Redis(url, {
    commandTimeout: timeoutMs,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: false,
    keepAlive: 10_000, // TCP keepalive after 10 s idle: a half-open connection does not linger
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
  r.on('error', () => {}); // surfaced per command
  return r;
}

export type { Redis };
