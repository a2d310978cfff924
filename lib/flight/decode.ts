// Decoder: FLOP bodies and SCHD FLTR records → typed patches, driven by rules.ts.
// A patch maps state keys to a value (set) or null (clear); keys it does not mention are kept
// (FLOP, ADFT) or cleared by the merge (snapshot, C-6). Errors: MALFORMED for structure,
// PROTOCOL for a value that violates its format or domain (the detail names tag and value).
// Pure: the time zone is passed in.
import { malformed, protocol } from '../core/errors.ts';
import { payload, type Envelope } from '../sis/envelope.ts';
import { parseHhmm, parseSisTime } from '../sis/values.ts';
import { child, childrenOf, expand, parseXml, serialize, type XmlNode } from '../sis/xml.ts';
import { COLLECTION_BY_TAG, FLOP_STYPS, keysOf, MAX_RECS, SCALAR_BY_KEY, TAG_RULES, type CollectionSpec, type TagRule, type ValueKind } from './rules.ts';
import { isoLocal, type Row, type Value } from './state.ts';

/** state key → new value, or null = clear. */
export type Patch = Record<string, Value | null>;

export interface DecodeNotes {
  /** Tags the rule table does not know here (parent/tag for collection children); counted by the caller. */
  unknownTags: string[];
  /** Route points beyond the local 4 (ROUT/ERUT), counted by the caller. */
  droppedRoutePoints: number;
}

export interface DecodeOptions {
  timeZone: string;
}

export interface FlopMessage {
  styp: string;
  flid: string;
  /** FDEL: the delete path; patch is empty. */
  delete: boolean;
  patch: Patch;
  notes: DecodeNotes;
}

export interface ScheduleRecord {
  flid: string;
  patch: Patch;
}

export interface ScheduleMessage {
  styp: string;
  recs: number;
  records: ScheduleRecord[];
  notes: DecodeNotes;
}

export const isHandledFlopStyp = (styp: string) => Object.hasOwn(FLOP_STYPS, styp);

// ---------------------------------------------------------------------------------------------
// values

/**
 * SIS time text → ISO instant, per zone: a pure function that a snapshot asks for ~80,000 times
 * with a few thousand distinct values (minutes of its days); each conversion builds dates and
 * strings, so its results are kept (bounded; only valid times go in).
 */
const TIMES = new Map<string, string>();
const TIMES_MAX = 100_000;

/** One value of the given kind; '' → null (cleared). */
export function decodeValue(kind: ValueKind, text: string, where: string, opts: DecodeOptions, values?: readonly string[]): string | number | null {
  const t = text.trim();
  if (t === '') return null;
  switch (kind) {
    case 'text':
      if (values) {
        const u = t.toUpperCase();
        if (!values.includes(u)) throw protocol(`${where}="${t}" is not one of ${values.join('/')}`);
        return u;
      }
      return t;
    case 'int':
      if (!/^[+-]?\d{1,9}$/.test(t)) throw protocol(`${where}="${t}" is not an integer`);
      return Number(t);
    case 'time': {
      const key = `${opts.timeZone}|${t}`;
      let iso = TIMES.get(key);
      if (iso === undefined) {
        iso = isoLocal(parseSisTime(t, opts.timeZone, where), opts.timeZone);
        if (TIMES.size >= TIMES_MAX) TIMES.clear();
        TIMES.set(key, iso);
      }
      return iso;
    }
    case 'hhmm':
      parseHhmm(t, where);
      return t;
    case 'flid':
      if (!/^\d{1,30}$/.test(t)) throw protocol(`${where}="${t}" is not a flight id`);
      return t.replace(/^0+(?=\d)/, '');
    case 'bool':
      throw new Error(`bool is never decoded from a tag (${where})`);
  }
}

/** Every attribute empty, no text, and every child fully empty: `<DELY></DELY>`, `<ABTM/>`. */
function fullyEmpty(n: XmlNode): boolean {
  return n.text === '' && Object.values(n.attrs).every((v) => v === '') && n.children.every(fullyEmpty);
}

// ---------------------------------------------------------------------------------------------
// tag rules

interface Ctx {
  opts: DecodeOptions;
  notes: DecodeNotes;
  /** Where we are, for error details: 'FLOP/GTDT' or 'FLTR[3] FLID=15'. */
  at: string;
}

