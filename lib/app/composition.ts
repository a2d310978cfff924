// Composition root: which handlers the pump knows, and how Redis is brought in line.
// Domains plug in here and nowhere else.
import type { AirportConfig } from '../core/config.ts';
import type { Db } from '../db/postgres.ts';
import type { Redis } from '../db/redis.ts';
import type { Crash } from '../runtime/crash.ts';
import { registerFlightHandlers } from '../flight/handlers.ts';
import { scheduleResponseGuard } from '../requests/schedule-guard.ts';
import { createFlightMirror } from '../flight/mirror.ts';
import { HandlerRegistry, type Mirror } from '../domain/handlers.ts';
import { Decoder } from '../pipeline/decoder.ts';
import { FLOP_STYPS } from '../flight/rules.ts';
import { ERROR_STYPS, registerRefdataHandlers } from '../refdata/handlers.ts';

/** Registry options: change records (default on) and, in tests only, a flight rule override (msgx.test.rule-override, read once at start). */
export interface RegistryOptions {
  changeRecords?: boolean;
  ruleOverride?: string;
}

export function buildRegistry(opts: RegistryOptions = {}): HandlerRegistry {
  const registry = new HandlerRegistry();
  registerFlightHandlers(registry, { ...opts, responseGuard: scheduleResponseGuard }); // SCHD DNLD/RESP/ADFT, FLOP/* (FDEL = delete path); G-RESP-GUARD from request tracking
  registerRefdataHandlers(registry); // 23 reference TYPEs, RSTA, SCHS, EROR
  // wildcard handlers: the STYPs they know, so metric labels stay bounded (metricKind)
  registry.declareStyps('FLOP', Object.keys(FLOP_STYPS));
  registry.declareStyps('EROR', ERROR_STYPS);
  return registry;
}

/** The pump's decode worker (lib/pipeline/decoder.ts): the same registry as buildRegistry(opts), in a worker thread. */
export function buildDecoder(pump: { includeDayBoundary: boolean; messageBudgetMs: number; ruleOverride?: string }, airport: AirportConfig, opts: RegistryOptions = {}): Decoder {
  return new Decoder({
    url: new URL('./decode-worker.ts', import.meta.url),
    settings: { airport, includeDayBoundary: pump.includeDayBoundary },
    registry: { ruleOverride: pump.ruleOverride, ...opts },
    budgetMs: pump.messageBudgetMs,
  });
}

const labelRegistry = buildRegistry();

/**
 * The `kind` label of a message's processing metrics (msgx_messages_total,
 * msgx_message_processing_seconds …): 'TYPE/STYP' for a kind the handler registry knows,
 * 'TYPE/other' or 'other' otherwise, never a string chosen by the sender. Pure.
 */
export function metricKind(type: string, styp: string): string {
  return labelRegistry.metricKind(type, styp);
}

/** The pump's mirror step: Redis flight snapshots from Postgres. */
export function buildMirror(deps: { db: Db; redis: Redis; airport: AirportConfig; crash?: Crash }): Mirror {
  return createFlightMirror(deps.db, deps.redis, { timeZone: deps.airport.timezone, crash: deps.crash });
}
