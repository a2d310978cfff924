// The mirror step of the pump (docs/design.md "The pump's steps", INV-10): bring Redis in line with Postgres for
// the flights a message addresses. Postgres is the truth (INV-5); Redis is a derived copy, written by version.
// `msgx:flight:<FLID>` = complete state JSON for ACTIVE flights; removed for DELETED / unknown ones.
// The states the business transaction committed are written as they are (the pump is the only
// writer of flights under PIPELINE_LOCK: they are Postgres's current state); any other flight is
// read in one statement. One script call per 1,000 flights; any error throws (the pump holds the head).
// A flight the business step knows only by its version (AtVersion: a snapshot record that changed
// nothing, lib/flight/digest.ts) is asked of Redis first, and read and written only when Redis
// does not hold that version.
//
// Writes never go backwards (docs/decisions.md "Redis written by version"): each flight is written
// by MIRROR_WRITE, a Lua script that applies a state only if its STATE_VERSION is at least the one
// Redis holds — the version inside the key's JSON, or, for a removed key, the version its removal
// left in `msgx:mirror:removed:<FLID>` (kept REMOVED_TTL_S). So a write that arrives late (sent
// down a connection that froze, delivered when it moved again) cannot overwrite a newer one, and
// the heal (lib/watches/redis.ts) and every re-sync may run beside the pump.
import type { Redis } from 'ioredis';
import type { Mirror } from '../domain/handlers.ts';
import type { Crash } from '../runtime/crash.ts';
import { readFlights } from './read.ts';
import { toJson, type FlightState } from './state.ts';
import type { Executor } from './store.ts';
import { PUMP } from '../core/tuning.ts';

export const flightKey = (flid: string) => `msgx:flight:${flid}`;
/** The version a removal left behind (a late write of an older state must not bring the key back). */
export const removedKey = (flid: string) => `msgx:mirror:removed:${flid}`;
/** How long a removal's version is kept: far beyond any connection that could still deliver a late write. */
export const REMOVED_TTL_S = 86_400;

const BATCH = PUMP.mirrorBatch;

/**
 * KEYS: per flight its key and its removed-key; ARGV[1] = REMOVED_TTL_S, ARGV[2] = 1 to write
 * whatever Redis holds (recover-restore only), then per flight its STATE_VERSION and its JSON
 * ('' = remove). Returns the number of flights whose write was refused as older.
 */
const MIRROR_WRITE = `
local ttl = ARGV[1]
local force = ARGV[2] == '1'
local refused = 0
for i = 1, #KEYS, 2 do
  local a = i + 2
  local v = tonumber(ARGV[a])
  local value = ARGV[a + 1]
  local have = 0
  if not force then
    local cur = redis.call('GET', KEYS[i])
    if cur then
      have = tonumber(string.match(cur, '"STATE_VERSION":(%d+)')) or 0
    else
      have = tonumber(redis.call('GET', KEYS[i + 1]) or '0') or 0
    end
  end
  if v < have then
    refused = refused + 1
  elseif value == '' then
    redis.call('DEL', KEYS[i])
    if v > 0 then redis.call('SET', KEYS[i + 1], ARGV[a], 'EX', ttl) end
  else
    redis.call('SET', KEYS[i], value)
    redis.call('DEL', KEYS[i + 1])
  end
end
return refused
`;

/**
 * KEYS: flight keys. Returns, per key, the STATE_VERSION its JSON holds (0: no key). Read on the
 * server: a check of every flight moves numbers, not states.
 */
const MIRROR_VERSIONS = `
local out = {}
for i = 1, #KEYS do
  local cur = redis.call('GET', KEYS[i])
  out[i] = cur and (tonumber(string.match(cur, '"STATE_VERSION":(%d+)')) or 0) or 0
end
return out
`;

interface MirrorScripts {
  msgxMirrorWrite(...args: (string | number)[]): Promise<number>;
  msgxMirrorVersions(numKeys: number, ...keys: string[]): Promise<number[]>;
}

function scripts(redis: Redis): MirrorScripts {
  const r = redis as Redis & Partial<MirrorScripts>;
  if (!r.msgxMirrorWrite) redis.defineCommand('msgxMirrorWrite', { lua: MIRROR_WRITE });
  if (!r.msgxMirrorVersions) redis.defineCommand('msgxMirrorVersions', { lua: MIRROR_VERSIONS });
  return r as Redis & MirrorScripts; // both commands defined above
}

/**
 * Redis values of flight states serialized ahead of the mirror step (prepareMirrorValues: the
 * business transaction does it while Postgres runs its write statements, lib/flight/session.ts).
 * A value is a pure function of its state object, which is never changed once made (a change is a
 * new state); the map is dropped after every writeMirror, so nothing is kept between batches.
 */
