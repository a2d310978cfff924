// The flight domain as the pump sees it (docs/design.md "The pump's steps", business): SCHD DNLD/RESP (snapshot, applied
// as a batch of its own), SCHD ADFT (set-only upsert), FLOP (merge; FDEL = delete path). Each
// message is decoded to a command here (pure); a batch of them is applied by the planner
// (plan.ts) through the session (session.ts) inside the pump's business transaction.
import type { AirportConfig } from '../core/config.ts';
import type { BatchDomain, HandlerRegistry } from '../domain/handlers.ts';
import type { Envelope } from '../sis/envelope.ts';
import { decodeFlop, decodeSchedule } from './decode.ts';
import { recordDigest } from './digest.ts';
import { validateSnapshot } from './ledger.ts';
import type { FlightCommand } from './plan.ts';
import { FLOP_STYPS } from './rules.ts';
import { applyRuleOverride, parseRuleOverride } from './override.ts';
import { FlightSession, FlightStateCache, type FlightDomainOptions } from './session.ts';

/** Decode a flight message into the planner's command (pure). PROTOCOL/MALFORMED throw. */
export function decodeFlightCommand(env: Envelope, airport: AirportConfig): FlightCommand {
  const opts = { timeZone: airport.timezone };
  if (env.type === 'FLOP') {
    const m = decodeFlop(env, opts);
    return { kind: 'flop', styp: m.styp, flid: m.flid, delete: m.delete, patch: m.patch, notes: m.notes };
  }
  const m = decodeSchedule(env, opts);
  if (env.styp === 'ADFT') return { kind: 'adft', styp: m.styp, records: m.records, notes: m.notes };
  // INV-4: PROTOCOL before any write
  const day = validateSnapshot(m, { timeZone: opts.timeZone, cutover: airport.dayCutover });
  return { kind: 'snapshot', styp: env.styp as 'DNLD' | 'RESP', day, recs: m.recs, records: m.records, notes: m.notes };
}

/** A snapshot's records with their digests (digest.ts), taken from the patches as the planner will apply them. */
function withDigests(cmd: FlightCommand): FlightCommand {
  if (cmd.kind !== 'snapshot') return cmd;
  return { ...cmd, records: cmd.records.map((r) => ({ flid: r.flid, patch: r.patch, digest: recordDigest(r.patch) })) };
}

/**
 * The flight domain of one registry. It keeps the flights' committed states between batches
 * (FlightStateCache): the pump is the only writer of flights while it holds PIPELINE_LOCK, so a
 * state it committed is the current one until the lock is released (reset) — the next batch
 * need not load it again.
 */
export function createFlightDomain(opts: FlightDomainOptions = {}): BatchDomain<FlightCommand> {
  const cache = new FlightStateCache();
  const overrides = parseRuleOverride(opts.ruleOverride ?? '');
  return {
    decode: (env, airport) => withDigests(overrides.length ? applyRuleOverride(overrides, env.type, env.styp, decodeFlightCommand(env, airport)) : decodeFlightCommand(env, airport)),
    ownBatch: (cmd) => cmd.kind === 'snapshot',
    open: (ctx) => new FlightSession(ctx, cache, opts),
    reset: () => cache.clear(),
  };
}

export function registerFlightHandlers(registry: HandlerRegistry, opts: FlightDomainOptions = {}): HandlerRegistry {
  const domain = createFlightDomain(opts);
  registry.registerDomain('SCHD', 'DNLD', domain).registerDomain('SCHD', 'RESP', domain).registerDomain('SCHD', 'ADFT', domain);
  // a FLOP STYP the rule table does not handle has no entry: SKIPPED(unsupported)
  for (const styp of Object.keys(FLOP_STYPS)) registry.registerDomain('FLOP', styp, domain);
  return registry;
}
