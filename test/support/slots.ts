// Parallel test files: each vitest worker (VITEST_POOL_ID 1…n, one file at a time) has a slot of
// its own — a Postgres database, a MariaDB schema and a Redis db — so files that use only those
// run side by side. Slot 1 is the base names themselves; slot k > 1 appends `_w<k>` to the
// database names (created by global-setup.ts) and takes the k-th Redis db of the list.
const BASE_PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/msgx_test';
const BASE_INBOX_URL = process.env.TEST_INBOX_URL ?? 'mysql://root@127.0.0.1:3306/aodbinterface_test';
const BASE_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';

/**
 * Redis dbs, one per slot: TEST_REDIS_DBS (comma list), else the db of TEST_REDIS_URL alone
 * (a run pointed at one db keeps to it: one worker), else 15,14,13.
 */
export function redisDbs(): number[] {
  const list = process.env.TEST_REDIS_DBS;
  if (list) {
    const dbs = list.split(',').map((s) => Number(s.trim()));
    if (dbs.some((d) => !Number.isInteger(d) || d < 0)) throw new Error(`TEST_REDIS_DBS must be a comma list of Redis db numbers, not "${list}"`);
    return dbs;
  }
  if (process.env.TEST_REDIS_URL) return [Number(new URL(BASE_REDIS_URL).pathname.slice(1) || 0)];
  return [15, 14, 13];
}

/**
 * Slots before this run's own: TEST_SLOT_OFFSET (default 0). scripts/test.ts runs a second
 * vitest beside the first on the slots after the first one's.
 */
export function slotOffset(): number {
  const n = Number(process.env.TEST_SLOT_OFFSET ?? 0);
  if (!Number.isInteger(n) || n < 0) throw new Error(`TEST_SLOT_OFFSET must be a whole number ≥ 0, not "${process.env.TEST_SLOT_OFFSET}"`);
  return n;
}

/** Workers (slots) of a run: TEST_WORKERS (default 3), never more than the Redis dbs after the offset. */
export function slotCount(): number {
  const wanted = Number(process.env.TEST_WORKERS ?? 3);
  if (!Number.isInteger(wanted) || wanted < 1) throw new Error(`TEST_WORKERS must be a whole number ≥ 1, not "${process.env.TEST_WORKERS}"`);
  const left = redisDbs().length - slotOffset();
  if (left < 1) throw new Error(`TEST_SLOT_OFFSET=${slotOffset()} leaves no Redis db of the ${redisDbs().length} listed`);
  return Math.min(wanted, left);
}

/** The slot of this process: the offset plus its vitest worker's (1 outside a worker: global setup, scripts). */
export const currentSlot = (): number => slotOffset() + Number(process.env.VITEST_POOL_ID ?? 1);

const renameDb = (url: string, suffix: string) => url.replace(/\/([^/?]+)(\?|$)/, (_, db, tail) => `/${db}${suffix}${tail}`);

export interface SlotUrls {
  pg: string;
  inbox: string;
  redis: string;
}

export function slotUrls(slot: number): SlotUrls {
  const dbs = redisDbs();
  if (slot < 1 || slot > dbs.length) throw new Error(`test slot ${slot} has no Redis db (TEST_REDIS_DBS lists ${dbs.length})`);
  const suffix = slot === 1 ? '' : `_w${slot}`;
  const redis = new URL(BASE_REDIS_URL);
  redis.pathname = `/${dbs[slot - 1]}`;
  return { pg: renameDb(BASE_PG_URL, suffix), inbox: renameDb(BASE_INBOX_URL, suffix), redis: redis.toString() };
}
