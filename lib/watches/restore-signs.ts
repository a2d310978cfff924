// The signs that Postgres is behind (restored from a backup), besides the Kafka one
// (./restore-kafka.ts): inbox rows above intake's watermark marked processed that Postgres does
// not know, and flights Redis holds newer than Postgres. The restore watch (./restore.ts) looks for
// them; the operator's recovery (lib/pipeline/restore-recover.ts) reads the lost range with them.
import type { Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import type { Redis } from '../db/redis.ts';
import { withTimeout } from '../core/timeout.ts';
import { WATCH } from '../core/tuning.ts';
import { flightKey } from '../flight/mirror.ts';
import * as Restore from '../sql/restore.ts';

export type Source = 'inbox' | 'redis' | 'kafka';
export const SOURCES: readonly Source[] = ['inbox', 'redis', 'kafka'];

const { inboxPage: INBOX_PAGE, checkPages: CHECK_PAGES, scanCount: SCAN_COUNT } = WATCH.restore;

/** One sign that Postgres is behind. */
export interface Finding {
  source: Source;
  detail: string;
}

/**
 * Has this Postgres ever taken in a message? A fresh install (watermark 0) over an inbox another
 * system processed, or over a Redis an older installation filled, has forgotten nothing: no check
 * runs until intake took in its first row.
 */
export async function inUse(db: Db): Promise<{ watermark: number } | null> {
  const cur = await Restore.readWatermark(db);
  if (!cur) throw new Error('intake_cursor has no row');
  return cur.watermark > 0 ? cur : null;
}

/**
 * Inbox rows above the watermark marked processed that PROC_STATE does not know (null: none, or
 * a fresh install). Rows PROC_STATE knows are no sign: an operator may lower the watermark to
 * have a late row read again (docs/operations.md). `all`: every page (the command's lost range);
 * else the check stops at the first page with such rows.
 */
export async function inboxBehind(db: Db, inbox: Inbox, timeoutMs: number, all = false): Promise<{ watermark: number; n: number; lo: number; hi: number } | null> {
  const cur = await inUse(db);
  if (!cur) return null;
  let after = cur.watermark;
  let n = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (let page = 0; all || page < CHECK_PAGES; page++) {
    const ids = (await withTimeout(timeoutMs, 'inbox restore check', Restore.readProcessedAbove(inbox, after, INBOX_PAGE))).map((r) => Number(r.id));
    if (ids.length === 0) break;
    const unknown = (await Restore.listUnknownMessages(db, ids)).map((r) => Number(r.msg_id));
    n += unknown.length;
    for (const id of unknown) {
      lo = Math.min(lo, id);
      hi = Math.max(hi, id);
    }
    if ((n > 0 && !all) || ids.length < INBOX_PAGE) break;
    after = ids[ids.length - 1];
  }
  return n > 0 ? { watermark: cur.watermark, n, lo, hi } : null;
}

const KEY_PREFIX = flightKey('');

/** Redis flight keys, one SCAN page at a time. */
export async function* redisFlights(redis: Redis, timeoutMs: number): AsyncGenerator<string[]> {
  let cursor = '0';
  do {
    const [next, keys] = await withTimeout(timeoutMs, 'redis scan', redis.scan(cursor, 'MATCH', `${KEY_PREFIX}*`, 'COUNT', SCAN_COUNT));
    cursor = next;
    if (keys.length) yield keys.map((k) => k.slice(KEY_PREFIX.length));
  } while (cursor !== '0');
}

/** Flights Redis holds newer than Postgres (or Postgres lacks): one MGET + one query per SCAN page. */
export async function redisAhead(db: Db, redis: Redis, timeoutMs: number): Promise<{ flights: number; sample: string[] } | null> {
  const ahead = async (flids: string[]) => {
    if (flids.length === 0) return [];
    // Redis first, then Postgres: the pump commits before it writes Redis, so a live pair never looks ahead
    const values = await withTimeout(timeoutMs, 'redis mget', redis.mget(...flids.map(flightKey)));
    const pg = new Map((await Restore.readFlightVersions(db, flids)).map((r) => [r.flid, r.state_version]));
    return flids.filter((f, i) => {
      const v = values[i];
      if (v === null) return false;
      // toJson writes FLID, STATE, STATE_VERSION first: no need to parse the whole state
      const redisVersion = Number(/"STATE_VERSION":(\d+)/.exec(v)?.[1] ?? 0);
      const pgVersion = pg.get(f);
      return pgVersion === undefined || redisVersion > pgVersion;
    });
  };
  let suspects: string[] = [];
  for await (const page of redisFlights(redis, timeoutMs)) suspects.push(...(await ahead(page)));
  // a flight written right now (Postgres first, then Redis): look again
  if (suspects.length) suspects = await ahead(suspects);
  return suspects.length ? { flights: suspects.length, sample: suspects.slice(0, 5) } : null;
}

/** One check per sign this process can see: the detail of what it found, null when nothing. */
export type SignChecks = Partial<Record<Source, () => Promise<string | null>>>;

/**
 * The signs a process checks: the inbox (unless read-only: another instance marks it), Redis
 * (the pump, the retention), the msg topic (the pump: ./restore-kafka.ts). Redis and Kafka only
 * once intake took in a row (inUse): a fresh install over an old store has forgotten nothing.
 */
export function signChecks(d: { db: Db; inbox: Inbox; redis?: Redis; inboxReadOnly?: boolean; kafka?: () => Promise<Finding | null>; timeoutMs: number }): SignChecks {
  const { db, redis, kafka } = d;
  const t = d.timeoutMs;
  const checks: SignChecks = {
    inbox: async () => {
      if (d.inboxReadOnly) return null;
      const r = await inboxBehind(db, d.inbox, t);
      return r ? `${r.n} inbox row(s) in ${r.lo}..${r.hi} are marked processed above intake's watermark ${r.watermark} but unknown to Postgres` : null;
    },
  };
  if (redis)
    checks.redis = async () => {
      if (!(await inUse(db))) return null;
      // a client made at the process's start may still be connecting: its commands are refused until
      // 'ready' (enableOfflineQueue is off), which failed this first check and held the process;
      // the driver on first use (a process without Redis, intake, never loads it: docs/decisions.md "Footprint")
      await (await import('../db/redis.ts')).redisReady(redis, t);
      const r = await redisAhead(db, redis, t);
      return r ? `Redis holds ${r.flights} flight(s) newer than Postgres (e.g. ${r.sample.join(', ')})` : null;
    };
  if (kafka) checks.kafka = async () => ((await inUse(db)) ? ((await kafka())?.detail ?? null) : null);
  return checks;
}