let prepared = new WeakMap<FlightState, string>();

/** Serialize these states' Redis values now (ACTIVE ones: the others are removals, no value). */
export function prepareMirrorValues(states: readonly FlightState[]): void {
  for (const s of states) if (s.STATE === 'ACTIVE' && !prepared.has(s)) prepared.set(s, JSON.stringify(toJson(s)));
}

const mirrorValue = (s: FlightState): string => prepared.get(s) ?? JSON.stringify(toJson(s));

/** One flight's write: its state (null: Postgres does not have it), and the version of its removal when null. */
export interface MirrorEntry {
  flid: string;
  state: FlightState | null;
}

/**
 * Writes the flights by version, BATCH per call. An ACTIVE state is set; a DELETED one, or an
 * unknown flight (version 0: never over a key Redis holds with a version), removed. `force`
 * writes whatever Redis holds (recover-restore: Redis ahead of a restored Postgres). Returns
 * how many writes Redis refused as older than what it holds.
 */
export async function writeMirror(redis: Redis, entries: readonly MirrorEntry[], o: { force?: boolean; between?: () => void } = {}): Promise<number> {
  const s = scripts(redis);
  let refused = 0;
  // each batch's values are built while Redis runs the batch before (one connection: Redis runs them in order)
  let running: Promise<unknown> | undefined;
  for (let i = 0; i < entries.length; i += BATCH) {
    const chunk = entries.slice(i, i + BATCH);
    const keys: string[] = [];
    const args: (string | number)[] = [REMOVED_TTL_S, o.force ? 1 : 0];
    for (const { flid, state } of chunk) {
      keys.push(flightKey(flid), removedKey(flid));
      args.push(state?.STATE_VERSION ?? 0, state && state.STATE === 'ACTIVE' ? mirrorValue(state) : '');
    }
    if (running) {
      refused += Number(await running);
      o.between?.();
    }
    running = s.msgxMirrorWrite(keys.length, ...keys, ...args);
  }
  prepared = new WeakMap(); // what was prepared is written now (or not needed): never kept beyond this batch
  if (running) refused += Number(await running);
  return refused;
}

/**
 * The STATE_VERSION Redis holds for each flight (0: no key), in order. The BATCH-sized calls are
 * sent at once, not each after the answer to the one before: Redis runs them in order on the one
 * connection while the pump builds the next and reads the answers (a read: nothing to keep in order).
 */
export async function mirrorVersions(redis: Redis, flids: readonly string[]): Promise<number[]> {
  const s = scripts(redis);
  const calls: Promise<number[]>[] = [];
  for (let i = 0; i < flids.length; i += BATCH) {
    const chunk = flids.slice(i, i + BATCH).map(flightKey);
    calls.push(s.msgxMirrorVersions(chunk.length, ...chunk));
  }
  return (await Promise.all(calls)).flatMap((r) => r.map(Number));
}

/** A committed flight known by its version only (its state was not loaded: nothing changed it). */
export class AtVersion {
  readonly version: number;
  constructor(version: number) {
    this.version = version;
  }
}

export function createFlightMirror(db: Executor, redis: Redis, opts: { timeZone: string; crash?: Crash }): Mirror {
  return {
    async probe(): Promise<void> {
      await redis.ping();
    },
    async sync(flids: string[], known?: ReadonlyMap<string, FlightState | AtVersion | null>): Promise<void> {
      let ids = [...new Set(flids)];
      if (ids.length === 0) return;
      // known by version only: nothing to write where Redis holds that version (written by version: the same state)
      const byVersion = known ? ids.filter((f) => known.get(f) instanceof AtVersion) : [];
      if (byVersion.length) {
        const held = await mirrorVersions(redis, byVersion);
        const inLine = new Set(byVersion.filter((f, i) => held[i] === (known!.get(f) as AtVersion).version));
        ids = ids.filter((f) => !inLine.has(f));
      }
      // states committed by the business transaction are used as they are; the rest is read (one statement)
      const stateOf = (f: string) => {
        const k = known?.get(f);
        return k instanceof AtVersion ? undefined : k;
      };
      const unknown = ids.filter((f) => stateOf(f) === undefined);
      const read = await readFlights(db, unknown, opts.timeZone);
      const entries = ids.map((flid) => ({ flid, state: stateOf(flid) ?? read.get(flid) ?? null }));
      await writeMirror(redis, entries, { between: () => opts.crash?.('pump.mid-redis') });
    },
  };
}
