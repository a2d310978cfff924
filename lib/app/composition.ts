// Composition root: which handlers the pump knows, and how Redis is brought in line.
// Domains plug in here and nowhere else.
import type { Db } from "../db/postgres.ts";
import type { Redis } from "../db/redis.ts";
import { HandlerRegistry, type Mirror } from '../pipeline/handlers.ts';

export function buildRegistry(): HandlerRegistry {
  const registry = new HandlerRegistry();
  return registry;
}

export function buildMirror(_deps: { db: Db; redis: Redis }): Mirror {
  return { sync: async () => {} };
}
