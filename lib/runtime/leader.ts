// Single-writer duties (intake, pump): hold a session-level advisory lock on a dedicated
// connection for as long as the duty runs; a second instance stands by, polling the lock.
// If the dedicated connection dies, the lock is gone with it: the duty is stopped and the
// instance goes back to standing by (another instance may have taken over meanwhile).
import type pg from 'pg';
import type { Logger } from 'pino';
import { connectClient } from '../db/postgres.ts';

export interface LeaderHandle {
  client: pg.Client;
  /** Aborted the moment leadership ends (connection lost, or shutdown): loops must stop at once. */
  signal: AbortSignal;
}

export async function runAsLeader(opts: {
  url: string;
  name: string;
  lockKey: number;
  log: Logger;
  /** Start the duty; returns a function that stops it. */
  start: (h: LeaderHandle) => Promise<() => Promise<void>>;
  signal: AbortSignal;
  pollMs?: number;
}): Promise<void> {
  const poll = opts.pollMs ?? 1000;
  let announced = false;
  while (!opts.signal.aborted) {
    let client: pg.Client | undefined;
    try {
      client = await connectClient(opts.url, opts.name);
      const got = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1) as ok', [opts.lockKey]);
      if (!got.rows[0].ok) {
        if (!announced) opts.log.info({ lock: opts.lockKey }, `${opts.name}: another instance is active; standing by`);
        announced = true;
        await client.end().catch(() => {});
        await sleep(poll, opts.signal);
        continue;
      }
      announced = false;
      opts.log.info({ lock: opts.lockKey }, `${opts.name}: leader lock taken; active`);
      const tenure = new AbortController();
      const onShutdown = () => tenure.abort();
      opts.signal.addEventListener('abort', onShutdown, { once: true });
      const stop = await opts.start({ client, signal: tenure.signal });
      // Watch the connection that holds the lock.
      const lost = new Promise<string>((resolve) => {
        client!.once('error', (e) => resolve(`connection error: ${e.message}`));
        client!.once('end', () => resolve('connection ended'));
      });
      const aborted = new Promise<string>((resolve) => opts.signal.addEventListener('abort', () => resolve('shutdown'), { once: true }));
      const heartbeat = (async () => {
        while (!opts.signal.aborted) {
          await sleep(5000, opts.signal);
          if (opts.signal.aborted) return 'shutdown';
          try {
            await client!.query('select 1');
          } catch (e) {
            return `heartbeat failed: ${(e as Error).message}`;
          }
        }
        return 'shutdown';
      })();
      const why = await Promise.race([lost, aborted, heartbeat]);
      if (why !== 'shutdown') opts.log.error({ why }, `${opts.name}: lost the leader connection; stopping and standing by again`);
      tenure.abort(); // the duty's loops stop now, not at the end of their budget
      opts.signal.removeEventListener('abort', onShutdown);
      await stop();
    } catch (e) {
      opts.log.error({ err: e }, `${opts.name}: leadership loop error; retrying`);
      await sleep(poll, opts.signal);
    } finally {
      await client?.end().catch(() => {});
    }
  }
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}
