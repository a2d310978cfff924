// XML → a small ordered tree. Rejects what SIS never sends and what could hurt us:
// anything not well-formed, DOCTYPE and entity declarations (no entity expansion, ever),
// element/attribute names that are JavaScript object properties (the parser would throw or
// rename them), nesting deeper than MAX_DEPTH. The five predefined entities and character
// references (&#65; &#x4E2D;) are decoded, once, as XML requires. Every refusal is an XmlError
// with a reason (the envelope turns it into MALFORMED); nothing the parser throws escapes as a
// plain Error.
import { XMLValidator } from 'fast-xml-parser';

export interface XmlNode {
  tag: string;
  attrs: Record<string, string>;
  /** Trimmed text content directly inside this element ('' when none). */
  text: string;
  children: XmlNode[];
}

export class XmlError extends Error {}

/** Deepest element nesting accepted (SIS nests at most 5 levels: MSG/FLOP/VIPF/VIPT/…). */
export const MAX_DEPTH = 32;

/** Characters XML 1.0 forbids (Char production): C0 controls except TAB/LF/CR, U+FFFE/U+FFFF, lone surrogates. */
const FORBIDDEN_CHAR = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const isXmlChar = (cp: number) => cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);

function position(xml: string, index: number): string {
  const before = xml.slice(0, index);
  const line = before.split('\n').length;
  return `line ${line}, col ${index - before.lastIndexOf('\n')}`;
}

/** What fast-xml-parser's validator lets through: forbidden characters, undeclared entities, references to forbidden characters. */
function checkCharsAndReferences(xml: string): void {
  const bad = FORBIDDEN_CHAR.exec(xml);
  if (bad) throw new XmlError(`not well-formed XML: character U+${bad[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} is not allowed in XML (${position(xml, bad.index)})`);
  // References outside CDATA sections and comments: only the five predefined entities and character references to allowed characters.
  const masked = xml.replace(/<!\[CDATA\[[\s\S]*?\]\]>|<!--[\s\S]*?-->/g, (m) => ' '.repeat(m.length));
  for (const m of masked.matchAll(/&([^;&<\s]*);/g)) {
    const name = m[1];
    if (['amp', 'lt', 'gt', 'quot', 'apos'].includes(name)) continue;
    const num = /^#x([0-9a-fA-F]+)$/.exec(name) ?? /^#([0-9]+)$/.exec(name);
    const cp = num ? parseInt(num[1], name.startsWith('#x') ? 16 : 10) : NaN;
    if (num && isXmlChar(cp)) continue;
    throw new XmlError(`not well-formed XML: ${num ? `character reference &${name}; names a character not allowed in XML` : `undeclared entity reference &${name};`} (${position(xml, m.index)})`);
  }
}

/** Names the parser builds objects with: a tag or attribute named like this would pollute, throw or be renamed. */
const isReservedName = (name: string) => name in Object.prototype || name === 'prototype' || name === '#text' || name === ':@';

/**
 * What fast-xml-parser's validator lets through, checked on a document it accepted: `<` inside
 * an attribute value, `]]>` in text, names that are JavaScript object properties, nesting
 * deeper than MAX_DEPTH. One pass over the document (comments, CDATA and PIs skipped).
 */
function scanStructure(xml: string): void {
  const NAME = /[^\s/>=]+/y;
  const nameAt = (i: number) => {
    NAME.lastIndex = i;
    return NAME.exec(xml)?.[0] ?? '';
  };
  const checkName = (name: string, what: string, i: number) => {
    if (isReservedName(name)) throw new XmlError(`${what} name "${name}" is not accepted (reserved JavaScript property name) (${position(xml, i)})`);
  };
  let depth = 0;
  let i = 0;
  const n = xml.length;
  while (i < n) {
    const lt = xml.indexOf('<', i);
    const text = xml.slice(i, lt === -1 ? n : lt);
    const cdataEnd = text.indexOf(']]>');
    if (cdataEnd !== -1) throw new XmlError(`not well-formed XML: "]]>" is not allowed in text (${position(xml, i + cdataEnd)})`);
    if (lt === -1) return;
    const skip = (open: string, close: string) => {
      if (!xml.startsWith(open, lt)) return false;
      const end = xml.indexOf(close, lt + open.length);
      i = end === -1 ? n : end + close.length;
      return true;
    };
    if (skip('<!--', '-->') || skip('<![CDATA[', ']]>') || skip('<?', '?>') || skip('<!', '>')) continue;
    if (xml[lt + 1] === '/') {
      depth--;
      i = xml.indexOf('>', lt) + 1 || n;
      continue;
    }
    const tag = nameAt(lt + 1);
    checkName(tag, 'element', lt);
    let j = lt + 1 + tag.length;
    for (;;) {
      while (j < n && /\s/.test(xml[j])) j++;
      if (j >= n) return; // the validator accepted the document: cannot happen
      if (xml.startsWith('/>', j)) {
        j += 2;
        break;
      }
      if (xml[j] === '>') {
        j++;
        if (++depth > MAX_DEPTH) throw new XmlError(`elements nested deeper than ${MAX_DEPTH} levels (<${tag}> at ${position(xml, lt)})`);
        break;
      }
      const attr = nameAt(j);
      checkName(attr, 'attribute', j);
      j = xml.indexOf('=', j + attr.length);
      while (j !== -1 && j < n && xml[j] !== '"' && xml[j] !== "'") j++;
      if (j === -1 || j >= n) return;
      const end = xml.indexOf(xml[j], j + 1);
      if (end === -1) return;
      const lessThan = xml.slice(j + 1, end).indexOf('<');
      if (lessThan !== -1) throw new XmlError(`not well-formed XML: '<' is not allowed in the value of attribute ${attr} of <${tag}> (${position(xml, j + 1 + lessThan)})`);
      j = end + 1;
    }
    i = j;
  }
}

