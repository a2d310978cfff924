// XML → a small ordered tree, in two linear passes over the text: the check of lib/sis/scan.ts
// (well-formed, no DOCTYPE or entity declarations — no entity expansion, ever —, only allowed
// characters and references, no names that are JavaScript object properties, nesting at most
// MAX_DEPTH), then the tree builder below, which relies on what the check accepted. The five
// predefined entities and character references (&#65; &#x4E2D;) are decoded, once, as XML
// requires. Every refusal is an XmlError with a reason (the envelope turns it into MALFORMED).
// Why the project's own passes and not a parser library: docs/decisions.md "One XML pass".
import { checkXml, position, XmlError } from './scan.ts';

export { MAX_DEPTH, XmlError } from './scan.ts';

export interface XmlNode {
  tag: string;
  attrs: Record<string, string>;
  /** Trimmed text content directly inside this element ('' when none). */
  text: string;
  children: XmlNode[];
  /**
   * A lazy element (parseXml's `lazy`): its text and children are not built ('' and none); this
   * is its source, a well-formed element of a checked document, that `expand` builds on demand.
   */
  raw?: string;
}

/** Elements parseXml leaves unbuilt: those named `child` directly inside a `parent` that is a child of the root. */
export interface LazySpec {
  parent: string;
  child: string;
}

// ---------------------------------------------------------------------------------------------
// The tree, built in one pass over a document checkXml accepted (well-formed, no
// DOCTYPE, only the five entities and character references to allowed characters): XmlNode
// directly, without an intermediate parser tree — a 9,999-flight snapshot's tree is tens of MB,
// the parser's preserveOrder tree that used to be built first was as large again
// (docs/decisions.md, "Snapshots in bounded memory"). What it makes of a document is what the
// parser (fast-xml-parser, preserveOrder, trimValues, processEntities) made of it:
//   - line ends normalised (CR LF and CR → LF);
//   - text: each run of character data between two pieces of markup is trimmed, then its
//     references decoded (one pass: "&amp;#65;" is the text "&#65;"); a comment does not end a
//     run; CDATA content is taken as it is; an element's text is its runs and CDATA joined, trimmed;
//   - attributes: value trimmed, references decoded, trimmed again; comments and processing
//     instructions dropped.

