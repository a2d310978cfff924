// Composition root: which handlers the pump knows, and how Redis is brought in line.
// Domains plug in here and nowhere else.
import type { Config } from '../config.ts';
import type { Db } from '../db/postgres.ts';
import type { Redis } from '../db/redis.ts';
import { registerFlightHandlers } from '../flight/handlers.ts';
import { createFlightMirror } from '../flight/mirror.ts';
import { HandlerRegistry, type Mirror } from '../pipeline/handlers.ts';
import { registerRefdataHandlers } from '../refdata/handlers.ts';

export function buildRegistry(): HandlerRegistry {
  const registry = new HandlerRegistry();
  registerFlightHandlers(registry); // SCHD DNLD/RESP/ADFT, FLOP/* (FDEL = delete path)
  registerRefdataHandlers(registry); // 23 reference TYPEs, RSTA, SCHS, EROR
  return registry;
}

/** Step 2 of the pump's success path: Redis flight snapshots from Postgres. */
export function buildMirror(deps: { db: Db; redis: Redis; config: Config }): Mirror {
  return createFlightMirror(deps.db, deps.redis, { timeZone: deps.config['msgx.airport.timezone'] });
}
