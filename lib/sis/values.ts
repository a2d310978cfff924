// SIS value formats (docs/design.md "Glossary"). Local airport times carry no zone: they are
// interpreted in msgx.airport.timezone. Pure functions; the zone is always passed in.
import { protocol } from '../core/errors.ts';

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];

const formatters = new Map<string, Intl.DateTimeFormat>();
const offsets = new Map<string, number>();
const BUCKET_MS = 15 * 60_000; // zone offsets change on quarter-hour boundaries at the finest

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** The zone's UTC offset (ms) at an instant; Intl is slow, so it is asked once per quarter hour. */
function offsetAt(ms: number, timeZone: string): number {
  const bucket = Math.floor(ms / BUCKET_MS) * BUCKET_MS;
  const key = `${timeZone}|${bucket}`;
  let off = offsets.get(key);
  if (off === undefined) {
    const parts = formatter(timeZone).formatToParts(new Date(bucket));
    const get = (t: string) => Number(parts.find((p) => p.type === t)!.value);
    off = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second')) - bucket;
    if (offsets.size > 50_000) offsets.clear();
    offsets.set(key, off);
  }
  return off;
}

/** Wall-clock fields of an instant in a zone. */
export function wallClock(at: Date, timeZone: string) {
  const t = new Date(at.getTime() + offsetAt(at.getTime(), timeZone));
  return {
    year: t.getUTCFullYear(),
    month: t.getUTCMonth() + 1,
    day: t.getUTCDate(),
    hour: t.getUTCHours(),
    minute: t.getUTCMinutes(),
    second: t.getUTCSeconds(),
  };
}

/**
 * The instant at which the zone's wall clock shows these fields. A wall time that a DST change
 * skips (spring gap, e.g. 02:30 on the night clocks go 02:00 → 03:00) resolves forward by the
 * gap (→ 03:30, the offset in force before the change); a wall time that occurs twice (autumn)
 * resolves to the first occurrence. docs/decisions.md.
 */
export function fromWallClock(y: number, mo: number, d: number, h: number, mi: number, s: number, timeZone: string): Date {
  const asUtc = Date.UTC(y, mo - 1, d, h, mi, s);
  const shows = (t: number) => {
    const w = wallClock(new Date(t), timeZone);
    return Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second) === asUtc;
  };
  // The offsets a day either side: equal unless a zone change is near (one change per day at most).
  const before = asUtc - offsetAt(asUtc - 86_400_000, timeZone);
  const after = asUtc - offsetAt(asUtc + 86_400_000, timeZone);
  const fits = [before, after].filter(shows);
  if (fits.length > 0) return new Date(Math.min(...fits));
  // Neither shows it: the wall time is in a gap. The offset before the change carries it forward.
  return new Date(before);
}

function validDate(y: number, mo: number, d: number): boolean {
  const t = new Date(Date.UTC(y, mo - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d;
}

/** `DDMONYYHHMM` (e.g. 23JAN210535), month in any case, two-digit year = 20YY. Throws PROTOCOL naming the tag. */
export function parseSisTime(text: string, timeZone: string, tag = 'time'): Date {
  const m = /^(\d{2})([A-Za-z]{3})(\d{2})(\d{2})(\d{2})$/.exec(text.trim());
  const mo = m ? MONTHS.indexOf(m[2].toUpperCase()) + 1 : 0;
  if (!m || mo === 0) throw protocol(`${tag}="${text}" is not DDMONYYHHMM`);
  const [d, y, h, mi] = [Number(m[1]), 2000 + Number(m[3]), Number(m[4]), Number(m[5])];
  if (!validDate(y, mo, d) || h > 23 || mi > 59) throw protocol(`${tag}="${text}" is not a valid date/time`);
  return fromWallClock(y, mo, d, h, mi, 0, timeZone);
}

/** `DDMONYY` (e.g. 10SEP20) → ISO date 'YYYY-MM-DD'. */
export function parseSisDate(text: string, tag = 'date'): string {
  const m = /^(\d{2})([A-Za-z]{3})(\d{2})$/.exec(text.trim());
  const mo = m ? MONTHS.indexOf(m[2].toUpperCase()) + 1 : 0;
  if (!m || mo === 0 || !validDate(2000 + Number(m[3]), mo, Number(m[1]))) throw protocol(`${tag}="${text}" is not DDMONYY`);
  return `20${m[3]}-${String(mo).padStart(2, '0')}-${m[1]}`;
}

/** `HHMM` (e.g. 0200) → minutes. Durations may exceed 24 h? SIS samples never do; hours up to 99 accepted. */
export function parseHhmm(text: string, tag = 'HHMM'): number {
  const m = /^(\d{2})(\d{2})$/.exec(text.trim());
  if (!m || Number(m[2]) > 59) throw protocol(`${tag}="${text}" is not HHMM`);
  return Number(m[1]) * 60 + Number(m[2]);
}

/** Date → `DDMONYYHHMM` local. */
export function formatSisTime(at: Date, timeZone: string): string {
  const w = wallClock(at, timeZone);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${p(w.day)}${MONTHS[w.month - 1]}${p(w.year % 100)}${p(w.hour)}${p(w.minute)}`;
}

/** Date → `yyyyMMddHHmmss` local (META/DTTM). */
export function formatDttm(at: Date, timeZone: string): string {
  const w = wallClock(at, timeZone);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${w.year}${p(w.month)}${p(w.day)}${p(w.hour)}${p(w.minute)}${p(w.second)}`;
}

/** Date → 'YYYY-MM-DD HH:MM:SS' local: what a zone-less MySQL DATETIME column holds. */
export function formatLocalDatetime(at: Date, timeZone: string): string {
  const w = wallClock(at, timeZone);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${w.year}-${p(w.month)}-${p(w.day)} ${p(w.hour)}:${p(w.minute)}:${p(w.second)}`;
}

/** Minutes after midnight of an 'HH:MM' cutover. */
export function cutoverMinutes(cutover: string): number {
  const [h, m] = cutover.split(':').map(Number);
  return h * 60 + m;
}

/** Operation day (ISO 'YYYY-MM-DD') of an instant: local date, shifted back one day before the cutover. */
export function operationDayOf(at: Date, timeZone: string, cutover: string): string {
  const shifted = new Date(at.getTime());
  const w0 = wallClock(shifted, timeZone);
  let { year, month, day } = w0;
  if (w0.hour * 60 + w0.minute < cutoverMinutes(cutover)) {
    const prev = new Date(Date.UTC(year, month - 1, day - 1));
    year = prev.getUTCFullYear();
    month = prev.getUTCMonth() + 1;
    day = prev.getUTCDate();
  }
  return `${year}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

/** First and last minute (local) of operation day D: [D cutover, D+1 cutover − 1 min]. */
export function operationDayBounds(day: string, timeZone: string, cutover: string): { start: Date; end: Date } {
  const [y, mo, d] = day.split('-').map(Number);
  const c = cutoverMinutes(cutover);
  const start = fromWallClock(y, mo, d, Math.floor(c / 60), c % 60, 0, timeZone);
  const next = fromWallClock(y, mo, d + 1, Math.floor(c / 60), c % 60, 0, timeZone);
  return { start, end: new Date(next.getTime() - 60_000) };
}