const REFERENCE = /&(?:(amp|lt|gt|quot|apos)|#x([0-9a-fA-F]+)|#([0-9]+));/g;
const PREDEFINED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const decodeRefs = (s: string) =>
  s.indexOf('&') === -1
    ? s
    : s.replace(REFERENCE, (_m, name: string | undefined, hex: string | undefined, dec: string | undefined) => (name ? PREDEFINED[name] : String.fromCodePoint(parseInt(hex ?? dec!, hex ? 16 : 10))));
const lineEnds = (s: string) => (s.indexOf('\r') === -1 ? s : s.replace(/\r\n?/g, '\n'));
const ATTRIBUTE = /([^\s=]+)\s*(=\s*(?:"([^"]*)"|'([^']*)'))?/g;

/**
 * Shared by every element without attributes / without child elements (most of a snapshot's
 * hundreds of thousands): frozen, so that nothing can add to them by mistake.
 */
const NO_ATTRS: Record<string, string> = Object.freeze({}) as Record<string, string>;
const NO_CHILDREN: XmlNode[] = Object.freeze([]) as unknown as XmlNode[];

/** What String.prototype.trim removes (WhiteSpace and LineTerminator), as UTF-16 code units. */
const isTrimmed = (c: number) =>
  c === 0x20 ||
  c === 0x0a ||
  c === 0x09 ||
  c === 0x0d ||
  (c > 0x7f && (c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff)) ||
  c === 0x0b ||
  c === 0x0c;

/**
 * Each element name once, across documents (a snapshot repeats a few dozen names 300,000 times,
 * and its records are built one by one), found by a hash of its characters computed while the
 * name is scanned: a name seen before is neither cut out of the text nor hashed as a string
 * again. At most NAMES_MAX names, then started again. Only names shorter than SHORT_NAME: a
 * longer piece of a string may be kept as a view of the whole text, which the table would then
 * hold long after the document.
 */
const namesByHash = new Map<number, string>();
const NAMES_MAX = 4096;
const SHORT_NAME = 12;
function nameAt(xml: string, from: number, to: number, hash: number): string {
  const known = namesByHash.get(hash);
  if (known !== undefined && known.length === to - from && xml.startsWith(known, from)) return known;
  const name = xml.slice(from, to);
  if (name.length > SHORT_NAME) return name;
  if (namesByHash.size >= NAMES_MAX) namesByHash.clear();
  namesByHash.set(hash, name); // a name of another hash that collides replaces it: found again next time
  return name;
}

/**
 * A start tag with attributes (or blanks) after its name `tag`, from '<' at `lt`: its attributes
 * and end; its end is the first '>' outside a quoted value.
 */
function attributedTag(xml: string, lt: number, tag: string): { tag: string; attrs: Record<string, string>; empty: boolean; j: number } {
  const n = xml.length;
  let j = xml.indexOf('>', lt + 1);
  if (j === -1) j = n;
  for (let k = lt + 1; k < j; k++) {
    const c = xml.charCodeAt(k);
    if (c !== 0x22 && c !== 0x27) continue;
    // a quoted value: skip it; the tag ends at the first '>' after it (or after the next one)
    const q = xml.indexOf(xml[k], k + 1);
    k = q === -1 ? n : q;
    if (k >= j) {
      j = xml.indexOf('>', k + 1);
      if (j === -1) j = n;
    }
  }
  let exp = xml.slice(lt + 1, j);
  const empty = exp.endsWith('/');
  if (empty) exp = exp.slice(0, -1);
  let attrs = NO_ATTRS;
  if (exp.length > tag.length)
    for (const m of exp.slice(tag.length).matchAll(ATTRIBUTE)) {
      const value = m[3] ?? m[4];
      if (value === undefined) continue;
      if (m[1] in Object.prototype || m[1] === 'prototype') throw new XmlError(`name "${m[1]}" is not accepted (reserved JavaScript property name)`);
      if (attrs === NO_ATTRS) attrs = {};
      attrs[m[1]] = decodeRefs(lineEnds(value.trim())).trim();
    }
  return { tag, attrs, empty, j };
}

/** Top-level elements of the document (text outside them is not kept). `lazy`: those elements left unbuilt, with the spans checkXml found. */
function buildTree(xml: string, lazy?: LazySpec & { spans: number[] }): XmlNode[] {
  let span = 0; // the next depth-3 span of lazy.spans that may start at the tag being read
  const top: XmlNode[] = [];
  const open: XmlNode[] = [];
  const n = xml.length;
  // The current run of character data: the pieces before a comment that interrupted it (`run`),
  // and the last piece as a range of the text [runFrom, runTo), cut out only when it holds more
  // than blanks (most runs are the blanks between two tags, or an element's whole text).
  let run = '';
  let runFrom = -1;
  let runTo = -1;
  /** End the current run of character data: trimmed, decoded, added to the open element's text. */
  const endRun = () => {
    if (runFrom === -1 && run === '') return;
    let t: string;
    if (run === '') {
      let a = runFrom;
      let b = runTo;
      while (a < b && isTrimmed(xml.charCodeAt(a))) a++;
      while (b > a && isTrimmed(xml.charCodeAt(b - 1))) b--;
      runFrom = -1;
      if (a === b) return;
      t = xml.slice(a, b);
    } else {
      t = (runFrom === -1 ? run : run + xml.slice(runFrom, runTo)).trim();
      run = '';
      runFrom = -1;
      if (t === '') return;
    }
    if (open.length > 0) open[open.length - 1].text += decodeRefs(lineEnds(t));
  };
  /** Index just past `close`, searched from `from` (the end of the document when absent: cannot happen once validated). */
  const past = (close: string, from: number) => {
    const k = xml.indexOf(close, from);
    return k === -1 ? n : k + close.length;
  };
  let pos = 0;
  while (pos < n) {
    const lt = xml.indexOf('<', pos);
    if (lt !== pos) {
      if (runFrom !== -1) run += xml.slice(runFrom, runTo); // a comment came between: keep what was before it
      runFrom = pos;
      runTo = lt === -1 ? n : lt;
    }
    if (lt === -1) break;
    const c1 = xml.charCodeAt(lt + 1);
    if (c1 === 0x21 /* ! */) {
      if (xml.startsWith('<!--', lt)) {
        pos = past('-->', lt + 4); // the run goes on after a comment
        continue;
      }
      if (!xml.startsWith('<![CDATA[', lt)) throw new XmlError(`not well-formed XML: "<!" that opens neither a comment nor a CDATA section (${position(xml, lt)})`);
      endRun();
      const end = xml.indexOf(']]>', lt + 9);
      if (open.length > 0) open[open.length - 1].text += lineEnds(xml.slice(lt + 9, end === -1 ? n : end));
      pos = end === -1 ? n : end + 3;
      continue;
    }
    if (c1 === 0x3f /* ? */) {
      endRun();
      pos = past('?>', lt + 2);
      continue;
    }
    if (c1 === 0x2f /* / */) {
      endRun();
      const done = open.pop();
      if (done) done.text = done.text.trim();
      pos = past('>', lt + 2);
      continue;
    }
    if (open.length > 0) endRun();
    else {
      run = ''; // only blanks can stand outside the root element
      runFrom = -1;
    }
    // a start tag. The common case: its name, then '>' or '/>' (no attributes, nothing to slice but the name)
    let e = lt + 1;
    let hash = 0;
    for (let c = xml.charCodeAt(e); e < n && c !== 0x3e && c !== 0x2f && !isTrimmed(c); c = xml.charCodeAt(++e)) hash = (Math.imul(hash, 31) + c) | 0;
    let j: number;
    let tag: string;
    let empty: boolean;
    let attrs = NO_ATTRS;
    const ce = xml.charCodeAt(e);
    if (ce === 0x3e /* > */ || (ce === 0x2f && xml.charCodeAt(e + 1) === 0x3e)) {
      tag = nameAt(xml, lt + 1, e, hash);
      empty = ce === 0x2f;
      j = empty ? e + 1 : e;
    } else ({ tag, attrs, empty, j } = attributedTag(xml, lt, nameAt(xml, lt + 1, e, hash))); // blanks after the name (checkXml allows nothing else)
    const node: XmlNode = { tag, attrs, text: '', children: NO_CHILDREN };
    const parent = open.length > 0 ? open[open.length - 1] : null;
    if (lazy && open.length === 2 && tag === lazy.child && parent!.tag === lazy.parent) {
      const spans = lazy.spans;
      while (span < spans.length && spans[span] < lt) span += 2;
      if (spans[span] === lt) {
        // its source kept, its content skipped (it was checked with the whole document)
        node.raw = xml.slice(lt, spans[span + 1]);
        if (parent!.children === NO_CHILDREN) parent!.children = [node];
        else parent!.children.push(node);
        pos = spans[span + 1];
        continue;
      }
    }
    if (!parent) top.push(node);
    else if (parent.children === NO_CHILDREN) parent.children = [node];
    else parent.children.push(node);
    if (!empty) open.push(node);
    pos = j + 1;
  }
  return top;
}

/**
 * Parse a whole document; returns its root element. Throws XmlError with a reason. `lazy`: the
 * elements it names are left unbuilt (XmlNode.raw; `expand` builds one): a snapshot's records,
 * most of which a snapshot digest may tell need not be decoded (docs/decisions.md "Snapshot digest").
 */
export function parseXml(xml: string, lazy?: LazySpec): XmlNode {
  const spans = lazy ? [] : undefined;
  checkXml(xml, spans); // one linear pass: well-formed, no DOCTYPE, allowed characters and names (scan.ts)
  const top = buildTree(xml, lazy && spans ? { ...lazy, spans } : undefined);
  if (top.length !== 1) throw new XmlError(`expected one root element, found ${top.length}`);
  // Text after the root element (junk after </MSG>) is not well-formed either.
  const afterRoot = xml.slice(xml.lastIndexOf('>') + 1);
  if (afterRoot.trim() !== '') throw new XmlError('content after the root element');
  return top[0];
}

/** The element itself, built: a lazy one from its source (checked with its document: not checked again). */
export function expand(node: XmlNode): XmlNode {
  return node.raw === undefined ? node : buildTree(node.raw)[0];
}

/** Every lazy element under `node` built (a tree for a reader that does not know lazy elements). */
export function expandAll(node: XmlNode): XmlNode {
  if (node.raw !== undefined) return expand(node);
  if (node.children.length === 0 || !node.children.some((c) => c.raw !== undefined || c.children.length > 0)) return node;
  return { ...node, children: node.children.map(expandAll) };
}

/** First direct child with this tag. */
export function child(node: XmlNode, tag: string): XmlNode | undefined {
  return node.children.find((c) => c.tag === tag);
}

/** All direct children with this tag, in document order. */
export function childrenOf(node: XmlNode, tag: string): XmlNode[] {
  return node.children.filter((c) => c.tag === tag);
}

/** Trimmed text of a direct child; undefined when the child is absent ('' when present but empty). */
export function childText(node: XmlNode, tag: string): string | undefined {
  return child(node, tag)?.text;
}

/** Canonical re-serialisation of an element (trimmed, no whitespace between tags): raw SRVT/VIPF storage. */
export function serialize(node: XmlNode): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const attrs = Object.entries(node.attrs)
    .map(([k, v]) => ` ${k}="${esc(v).replace(/"/g, '&quot;')}"`)
    .join('');
  const inner = esc(node.text) + node.children.map(serialize).join('');
  return inner === '' ? `<${node.tag}${attrs}/>` : `<${node.tag}${attrs}>${inner}</${node.tag}>`;
}
