// The mirror step of the pump (docs/design.md "The pump's steps", INV-10): bring Redis in line with Postgres for
// the flights a message addresses. Postgres is the truth (INV-5); Redis is never read back.
// `msgx:flight:<FLID>` = complete state JSON for ACTIVE flights; DEL for DELETED / unknown ones.
// The states the business transaction committed are written as they are (the pump is the only
// writer of flights under PIPELINE_LOCK: they are Postgres's current state); any other flight is
// read in one statement. One pipeline per 1,000 flights; any command error throws (the pump
// holds the head).
import type { Redis } from 'ioredis';
import type { Mirror } from '../domain/handlers.ts';
import type { Crash } from '../runtime/crash.ts';
import { readFlights } from './read.ts';
import { toJson, type FlightState } from './state.ts';
import type { Executor } from './store.ts';

export const flightKey = (flid: string) => `msgx:flight:${flid}`;

/** Flights per Redis pipeline (a 9,999-flight snapshot is a handful of round trips). */
const BATCH = 1000;

export function createFlightMirror(db: Executor, redis: Redis, opts: { timeZone: string; crash?: Crash }): Mirror {
  return {
    async probe(): Promise<void> {
      await redis.ping();
    },
    async sync(flids: string[], known?: ReadonlyMap<string, unknown>): Promise<void> {
      const ids = [...new Set(flids)];
      if (ids.length === 0) return;
      // states committed by the business transaction are used as they are; the rest is read (one statement)
      const unknown = known ? ids.filter((f) => !known.has(f)) : ids;
      const read = await readFlights(db, unknown, opts.timeZone);
      const stateOf = (f: string) => (known?.has(f) ? (known.get(f) as FlightState | null) : read.get(f));
      for (let i = 0; i < ids.length; i += BATCH) {
        const p = redis.pipeline();
        for (const f of ids.slice(i, i + BATCH)) {
          const s = stateOf(f);
          if (s && s.STATE === 'ACTIVE') p.set(flightKey(f), JSON.stringify(toJson(s)));
          else p.del(flightKey(f));
        }
        const res = await p.exec();
        if (!res) throw new Error('redis pipeline aborted');
        const err = res.find(([e]) => e)?.[0];
        if (err) throw err;
        if (i + BATCH < ids.length) opts.crash?.('pump.mid-redis');
      }
    },
  };
}
