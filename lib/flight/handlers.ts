// The flight domain as the pump sees it (docs/design.md "The pump's steps", business): SCHD DNLD/RESP (snapshot, applied
// as a batch of its own), SCHD ADFT (set-only upsert), FLOP (merge; FDEL = delete path). Each
// message is decoded to a command here (pure); a batch of them is applied by the planner
// (plan.ts) through the session (session.ts) inside the pump's business transaction.
import type { AirportConfig } from '../core/config.ts';
import type { BatchDomain, DecodeHints, HandlerRegistry } from '../domain/handlers.ts';
import type { Envelope } from '../sis/envelope.ts';
import type { LazySpec } from '../sis/xml.ts';
import * as Digest from '../sql/digest.ts';
import { decodeFlop, decodeRecordSource, decodeSchedule, decodeSnapshotRecords, type Patch } from './decode.ts';
import { recordDigest } from './digest.ts';
import { validateSnapshot } from './ledger.ts';
import type { FlightCommand } from './plan.ts';
import { FLOP_STYPS } from './rules.ts';
import { applyRuleOverride, overridePatch, parseRuleOverride } from './override.ts';
import { FlightSession, FlightStateCache, type FlightDomainOptions } from './session.ts';

/** A snapshot's records are left unbuilt by the envelope decode (lib/sis/xml.ts lazy): each is digested from its source first. */
export const SNAPSHOT_RECORDS: LazySpec = { parent: 'SCHD', child: 'FLTR' };

/** What decides a record's decoding besides its text (digest.ts recordDigest's basis). */
const digestBasis = (airport: AirportConfig, ruleOverride: string) => `${airport.timezone}|${airport.dayCutover}|${ruleOverride}`;

/** Decode a flight message into the planner's command (pure). PROTOCOL/MALFORMED throw. `hints`: records known not to need decoding. */
export function decodeFlightCommand(env: Envelope, airport: AirportConfig, hints?: DecodeHints, ruleOverride = ''): FlightCommand {
  const opts = { timeZone: airport.timezone };
  if (env.type === 'FLOP') {
    const m = decodeFlop(env, opts);
    return { kind: 'flop', styp: m.styp, flid: m.flid, delete: m.delete, patch: m.patch, notes: m.notes };
  }
  if (env.styp === 'ADFT') {
    const m = decodeSchedule(env, opts);
    return { kind: 'adft', styp: m.styp, records: m.records, notes: m.notes };
  }
  const basis = digestBasis(airport, ruleOverride);
  const m = decodeSnapshotRecords(env, opts, { digest: (raw) => recordDigest(raw, basis), ...(hints?.knownRecords ? { known: hints.knownRecords } : {}) });
  // INV-4: PROTOCOL before any write
  const day = validateSnapshot(m, { timeZone: opts.timeZone, cutover: airport.dayCutover });
  return { kind: 'snapshot', styp: env.styp as 'DNLD' | 'RESP', day, recs: m.recs, records: m.records, notes: m.notes };
}

/**
 * The flight domain of one registry. It keeps the flights' committed states between batches
 * (FlightStateCache): the pump is the only writer of flights while it holds PIPELINE_LOCK, so a
 * state it committed is the current one until the lock is released (reset) — the next batch
 * need not load it again.
 */
export function createFlightDomain(opts: FlightDomainOptions = {}): BatchDomain<FlightCommand> {
  const cache = new FlightStateCache();
  const spec = opts.ruleOverride ?? '';
  const overrides = parseRuleOverride(spec);
  const overridden = (type: string, styp: string, cmd: FlightCommand) => (overrides.length ? applyRuleOverride(overrides, type, styp, cmd) : cmd);
  return {
    decode: (env, airport, hints) => overridden(env.type, env.styp, decodeFlightCommand(env, airport, hints, spec)),
    lazy: SNAPSHOT_RECORDS,
    hints: async (db) => ({ knownRecords: new Map((await Digest.listKnownRecords(db)).map((r) => [r.digest, { flid: r.flid, day: r.operation_day }])) }),
    ownBatch: (cmd) => cmd.kind === 'snapshot',
    // a record left undecoded, decoded after all (its flight changed after the hints were read): as decode would have
    open: (ctx) =>
      new FlightSession(ctx, cache, opts, (raw: string, type: string, styp: string): Patch => {
        const patch = decodeRecordSource(raw, { timeZone: ctx.airport.timezone });
        return overrides.length ? overridePatch(overrides, type, styp, patch) : patch;
      }),
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
