// Shared by the lifecycle jobs (one file per purged object, index in tasks.ts): their
// dependencies, the time budget, the batch loop, the deletion counter and the PIPELINE_LOCK
// session the flight purge and the ledger purge run under.
import type { Logger } from 'pino';
import type { Redis } from 'ioredis';
import type { Clock } from '../core/clock.ts';
import { slices, type AirportConfig, type Config, type Slices } from '../core/config.ts';
import { LOCKS, type Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import * as Locks from '../sql/locks.ts';
import { metrics } from '../runtime/metrics.ts';
import type { TimeBudget } from '../core/budget.ts';

export interface RetentionDeps {
  /** Pooled Postgres. */
  db: Db;
  inbox: Inbox;
  redis: Redis;
  clock: Clock;
  /** Ages, batches' read-only switch and the I/O timeout (msgx.*.retention, msgx.history.purge-after, …). */
  retention: Slices['retention'];
  airport: AirportConfig;
  log: Logger;
}

/** The config slices the lifecycle jobs read (workers/retention.ts and the tests build RetentionDeps with this). */
export const retentionSettings = (config: Config) => {
  const s = slices(config);
  return { retention: s.retention, airport: s.airport };
};

export interface JobOptions {
  /** Rows per batch (flights per purge transaction). */
  batch?: number;
  budget?: TimeBudget;
}

export const TERMINAL = ['SUCCEEDED', 'SKIPPED', 'DEAD'] as const;
export const IN_PROCESS = ['PENDING', 'FAILED'] as const;

type Retention = Slices['retention'];
/** The retention slice's ages (milliseconds). */
export type Age = { [K in keyof Retention]: Retention[K] extends number ? (K extends 'timeoutMs' ? never : K) : never }[keyof Retention];
/** The instant `age` before now. */
export const before = (d: Pick<RetentionDeps, 'clock' | 'retention'>, age: Age) => new Date(d.clock.now().getTime() - d.retention[age]);
export const count = (object: string, n: number) => {
  if (n > 0) metrics.retentionDeleted.inc({ object }, n);
};

/** Loop `step` (one batch each, returning [deleted, rows looked at]) until a short batch or the budget. */
export async function batches(o: JobOptions, dflt: number, step: (batch: number) => Promise<[number, number]>): Promise<number> {
  const batch = o.batch ?? dflt;
  let total = 0;
  for (;;) {
    const [deleted, seen] = await step(batch);
    total += deleted;
    if (seen < batch || o.budget?.spent()) return total;
  }
}

export interface PurgeOptions extends JobOptions {
  /** Test seam: called with the candidates after they were read and before PIPELINE_LOCK is taken. */
  beforeLock?: (candidates: { flid: string; state_version: number }[]) => Promise<void>;
  /** How long to wait for PIPELINE_LOCK (the pump holds it per message). */
  lockWaitMs?: number;
}

export interface PurgeSession {
  /** Kysely on ONE dedicated connection: the session-level advisory locks live on it. */
  db: Db;
}

/** Run `fn` holding PIPELINE_LOCK on the session (waits at most lockWaitMs for the pump). */
export async function underPipelineLock<T>(session: PurgeSession, o: PurgeOptions, fn: () => Promise<T>): Promise<T> {
  const wait = o.lockWaitMs ?? 60_000;
  await Locks.setLockTimeout(session.db, `${wait}ms`);
  try {
    await Locks.lock(session.db, LOCKS.PIPELINE);
  } finally {
    await Locks.resetLockTimeout(session.db).catch(() => {}); // back to the connection's own (lib/db/postgres.ts), not unlimited
  }
  try {
    return await fn();
  } finally {
    await Locks.unlock(session.db, LOCKS.PIPELINE).catch(() => {});
  }
}