// ---------------------------------------------------------------------------------------------
// The tree, built in one pass over a document the checks above accepted (well-formed, no
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
const TAG_NAME = /^[^\s]+/;

/**
 * Shared by every element without attributes / without child elements (most of a snapshot's
 * hundreds of thousands): frozen, so that nothing can add to them by mistake.
 */
const NO_ATTRS: Record<string, string> = Object.freeze({}) as Record<string, string>;
const NO_CHILDREN: XmlNode[] = Object.freeze([]) as unknown as XmlNode[];

/** Top-level elements of the document (text outside them is not kept). */
function buildTree(xml: string): XmlNode[] {
  const top: XmlNode[] = [];
  /** Each element name once (a snapshot repeats a few dozen names 300,000 times). */
  const names = new Map<string, string>();
  const open: XmlNode[] = [];
  const n = xml.length;
  let run = '';
  let pos = 0;
  /** End the current run of character data: trimmed, decoded, added to the open element's text. */
  const endRun = () => {
    if (run === '') return;
    const t = run.trim();
    run = '';
    if (t !== '' && open.length > 0) open[open.length - 1].text += decodeRefs(lineEnds(t));
  };
  /** Index just past `close`, searched from `from` (the end of the document when absent: cannot happen once validated). */
  const past = (close: string, from: number) => {
    const k = xml.indexOf(close, from);
    return k === -1 ? n : k + close.length;
  };
  while (pos < n) {
    const lt = xml.indexOf('<', pos);
    if (lt !== pos) run += xml.slice(pos, lt === -1 ? n : lt);
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
    // a start tag: its end is the first '>' outside a quoted attribute value
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
    if (open.length > 0) endRun();
    else run = ''; // only blanks can stand outside the root element
    let exp = xml.slice(lt + 1, j);
    const empty = exp.endsWith('/');
    if (empty) exp = exp.slice(0, -1);
    const name = TAG_NAME.exec(exp)?.[0] ?? '';
    let tag = names.get(name);
    if (tag === undefined) names.set(name, (tag = name));
    let attrs = NO_ATTRS;
    if (exp.length > tag.length)
      for (const m of exp.slice(tag.length).matchAll(ATTRIBUTE)) {
        const value = m[3] ?? m[4];
        if (value === undefined) continue;
        if (m[1] in Object.prototype || m[1] === 'prototype') throw new XmlError(`name "${m[1]}" is not accepted (reserved JavaScript property name)`);
        if (attrs === NO_ATTRS) attrs = {};
        attrs[m[1]] = decodeRefs(lineEnds(value.trim())).trim();
      }
    const node: XmlNode = { tag, attrs, text: '', children: NO_CHILDREN };
    const parent = open.length > 0 ? open[open.length - 1] : null;
    if (!parent) top.push(node);
    else if (parent.children === NO_CHILDREN) parent.children = [node];
    else parent.children.push(node);
    if (!empty) open.push(node);
    pos = j + 1;
  }
  return top;
}

/** Parse a whole document; returns its root element. Throws XmlError with a reason. */
export function parseXml(xml: string): XmlNode {
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new XmlError('DOCTYPE/ENTITY declarations are not accepted');
  checkCharsAndReferences(xml);
  const v = XMLValidator.validate(xml);
  if (v !== true) throw new XmlError(`not well-formed XML: ${v.err.msg} (line ${v.err.line}${v.err.col === undefined ? '' : `, col ${v.err.col}`})`);
  scanStructure(xml);
  const top = buildTree(xml);
  if (top.length !== 1) throw new XmlError(`expected one root element, found ${top.length}`);
  // Text after the root element (junk after </MSG>) is not well-formed either.
  const afterRoot = xml.slice(xml.lastIndexOf('>') + 1);
  if (afterRoot.trim() !== '') throw new XmlError('content after the root element');
  return top[0];
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
