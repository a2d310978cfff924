// The value types of the configuration (lib/core/config.ts): valibot schemas for durations, lists,
// numbers, time zones and the like, each refusing with a message that names what it expected
// (never the value: the caller shows it redacted).
import * as v from 'valibot';

export class ConfigError extends Error {}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "200ms", "2s", "10m", "24h", "30d" → milliseconds. */
export function parseDuration(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/.exec(text);
  if (!m) throw new Error(`"${text}" is not a duration (e.g. 200ms, 5s, 2m, 24h, 30d)`);
  return Math.round(Number(m[1]) * UNITS[m[2]]);
}

export const duration = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    try {
      return parseDuration(dataset.value);
    } catch (e) {
      addIssue({ message: (e as Error).message });
      return NEVER;
    }
  }),
);
/** A duration within [min, max] ms; a refusal names the range as `range` words it. */
export const durationIn = (min: number, max: number, range: string) =>
  v.pipe(
    duration,
    v.check((ms) => ms >= min && ms <= max, `expected a duration from ${range}`),
  );
export const durationList = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const s = dataset.value;
    try {
      const list = s.split(',').map((p) => parseDuration(p));
      if (list.length === 0) throw new Error('empty list');
      return list;
    } catch (e) {
      addIssue({ message: `"${s}" is not a comma-separated list of durations: ${(e as Error).message}` });
      return NEVER;
    }
  }),
);
/**
 * A whole number read as Number() reads it (what zod's coerce did, so the same values pass):
 * ' 5 ', '0x10', '1e3' are numbers; '' and blanks are 0; NaN, ±Infinity, fractions and integers
 * beyond 2^53 are refused.
 */
export const wholeNumber = (min: number, max = Number.MAX_SAFE_INTEGER, range = `>= ${min}`) =>
  v.pipe(
    v.string(),
    v.transform(Number),
    v.check((n) => Number.isSafeInteger(n) && n >= min && n <= max, `expected a whole number ${range}`),
  );
export const posInt = wholeNumber(1, undefined, '> 0');
/** One of the given strings (the message lists them; never the value, which the caller shows redacted). */
export const oneOf = <const T extends readonly string[]>(options: T) => v.picklist(options, `expected one of ${options.map((o) => JSON.stringify(o)).join(' | ')}`);
export const bool = v.pipe(
  oneOf(['true', 'false', '1', '0']),
  v.transform((s) => s === 'true' || s === '1'),
);
/** Not empty, and at most max characters counted as code points (as zod counted them; valibot's maxLength counts UTF-16 units). */
export const nonEmpty = (max = Number.MAX_SAFE_INTEGER) =>
  v.pipe(
    v.string(),
    v.nonEmpty('expected a non-empty value'),
    v.check((s) => s.length <= max || [...s].length <= max, `expected at most ${max} characters`),
  );
export const matching = (re: RegExp, message: string) => v.pipe(v.string(), v.regex(re, message));
export const localTime = matching(/^([01]\d|2[0-3]):[0-5]\d$/, 'expected HH:MM (24 h)');
export const port = wholeNumber(0, 65535, 'from 0 to 65535');
/** As zod's url(): surrounding blanks trimmed, any URL the WHATWG parser takes, tabs and newlines dropped. */
export const url = v.pipe(
  v.string(),
  v.trim(),
  v.check((s) => URL.canParse(s), 'expected a URL'),
  v.transform((s) => s.replace(/[\t\n\r]/g, '')),
);
/** '' → false (the TCP peer is the client); else the proxies' addresses / CIDRs (or loopback, uniquelocal), comma separated. */
export const trustProxy = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }): false | string => {
    const t = dataset.value.trim();
    if (t === '' || t === 'false') return false;
    if (t === 'true') {
      addIssue({ message: 'true would believe X-Forwarded-For from anyone: give the proxy address(es), e.g. 127.0.0.1' });
      return NEVER;
    }
    if (!/^[0-9A-Za-z.:/,\s]+$/.test(t)) {
      addIssue({ message: 'expected addresses or CIDRs, comma separated (e.g. 127.0.0.1,10.0.0.0/8)' });
      return NEVER;
    }
    return t;
  }),
);

/**
 * A zone ICU knows. Its list of canonical IANA names is looked up first: building an
 * Intl.DateTimeFormat loads ICU's locale and zone data, ~7 MB resident in every process, and most
 * duties never convert a time (docs/decisions.md "Footprint"). A name outside the list (an alias
 * such as UTC or Etc/GMT+8) is still checked the old way, so the same names are accepted.
 */
export function knownTimeZone(tz: string): boolean {
  if (Intl.supportedValuesOf('timeZone').includes(tz)) return true;
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export const tlsMode = oneOf(['', 'disable', 'verify-ca', 'verify-full']);
/** A comma-separated list ('' = none), blanks trimmed, each item matching `item`. */
export const listOf = (item: RegExp, what: string) =>
  v.pipe(
    v.string(),
    v.transform((s) =>
      s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    ),
    v.check((xs) => xs.every((x) => item.test(x)), `expected ${what}, comma separated`),
  );
export const PLAINTEXT_SERVICES = ['postgres', 'mariadb', 'redis', 'kafka'] as const;
export const httpsOrLoopback = v.pipe(
  v.string(),
  v.trim(),
  v.check(
    (s) => s === '' || (URL.canParse(s) && (new URL(s).protocol === 'https:' || LOOPBACK.has(new URL(s).hostname.replace(/^\[|\]$/g, '')))),
    'expected an https:// URL (http:// only on loopback)',
  ),
);
export const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1']);
