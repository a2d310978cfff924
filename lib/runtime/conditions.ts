// Named conditions that make a process unready: a module that finds its process must not act
// (e.g. Postgres restored from a backup, lib/watches/restore.ts) sets one with its reason;
// /healthz (lib/runtime/process.ts) answers 503 with every condition set, until it is cleared.
// The module that sets a condition also exports its own gauge (what it measured).

export interface Condition {
  name: string;
  reason: string;
  since: string;
}

const active = new Map<string, Condition>();

/** Sets (or updates the reason of) a condition; `since` stays the first time it was set. */
export function setCondition(name: string, reason: string, now: Date): void {
  const prev = active.get(name);
  active.set(name, { name, reason, since: prev?.since ?? now.toISOString() });
}

export function clearCondition(name: string): void {
  active.delete(name);
}

/** The conditions set now (empty: ready as far as they are concerned). */
export function conditions(): Condition[] {
  return [...active.values()];
}

/**
 * Facts a process reports in /healthz without being unready (e.g. a shadow installation's start
 * position and the inbox rows retention deleted before it read them, lib/pipeline/intake.ts).
 */
const notes = new Map<string, unknown>();

export function setNote(name: string, value: unknown): void {
  notes.set(name, value);
}

/** The notes set now, by name (empty object: none). */
export function healthNotes(): Record<string, unknown> {
  return Object.fromEntries(notes);
}
