// The complete state of one flight and its JSON form (docs/flight-state.md "The complete-state JSON": the shape used
// by Redis, the schd topic and HTTP). Pure: no I/O.
import { wallClock } from '../sis/values.ts';
import { COLLECTIONS, SCALAR_KEYS, STATUS_KEYS } from './rules.ts';

/** One element of a collection: field name → value; an empty field is an absent key. */
export type Row = Record<string, string | number>;
/** A state value: scalar text/int/ISO time, status boolean, collection rows, raw fragments. */
export type Value = string | number | boolean | Row[] | string[];
/** Business keys (SIS tags, status keys, PORT_OPEN/PORT_CLOSE, reasons). Absent = cleared. */
export type FlightData = Record<string, Value>;

export interface MaflEntry {
  FLID: string;
  FLNO?: string;
}

export interface FlightState {
  FLID: string;
  STATE: 'ACTIVE' | 'DELETED';
  STATE_VERSION: number;
  /** 'YYYY-MM-DD'; null = not known yet. */
  OPERATION_DAY: string | null;
  /** ISO-8601 with offset. */
  UPDATED_AT: string;
  LAST_MSG_ID: number | null;
  /** CANCELLED/BOARDING/LAST_CALL always present. */
  data: FlightData;
  /** Derived (G-MAFL): ACTIVE shared flights of this master, ordered by FLID. Never from input. */
  MAFL: MaflEntry[];
}

/** The JSON form (Redis, schd payload, HTTP). */
export type FlightJson = Record<string, unknown>;

/** Data of a flight that has nothing: status keys false. */
export function emptyData(): FlightData {
  return Object.fromEntries(STATUS_KEYS.map((k) => [k, false]));
}

/** An instant as ISO-8601 with the zone's offset, e.g. 2021-01-23T05:35:00+08:00. */
export function isoLocal(at: Date, timeZone: string): string {
  const w = wallClock(at, timeZone);
  const p = (n: number, l = 2) => String(n).padStart(l, '0');
  const shownUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  const offMin = Math.round((shownUtc - Math.floor(at.getTime() / 1000) * 1000) / 60_000);
  const sign = offMin < 0 ? '-' : '+';
  const abs = Math.abs(offMin);
  return `${p(w.year, 4)}-${p(w.month)}-${p(w.day)}T${p(w.hour)}:${p(w.minute)}:${p(w.second)}${sign}${p(Math.floor(abs / 60))}:${p(abs % 60)}`;
}

/** Stable serialisation (sorted object keys) for "nothing changed" comparisons. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Whether two values are the same (as canonical() would say; absent = null), without serialising the common cases. */
export function sameValue(a: Value | undefined, b: Value | undefined): boolean {
  return same(a ?? null, b ?? null);
}

function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!same(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let n = 0;
  for (const k in ao) {
    if (ao[k] === undefined) continue;
    n++;
    if (!same(ao[k], bo[k])) return false;
  }
  for (const k in bo) if (bo[k] !== undefined) n--;
  return n === 0;
}

/** Business keys in JSON order: status keys, scalars, collections. */
export const DATA_KEYS: readonly string[] = [...STATUS_KEYS, ...SCALAR_KEYS.map((s) => s.key), ...COLLECTIONS.map((c) => c.tag)];

const IS_STATUS: ReadonlySet<string> = new Set(STATUS_KEYS);

/** Complete state → JSON: cleared values and empty collections are absent keys (never null). */
export function toJson(s: FlightState): FlightJson {
  const out: FlightJson = { FLID: s.FLID, STATE: s.STATE, STATE_VERSION: s.STATE_VERSION };
  if (s.OPERATION_DAY) out.OPERATION_DAY = s.OPERATION_DAY;
  out.UPDATED_AT = s.UPDATED_AT;
  if (s.LAST_MSG_ID !== null) out.LAST_MSG_ID = s.LAST_MSG_ID;
  for (const k of DATA_KEYS) {
    const v = s.data[k];
    if (IS_STATUS.has(k)) out[k] = v === true;
    else if (v === undefined || v === null || v === '' || (Array.isArray(v) && v.length === 0)) continue;
    else out[k] = v;
  }
  if (s.MAFL.length > 0) out.MAFL = s.MAFL;
  return out;
}

/**
 * JSON → complete state: the inverse of toJson for the JSON it writes (the archived states of
 * FLIGHT_HISTORY; toJson(fromJson(j)) is j). Keys that are not state keys are ignored.
 */
export function fromJson(j: FlightJson): FlightState {
  const data = emptyData();
  for (const k of DATA_KEYS) {
    const v = j[k];
    if (v !== undefined && v !== null) data[k] = v as Value;
  }
  return {
    FLID: String(j.FLID),
    STATE: j.STATE === 'DELETED' ? 'DELETED' : 'ACTIVE',
    STATE_VERSION: Number(j.STATE_VERSION),
    OPERATION_DAY: typeof j.OPERATION_DAY === 'string' ? j.OPERATION_DAY : null,
    UPDATED_AT: String(j.UPDATED_AT),
    LAST_MSG_ID: j.LAST_MSG_ID === undefined || j.LAST_MSG_ID === null ? null : Number(j.LAST_MSG_ID),
    data,
    MAFL: Array.isArray(j.MAFL) ? (j.MAFL as MaflEntry[]) : [],
  };
}

/** Keys whose values differ between two data objects (status keys, scalars, collections). */
export function diffKeys(a: FlightData, b: FlightData): string[] {
  return DATA_KEYS.filter((k) => !sameValue(norm(a[k]), norm(b[k])));
}

/** Absent, '' and [] are the same "cleared"; false status = absent status. */
function norm(v: Value | undefined): Value | undefined {
  if (v === undefined || v === '' || v === false) return undefined;
  if (Array.isArray(v) && v.length === 0) return undefined;
  return v;
}
