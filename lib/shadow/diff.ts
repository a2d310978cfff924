// The state diff of two installations (docs/operations.md "Trying a rule change"): two sides'
// flights, reference data and message outcomes, read at the same inbox position → what differs.
// Pure: the reads are lib/shadow/collect.ts, the CLIs scripts/compare.ts and scripts/dry-run.ts.
//
// What is compared, at position P (the highest message both have made terminal) and from S (the
// later of the two start positions: rows up to it were never both sides' own):
//  - every flight as GET /flights/:flid shows it, but for the clock-valued and installation-specific
//    keys (IGNORED_KEYS). A flight is not comparable when its history began at or before S (a
//    retained change record at or before S on either side; or its creation record is purged on a
//    side and the two sides' STATE_VERSIONs differ), when
//    either side changed it after P, or when it is DELETED on one side and already purged on the
//    other (history purge runs on each installation's own clock); those are counted, never
//    reported as differences;
//  - reference data records (master data, resource status, seasons), under the same two rules by
//    the message that last wrote each record;
//  - the outcome (state and reason) of every message in (S, P].

/** Keys of the flight JSON that are not differences: when it ran, on which installation. */
export const IGNORED_KEYS: ReadonlySet<string> = new Set(['UPDATED_AT', 'CREATED_AT', 'DELETED_AT', 'EVENT_ID', 'updated_at', 'created_at', 'processed_at', 'terminal_at', 'enqueued_at']);

export type Json = Record<string, unknown>;

/** Where a flight's history begins on one side: its first retained change record. */
export interface HistoryStart {
  firstMsg: number;
  firstVersion: number;
}

/** One change record, reduced to what "who set this field" needs. */
export interface ChangeRef {
  stateVersion: number;
  msgId: number;
  kind: string;
  keys: readonly string[];
}

export interface Outcome {
  state: string;
  reason: string | null;
  kind: string | null;
}

export interface RefRecord {
  value: unknown;
  lastMsgId: number;
}

export interface SideData {
  /** A label for the report ('here', 'other', 'dry-run', 'live'). */
  name: string;
  /** Inbox position this side started after (0: from the first row). */
  startedAfter: number;
  /** Highest message with nothing open at or below it. */
  position: number;
  /** Ranges retention deleted before this side read them. */
  lost: readonly { lo: number; hi: number }[];
  flights: ReadonlyMap<string, Json>;
  history: ReadonlyMap<string, HistoryStart>;
  outcomes: ReadonlyMap<number, Outcome>;
  /** Key "table/key" → record. */
  reference: ReadonlyMap<string, RefRecord>;
}

export interface Setter {
  msgId: number;
  kind: string;
}

export interface FieldDiff {
  field: string;
  here: unknown;
  other: unknown;
  /** The message that last set this side's value (null: not known — change records purged, or never set). */
  setHere: Setter | null;
  setOther: Setter | null;
}

export interface FlightDiff {
  flid: string;
  fields: FieldDiff[];
}

export interface OutcomeDiff {
  msgId: number;
  here: Outcome | null;
  other: Outcome | null;
}

export interface RefDiff {
  table: string;
  key: string;
  here: unknown;
  other: unknown;
  setHere: number | null;
  setOther: number | null;
}

export type NotComparableWhy = 'history-before-start' | 'changed-after-position' | 'purged-on-one-side';

export interface DiffReport {
  position: number;
  positions: { here: number; other: number };
  startedAfter: number;
  names: { here: string; other: string };
  flights: { compared: number; equal: number; different: number; notComparable: number; notComparableBy: Record<NotComparableWhy, number> };
  reference: { tables: number; tablesDifferent: number; records: number; recordsDifferent: number; notComparable: number };
  outcomes: { compared: number; different: number };
  lost: { here: { count: number; ranges: string[] }; other: { count: number; ranges: string[] } };
  flightDiffs: FlightDiff[];
  referenceDiffs: RefDiff[];
  outcomeDiffs: OutcomeDiff[];
  equal: boolean;
}

/** Canonical JSON text of a value: object keys sorted, the ignored keys left out. */
export function canonicalText(v: unknown): string {
  return JSON.stringify(strip(v));
}

function strip(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(strip);
  if (v && typeof v === 'object') {
    const out: Json = {};
    for (const k of Object.keys(v).sort()) if (!IGNORED_KEYS.has(k)) out[k] = strip((v as Json)[k]);
    return out;
  }
  return v;
}

/** The fields of two flight JSONs that differ (a missing flight = every field of the other), in key order. */
export function differingFields(a: Json | undefined, b: Json | undefined): string[] {
  const keys = [...new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})])].filter((k) => !IGNORED_KEYS.has(k)).sort();
  return keys.filter((k) => canonicalText(a?.[k] ?? null) !== canonicalText(b?.[k] ?? null));
}

/** Fields no change record names: the version bookkeeping, set by whichever message made the version. */
const VERSION_FIELDS = new Set(['STATE_VERSION', 'LAST_MSG_ID', 'FLID']);

