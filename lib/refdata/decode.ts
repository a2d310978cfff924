// Pure decoding of reference-data messages: <RECS>n</RECS> followed by n record elements
// named after TYPE (direct children of <MSG> only). Driven by the key table (lib/sis/refdata-keys.ts).
//
// Stored record encoding (JSON), the same for every category:
//   - a plain element               → its trimmed text, or null when empty ("not available")
//   - an element with attributes    → { "@ATTR": value|null, …, "value": text|null }
//   - an element with children      → { CHILD: …, … } (same rules, recursively; "@ATTR" too)
//   - a repeated child (key table)  → always an array of the above, [] when absent
//   - any other child occurring more than once → an array as well (never lose data)
import { protocol } from '../core/errors.ts';
import type { Envelope } from '../sis/envelope.ts';
import { child, type XmlNode } from '../sis/xml.ts';
import { REF_STYPS, type RefCategory, type RefOperation, type RefStyp } from '../sis/refdata-keys.ts';

export type Json = string | null | Json[] | { [k: string]: Json };
export type RecordFields = Record<string, Json>;

export interface RefRecord {
  rkey: string;
  fields: RecordFields;
}

export interface DecodedRefMessage {
  rtype: string;
  styp: RefStyp;
  op: RefOperation;
  /** In message order; a key carried twice keeps its last occurrence. */
  records: RefRecord[];
  /** Tags the key table does not know (still stored). */
  unknownTags: string[];
}

const nullIfEmpty = (s: string): string | null => (s === '' ? null : s);

/** One element as JSON (see the encoding above). */
export function elementValue(node: XmlNode, repeated: ReadonlySet<string> = new Set()): Json {
  const attrs = Object.entries(node.attrs);
  if (attrs.length === 0 && node.children.length === 0) return nullIfEmpty(node.text);
  const out: Record<string, Json> = {};
  for (const [k, v] of attrs) out[`@${k}`] = nullIfEmpty(v);
  if (node.children.length === 0) out.value = nullIfEmpty(node.text);
  else {
    Object.assign(out, childrenValues(node, repeated));
    if (node.text !== '') out.value = node.text;
  }
  return out;
}

/** The children of a record (or nested element) as a field map. */
export function childrenValues(node: XmlNode, repeated: ReadonlySet<string> = new Set()): RecordFields {
  const out: RecordFields = {};
  for (const tag of repeated) out[tag] = [];
  const counts = new Map<string, number>();
  for (const c of node.children) counts.set(c.tag, (counts.get(c.tag) ?? 0) + 1);
  for (const c of node.children) {
    const v = elementValue(c);
    if (repeated.has(c.tag) || counts.get(c.tag)! > 1) {
      const list = (Array.isArray(out[c.tag]) ? out[c.tag] : []) as Json[];
      list.push(v);
      out[c.tag] = list;
    } else out[c.tag] = v;
  }
  return out;
}

/** <RECS> of a parent: mandatory integer 0..9999 equal to the number of records. */
export function checkRecs(parent: XmlNode, recordCount: number, where: string, opts: { optional?: boolean } = {}): number {
  const recs = child(parent, 'RECS');
  if (!recs) {
    if (opts.optional) return recordCount;
    throw protocol(`${where}: RECS missing`);
  }
  if (!/^\d{1,4}$/.test(recs.text)) throw protocol(`${where}: RECS="${recs.text}" is not an integer 0..9999`);
  const n = Number(recs.text);
  if (n !== recordCount) throw protocol(`${where}: RECS=${n} but the message carries ${recordCount} record(s)`);
  return n;
}

/** Decode a reference-data message of a category. Throws PROTOCOL naming tag and value. */
export function decodeRefMessage(env: Pick<Envelope, 'type' | 'styp' | 'root'>, cat: RefCategory): DecodedRefMessage {
  const styp = env.styp as RefStyp;
  if (!(styp in REF_STYPS)) throw protocol(`${cat.rtype}: STYP="${env.styp}" is not one of ${Object.keys(REF_STYPS).join('/')}`);
  const nodes = env.root.children.filter((c) => c.tag === cat.rtype);
  checkRecs(env.root, nodes.length, `${cat.rtype}/${styp}`);
  const repeated = new Set(cat.repeated);
  const known = new Set(cat.fields);
  const unknown = new Set<string>();
  const byKey = new Map<string, RefRecord>();
  nodes.forEach((node, i) => {
    const keyNode = child(node, cat.key);
    if (!keyNode || keyNode.text === '') throw protocol(`${cat.rtype}/${styp} record ${i + 1}: key ${cat.key}="${keyNode?.text ?? ''}" missing or empty`);
    for (const c of node.children) if (!known.has(c.tag)) unknown.add(c.tag);
    byKey.delete(keyNode.text); // last occurrence wins, in its position
    byKey.set(keyNode.text, { rkey: keyNode.text, fields: childrenValues(node, repeated) });
  });
  for (const c of env.root.children) if (c.tag !== 'META' && c.tag !== 'RECS' && c.tag !== cat.rtype) unknown.add(c.tag);
  return { rtype: cat.rtype, styp, op: REF_STYPS[styp], records: [...byKey.values()], unknownTags: [...unknown].sort() };
}