function scalarValue(key: string, node: XmlNode, ctx: Ctx): string | number | null {
  const spec = SCALAR_BY_KEY.get(key)!;
  const v = decodeValue(spec.kind, node.text, `${ctx.at} ${node.tag}`, ctx.opts, spec.values);
  if (spec.min !== undefined && typeof v === 'number' && v < spec.min) throw protocol(`${ctx.at} ${node.tag}="${node.text.trim()}" is below ${spec.min}`);
  return v;
}

function decodeCollection(spec: CollectionSpec, nodes: XmlNode[], ctx: Ctx): Row[] | string[] {
  const where = `${ctx.at} ${spec.tag}`;
  const isZero = (n: XmlNode) => spec.keyAttr !== undefined && /^\s*0+\s*$/.test(n.attrs[spec.keyAttr] ?? '');
  const isEmptyMarker = (n: XmlNode) => isZero(n) || fullyEmpty(n);
  if (nodes.length === 1 && isEmptyMarker(nodes[0])) return [];
  if (nodes.some(isEmptyMarker)) throw protocol(`${where}: an empty or number-0 element mixed with ${nodes.length - 1} other element(s)`);
  if (nodes.length > spec.capacity) throw protocol(`${where}: ${nodes.length} elements exceed the capacity ${spec.capacity}`);
  if (spec.raw) return nodes.map(serialize);
  let rows = nodes.map((n, i) => decodeRow(spec, n, { ...ctx, at: `${where}[${i + 1}]` }));
  if (spec.keepLocal !== undefined && rows.length > spec.keepLocal) {
    ctx.notes.droppedRoutePoints += rows.length - spec.keepLocal;
    rows = rows.slice(0, spec.keepLocal);
  }
  return rows;
}

function decodeRow(spec: CollectionSpec, n: XmlNode, ctx: Ctx): Row {
  const row: Row = {};
  if (spec.keyAttr) {
    const seq = decodeValue('int', n.attrs[spec.keyAttr] ?? '', `${ctx.at} @${spec.keyAttr}`, ctx.opts);
    if (seq !== null) row[spec.keyAttr] = seq;
  }
  const known = new Set<string>();
  for (const field of spec.fields) {
    let text: string | undefined;
    if (field.from === 'attr') text = n.attrs[field.name];
    else if (field.from === 'text') text = n.text;
    else {
      known.add(field.name);
      text = child(n, field.name)?.text;
    }
    const v = text === undefined ? null : decodeValue(field.kind, text, `${ctx.at} ${field.name}`, ctx.opts);
    if (v !== null) row[field.name] = v;
  }
  for (const c of n.children) if (!known.has(c.tag)) ctx.notes.unknownTags.push(`${spec.tag}/${c.tag}`);
  return row;
}

/** A body's children by tag, tags in first-seen order, each tag's children in document order. */
type ByTag = ReadonlyMap<string, XmlNode[]>;
function byTagOf(body: XmlNode): ByTag {
  const out = new Map<string, XmlNode[]>();
  for (const c of body.children) {
    const l = out.get(c.tag);
    if (l) l.push(c);
    else out.set(c.tag, [c]);
  }
  return out;
}
const NONE: XmlNode[] = [];