/** The message that last set `field` (newest first `changes`), or null. */
export function lastSetter(changes: readonly ChangeRef[] | undefined, field: string): Setter | null {
  if (!changes?.length) return null;
  const c = VERSION_FIELDS.has(field) ? changes[0] : changes.find((x) => x.keys.includes(field));
  return c ? { msgId: c.msgId, kind: c.kind } : null;
}

const lastMsg = (f: Json | undefined) => (f && f.LAST_MSG_ID !== undefined && f.LAST_MSG_ID !== null ? Number(f.LAST_MSG_ID) : null);

/**
 * Where a flight's history began on this side, relative to the start `s`: 'after' (its creation
 * record is retained and after s), 'before' (a retained record at or before s), or 'unknown' (its
 * first records are purged, msgx.pipeline.event-retention).
 */
export function historyBegan(h: HistoryStart | undefined, s: number): 'after' | 'before' | 'unknown' {
  if (h === undefined) return 'unknown';
  if (h.firstMsg <= s) return 'before';
  return h.firstVersion === 1 ? 'after' : 'unknown';
}

/**
 * Comparable as far as history goes: no side's history began before the start, and a side whose
 * beginning is unknown has made exactly as many versions as the other (a flight that existed
 * before the start has versions the other side never made).
 */
function historyComparable(a: Json | undefined, b: Json | undefined, ha: HistoryStart | undefined, hb: HistoryStart | undefined, s: number): boolean {
  const began = [a ? historyBegan(ha, s) : 'after', b ? historyBegan(hb, s) : 'after'];
  if (began.includes('before')) return false;
  if (!began.includes('unknown')) return true;
  return a !== undefined && b !== undefined && Number(a.STATE_VERSION) === Number(b.STATE_VERSION);
}

/** Which flights are compared, which not and why; the FLIDs that differ. Step one of diff(). */
export function classifyFlights(here: SideData, other: SideData, position: number, start: number) {
  const flids = [...new Set([...here.flights.keys(), ...other.flights.keys()])].sort();
  const notComparableBy: Record<NotComparableWhy, number> = { 'history-before-start': 0, 'changed-after-position': 0, 'purged-on-one-side': 0 };
  const different: string[] = [];
  let compared = 0;
  for (const flid of flids) {
    const a = here.flights.get(flid);
    const b = other.flights.get(flid);
    if ((lastMsg(a) ?? 0) > position || (lastMsg(b) ?? 0) > position) {
      notComparableBy['changed-after-position']++;
      continue;
    }
    // a DELETED flight one side's history purge already removed (retention runs on its own clock)
    if ((!a && b?.STATE === 'DELETED') || (!b && a?.STATE === 'DELETED')) {
      notComparableBy['purged-on-one-side']++;
      continue;
    }
    // a side that has the flight must have seen its creation after the start
    if (!historyComparable(a, b, here.history.get(flid), other.history.get(flid), start)) {
      notComparableBy['history-before-start']++;
      continue;
    }
    compared++;
    if (differingFields(a, b).length) different.push(flid);
  }
  return { compared, different, notComparableBy };
}

const rangeText = (r: { lo: number; hi: number }) => (r.lo === r.hi ? `${r.lo}` : `${r.lo}-${r.hi}`);
const lostOf = (s: SideData) => ({ count: s.lost.reduce((n, r) => n + r.hi - r.lo + 1, 0), ranges: s.lost.map(rangeText) });

/**
 * The whole diff. `changes`: per different flight and side, its change records up to the
 * position, newest first (read for the different flights only, after classifyFlights).
 */
