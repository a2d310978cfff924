// Canonical JSON for comparing two runs' end states: object keys sorted, Dates as ISO text, and
// the clock-valued keys left out (two runs of the same input differ only in when they ran).
export const CLOCK_KEYS: ReadonlySet<string> = new Set(['UPDATED_AT', 'CREATED_AT', 'DELETED_AT', 'updated_at', 'created_at', 'deleted_at']);

/** Deep copy without the keys in `drop` (default: the clock-valued ones), object keys sorted. */
export function canonical(v: unknown, drop: ReadonlySet<string> = CLOCK_KEYS): unknown {
  if (Array.isArray(v)) return v.map((x) => canonical(x, drop));
  if (v instanceof Date) return v.toISOString();
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) if (!drop.has(k)) out[k] = canonical((v as Record<string, unknown>)[k], drop);
    return out;
  }
  return v;
}