/** Apply one tag rule to the occurrences of its tag(s) in a body (its children by tag); writes into the patch. */
function applyRule(rule: TagRule, byTag: ByTag, patch: Patch, ctx: Ctx): void {
  const nodes = byTag.get(rule.tag) ?? NONE;
  if (nodes.length === 0) return;
  const first = nodes[0];
  switch (rule.rule) {
    case 'ignore':
      return;
    case 'scalar': {
      const v = scalarValue(rule.key, first, ctx);
      if (v === null && rule.mandatory) throw protocol(`${ctx.at} ${rule.tag} is mandatory and empty`);
      patch[rule.key] = v;
      return;
    }
    case 'flagged-time': {
      const v = scalarValue(rule.key, first, ctx);
      patch[rule.status] = v !== null;
      if (v !== null || !rule.emptyKeepsTime) patch[rule.key] = v;
      return;
    }
    case 'linked': {
      // Decided once for the whole group (the first tag of the group present does it).
      const present = rule.group.filter((t) => byTag.has(t));
      if (present[0] !== rule.tag) return;
      const vals = present.map((t) => [t, scalarValue(t, byTag.get(t)![0], ctx)] as const);
      if (vals.some(([, v]) => v === null)) for (const t of rule.group) patch[t] = null;
      else for (const [t, v] of vals) patch[t] = v;
      return;
    }
    case 'attributed': {
      const vals = new Map(rule.attrs.map((a) => [a, decodeValue('text', first.attrs[a] ?? '', `${ctx.at} ${rule.tag}@${a}`, ctx.opts, SCALAR_BY_KEY.get(a)!.values)]));
      const text = decodeValue('text', first.text, `${ctx.at} ${rule.tag}`, ctx.opts);
      if (vals.get(rule.presence) === null) {
        if (text !== null && rule.orphanText === 'protocol') throw protocol(`${ctx.at} ${rule.tag}="${text}" has text but no ${rule.presence}`);
        for (const k of keysOf(rule)) patch[k] = null;
        return;
      }
      for (const [a, v] of vals) patch[a] = v;
      patch[rule.textKey] = text;
      return;
    }
    case 'port': {
      for (const n of nodes) {
        const poid = decodeValue('text', child(n, 'POID')?.text ?? '', `${ctx.at} PORT/POID`, ctx.opts, ['O', 'C']);
        if (poid === null) throw protocol(`${ctx.at} PORT/POID missing or empty`);
        const key = rule.keys[poid as 'O' | 'C'];
        patch[key] = decodeValue('time', child(n, 'POTM')?.text ?? '', `${ctx.at} PORT/POTM`, ctx.opts);
        for (const c of n.children) if (c.tag !== 'POID' && c.tag !== 'POTM') ctx.notes.unknownTags.push(`PORT/${c.tag}`);
      }
      return;
    }
    case 'collection':
      patch[rule.tag] = decodeCollection(COLLECTION_BY_TAG.get(rule.tag)!, nodes, ctx);
      return;
  }
}

function flidOf(body: XmlNode, where: string, opts: DecodeOptions): string {
  const node = child(body, 'FLID');
  const v = node ? decodeValue('flid', node.text, `${where} FLID`, opts) : null;
  if (v === null) throw protocol(`${where}: FLID is mandatory and ${node ? 'empty' : 'missing'}`);
  return String(v);
}

// ---------------------------------------------------------------------------------------------
// FLOP

/** Decode a FLOP message of a handled STYP (check isHandledFlopStyp first). */
export function decodeFlop(env: Envelope, opts: DecodeOptions): FlopMessage {
  const styp = env.styp;
  const spec = FLOP_STYPS[styp];
  if (!spec) throw new Error(`FLOP/${styp} is not a handled STYP`);
  const body = payload(env).find((n) => n.tag === 'FLOP');
  if (!body) throw malformed(`FLOP/${styp}: no <FLOP> element`);
  const at = `FLOP/${styp}`;
  const notes: DecodeNotes = { unknownTags: [], droppedRoutePoints: 0 };
  const ctx: Ctx = { opts, notes, at };
  const flid = flidOf(body, at, opts);
  const patch: Patch = {};
  const carried = new Set(spec.tags);
  const byTag = byTagOf(body);
  for (const tag of byTag.keys()) {
    if (tag === 'FLID' || tag === 'FFID') continue;
    const rule = TAG_RULES.get(tag);
    if (!rule || !carried.has(tag)) {
      notes.unknownTags.push(tag);
      continue;
    }
    if (spec.need !== 'delete') applyRule(rule, byTag, patch, ctx);
  }
  const present = spec.tags.filter((t) => byTag.has(t));
  switch (spec.need) {
    case 'all':
      for (const t of spec.tags) if (!present.includes(t)) throw protocol(`${at}: required <${t}> missing`);
      break;
    case 'any':
      if (present.length === 0) throw protocol(`${at}: none of ${spec.tags.map((t) => `<${t}>`).join(' ')} present`);
      break;
    case 'absent-clears':
      for (const t of spec.tags) if (!present.includes(t)) for (const k of keysOf(TAG_RULES.get(t)!)) patch[k] = k === 'CANCELLED' || k === 'BOARDING' || k === 'LAST_CALL' ? false : null;
      break;
    case 'delete':
      break;
  }
  return { styp, flid, delete: spec.need === 'delete', patch, notes };
}

// ---------------------------------------------------------------------------------------------
// SCHD (DNLD, RESP, ADFT)

/** One FLTR record → patch (only the tags it carries; the merge decides what absence means). */
export function decodeFltr(rec: XmlNode, index: number, opts: DecodeOptions, notes: DecodeNotes): ScheduleRecord {
  const at0 = `SCHD FLTR[${index + 1}]`;
  const flid = flidOf(rec, at0, opts);
  const ctx: Ctx = { opts, notes, at: `${at0} FLID=${flid}` };
  const patch: Patch = {};
  const byTag = byTagOf(rec);
  for (const tag of byTag.keys()) {
    const rule = TAG_RULES.get(tag);
    if (!rule) notes.unknownTags.push(tag);
    else applyRule(rule, byTag, patch, ctx);
  }
  return { flid, patch };
}