export function diff(here: SideData, other: SideData, changes: { here: ReadonlyMap<string, ChangeRef[]>; other: ReadonlyMap<string, ChangeRef[]> }): DiffReport {
  const position = Math.min(here.position, other.position);
  const start = Math.max(here.startedAfter, other.startedAfter);
  const cls = classifyFlights(here, other, position, start);
  const flightDiffs: FlightDiff[] = cls.different.map((flid) => {
    const a = here.flights.get(flid);
    const b = other.flights.get(flid);
    return {
      flid,
      fields: differingFields(a, b).map((field) => ({
        field,
        here: a?.[field] ?? null,
        other: b?.[field] ?? null,
        setHere: a ? lastSetter(changes.here.get(flid), field) : null,
        setOther: b ? lastSetter(changes.other.get(flid), field) : null,
      })),
    };
  });

  // reference data
  const tables = new Set<string>();
  const tablesDifferent = new Set<string>();
  const referenceDiffs: RefDiff[] = [];
  let records = 0;
  let refNotComparable = 0;
  for (const key of [...new Set([...here.reference.keys(), ...other.reference.keys()])].sort()) {
    const table = key.slice(0, key.indexOf('/'));
    tables.add(table);
    const a = here.reference.get(key);
    const b = other.reference.get(key);
    const outside = (r: RefRecord | undefined) => r !== undefined && (r.lastMsgId <= start || r.lastMsgId > position);
    if (outside(a) || outside(b)) {
      refNotComparable++;
      continue;
    }
    records++;
    if (canonicalText(a?.value ?? null) !== canonicalText(b?.value ?? null)) {
      tablesDifferent.add(table);
      referenceDiffs.push({ table, key: key.slice(table.length + 1), here: a?.value ?? null, other: b?.value ?? null, setHere: a?.lastMsgId ?? null, setOther: b?.lastMsgId ?? null });
    }
  }

  // message outcomes in (start, position]
  const outcomeDiffs: OutcomeDiff[] = [];
  let outcomesCompared = 0;
  const ids = [...new Set([...here.outcomes.keys(), ...other.outcomes.keys()])].filter((id) => id > start && id <= position).sort((x, y) => x - y);
  for (const id of ids) {
    outcomesCompared++;
    const a = here.outcomes.get(id) ?? null;
    const b = other.outcomes.get(id) ?? null;
    if (!a || !b || a.state !== b.state || (a.reason ?? null) !== (b.reason ?? null)) outcomeDiffs.push({ msgId: id, here: a, other: b });
  }

  const different = flightDiffs.length;
  return {
    position,
    positions: { here: here.position, other: other.position },
    startedAfter: start,
    names: { here: here.name, other: other.name },
    flights: {
      compared: cls.compared,
      equal: cls.compared - different,
      different,
      notComparable: Object.values(cls.notComparableBy).reduce((x, y) => x + y, 0),
      notComparableBy: cls.notComparableBy,
    },
    reference: { tables: tables.size, tablesDifferent: tablesDifferent.size, records, recordsDifferent: referenceDiffs.length, notComparable: refNotComparable },
    outcomes: { compared: outcomesCompared, different: outcomeDiffs.length },
    lost: { here: lostOf(here), other: lostOf(other) },
    flightDiffs,
    referenceDiffs,
    outcomeDiffs,
    equal: different === 0 && referenceDiffs.length === 0 && outcomeDiffs.length === 0,
  };
}

const show = (v: unknown) => (v === null || v === undefined ? '(absent)' : typeof v === 'string' ? v : JSON.stringify(v));
const setBy = (s: Setter | null) => (s ? `set by ${s.msgId} ${s.kind}` : 'setter unknown');
const outcomeText = (o: Outcome | null) => (o ? `${o.state}${o.reason ? ` (${o.reason})` : ''}` : 'not taken in');

/** The report as text: the summary first, then each difference. */
export function formatReport(r: DiffReport, o: { maxFlights?: number } = {}): string {
  const n = r.names;
  const lines = [
    `compared at inbox position ${r.position} (${n.here} at ${r.positions.here}, ${n.other} at ${r.positions.other}), messages after ${r.startedAfter}`,
    `flights: ${r.flights.compared} compared, ${r.flights.equal} equal, ${r.flights.different} different, ${r.flights.notComparable} not comparable (${r.flights.notComparableBy['history-before-start']} history began before the start, ${r.flights.notComparableBy['changed-after-position']} changed after the position, ${r.flights.notComparableBy['purged-on-one-side']} deleted and purged on one side)`,
    `reference data: ${r.reference.tables} table(s) compared, ${r.reference.tablesDifferent} different (${r.reference.records} record(s), ${r.reference.recordsDifferent} different, ${r.reference.notComparable} not comparable)`,
    `message outcomes: ${r.outcomes.compared} compared, ${r.outcomes.different} different`,
  ];
  if (r.positions.here !== r.positions.other) {
    const [ahead, by] = r.positions.here > r.positions.other ? [n.here, r.positions.here - r.positions.other] : [n.other, r.positions.other - r.positions.here];
    lines.push(`positions differ: ${ahead} is ${by} inbox ID(s) ahead; compared at the lower one, flights changed after it are not comparable`);
  }
  for (const [side, l] of [
    [n.here, r.lost.here],
    [n.other, r.lost.other],
  ] as const) {
    if (l.count) lines.push(`${side}: ${l.count} inbox ID(s) deleted by retention before it read them: ${l.ranges.join(', ')}`);
  }
  const max = o.maxFlights ?? 200;
  for (const f of r.flightDiffs.slice(0, max)) {
    lines.push(`flight ${f.flid}:`);
    for (const d of f.fields) lines.push(`  ${d.field}: ${n.here} ${show(d.here)} (${setBy(d.setHere)}) | ${n.other} ${show(d.other)} (${setBy(d.setOther)})`);
  }
  if (r.flightDiffs.length > max) lines.push(`… ${r.flightDiffs.length - max} more different flight(s) (--json lists all)`);
  for (const d of r.referenceDiffs.slice(0, max)) {
    lines.push(`reference ${d.table} ${d.key}: ${n.here} ${show(d.here)} (set by ${d.setHere ?? '-'}) | ${n.other} ${show(d.other)} (set by ${d.setOther ?? '-'})`);
  }
  for (const d of r.outcomeDiffs.slice(0, max)) lines.push(`message ${d.msgId}: ${n.here} ${outcomeText(d.here)} | ${n.other} ${outcomeText(d.other)}`);
  if (r.outcomeDiffs.length > max) lines.push(`… ${r.outcomeDiffs.length - max} more message outcome(s) (--json lists all)`);
  lines.push(r.equal ? 'equal' : 'different');
  return lines.join('\n');
}
