// A flight rule changed at start, for tests only (msgx.test.rule-override; docs/operations.md
// "Trying a rule change"): the way a test runs a shadow installation with one rule deliberately
// different from the live one's without editing the code. Read once by the composition
// (lib/app/composition.ts), which applies it to every decoded flight command. Pure.
//
// Grammar: `ignore <TAG> in <TYPE>/<STYP>` (STYP `*`: every STYP of the TYPE), several joined
// by `;`. The tag's state keys (rules.ts keysOf) are taken out of the command's patch(es): the
// message no longer sets, clears or changes them.
import type { Patch } from './decode.ts';
import type { FlightCommand } from './plan.ts';
import { keysOf, TAG_RULES } from './rules.ts';

export interface RuleOverride {
  type: string;
  styp: string;
  /** State keys the matching messages no longer touch. */
  ignoreKeys: readonly string[];
  text: string;
}

/** '' → none; otherwise every clause, or an Error naming the bad one. */
export function parseRuleOverride(spec: string): RuleOverride[] {
  const out: RuleOverride[] = [];
  for (const clause of spec
    .split(';')
    .map((c) => c.trim())
    .filter(Boolean)) {
    const m = /^ignore\s+([A-Z0-9_]+)\s+in\s+([A-Z]{4})\/([A-Z]{4}|\*)$/.exec(clause);
    if (!m) throw new Error(`rule override "${clause}": expected "ignore <TAG> in <TYPE>/<STYP>"`);
    const rule = TAG_RULES.get(m[1]);
    if (!rule) throw new Error(`rule override "${clause}": ${m[1]} is not a flight tag`);
    out.push({ type: m[2], styp: m[3], ignoreKeys: keysOf(rule), text: clause });
  }
  return out;
}

const strip = (patch: Patch, keys: readonly string[]): Patch => {
  const out: Patch = { ...patch };
  for (const k of keys) delete out[k];
  return out;
};

const keysFor = (overrides: readonly RuleOverride[], type: string, styp: string) => overrides.filter((o) => o.type === type && (o.styp === '*' || o.styp === styp)).flatMap((o) => o.ignoreKeys);

/** A patch of a TYPE/STYP message as the overridden rules decode it. */
export const overridePatch = (overrides: readonly RuleOverride[], type: string, styp: string, patch: Patch): Patch => strip(patch, keysFor(overrides, type, styp));

/** The command as the overridden rules decode it (the same command when none applies; a record left undecoded is overridden when it is decoded). */
export function applyRuleOverride(overrides: readonly RuleOverride[], type: string, styp: string, cmd: FlightCommand): FlightCommand {
  const keys = keysFor(overrides, type, styp);
  if (keys.length === 0) return cmd;
  if (cmd.kind === 'flop') return { ...cmd, patch: strip(cmd.patch, keys) };
  if (cmd.kind === 'adft') return { ...cmd, records: cmd.records.map((r) => ({ ...r, patch: strip(r.patch, keys) })) };
  return { ...cmd, records: cmd.records.map((r) => (r.patch ? { ...r, patch: strip(r.patch, keys) } : r)) };
}