/** The <SCHD> body's checks shared by every SCHD: RECS (0–9999, = record count); its FLTR elements (lazy ones not built). */
function scheduleBody(env: Envelope, notes: DecodeNotes): { recs: number; fltrs: XmlNode[] } {
  const at = `SCHD/${env.styp}`;
  const body = payload(env).find((n) => n.tag === 'SCHD');
  if (!body) throw malformed(`${at}: no <SCHD> element`);
  const recsNode = child(body, 'RECS');
  if (!recsNode) throw protocol(`${at}: RECS missing`);
  if (!/^\d{1,5}$/.test(recsNode.text) || Number(recsNode.text) > MAX_RECS) throw protocol(`${at}: RECS="${recsNode.text}" is not an integer 0–${MAX_RECS}`);
  const recs = Number(recsNode.text);
  const fltrs = childrenOf(body, 'FLTR');
  if (fltrs.length !== recs) throw protocol(`${at}: RECS=${recs} but ${fltrs.length} FLTR record(s)`);
  for (const c of body.children) if (c.tag !== 'RECS' && c.tag !== 'FLTR') notes.unknownTags.push(c.tag);
  return { recs, fltrs };
}

/** No FLID in two records. */
function onceEach(env: Envelope, records: readonly { flid: string }[]): void {
  const seen = new Set<string>();
  for (const r of records) {
    if (seen.has(r.flid)) throw protocol(`SCHD/${env.styp}: FLID=${r.flid} occurs in more than one FLTR record`);
    seen.add(r.flid);
  }
}

/** Decode SCHD DNLD/RESP/ADFT: RECS (0–9999, = record count), every record with a FLID, no FLID twice. */
export function decodeSchedule(env: Envelope, opts: DecodeOptions): ScheduleMessage {
  const notes: DecodeNotes = { unknownTags: [], droppedRoutePoints: 0 };
  const { recs, fltrs } = scheduleBody(env, notes);
  const records = fltrs.map((r, i) => decodeFltr(expand(r), i, opts, notes));
  onceEach(env, records);
  return { styp: env.styp, recs, records, notes };
}

/**
 * A snapshot record with its digest (undefined: none computed, never skipped). Either decoded
 * (`patch`), or not decoded (`raw`: its source; `day`: the operation day its flight is on), when
 * the pump's hints said its flight is still what this record left (lib/flight/digest.ts).
 */
export interface SnapshotRecord {
  flid: string;
  patch?: Patch;
  digest?: string;
  raw?: string;
  day?: string;
}

/** How a snapshot's records are digested (lib/flight/digest.ts recordDigest with its basis), and the hints' known records. */
export interface SnapshotDigests {
  digest: (raw: string) => string;
  known?: ReadonlyMap<string, { flid: string; day: string }>;
}

/** The patch of a snapshot record from its source (a lazy FLTR's raw text): as decodeSnapshotRecords would have decoded it. */
export function decodeRecordSource(raw: string, opts: DecodeOptions): Patch {
  return decodeFltr(parseXml(raw), 0, opts, { unknownTags: [], droppedRoutePoints: 0 }).patch;
}

/**
 * Decode SCHD DNLD/RESP as decodeSchedule does, each record with its digest when its source was
 * kept (a lazy element); a record whose digest the hints know is not decoded (digest.ts).
 */
export function decodeSnapshotRecords(env: Envelope, opts: DecodeOptions, digests: SnapshotDigests): Omit<ScheduleMessage, 'records'> & { records: SnapshotRecord[] } {
  const notes: DecodeNotes = { unknownTags: [], droppedRoutePoints: 0 };
  const { recs, fltrs } = scheduleBody(env, notes);
  const records = fltrs.map((r, i): SnapshotRecord => {
    if (r.raw === undefined) return decodeFltr(r, i, opts, notes);
    const digest = digests.digest(r.raw);
    const known = digests.known?.get(digest);
    if (known) return { flid: known.flid, day: known.day, raw: r.raw, digest };
    return { ...decodeFltr(expand(r), i, opts, notes), digest };
  });
  onceEach(env, records);
  return { styp: env.styp, recs, records, notes };
}
