// The one well-formedness pass over a message, before the parser builds its tree
// (lib/sis/xml.ts). A hand-written scanner that walks the text once, left to right, and never
// looks back: every character is visited a bounded number of times, so its time is linear in
// the length of the message whatever its shape (no regular expression that can backtrack — an
// unterminated `<!--` repeated 250,000 times, or inside a processing instruction, costs one
// search to the end of the text, not one per occurrence).
//
// What it refuses (XmlError with the reason and the line/column):
//   - DOCTYPE / ENTITY declarations anywhere (no entity expansion, ever), other `<!` markup;
//   - characters XML 1.0 forbids (C0 controls but TAB/LF/CR, U+FFFE/U+FFFF, lone surrogates),
//     in text, attribute values, comments, CDATA sections and processing instructions;
//   - references other than the five predefined entities and character references to allowed
//     characters; a bare '&';
//   - tags: invalid names, names that are JavaScript object properties (the parser would pollute,
//     throw or rename), attributes without a quoted value or without a space before them,
//     repeated attributes, '<' in an attribute value, end tags that do not match, unclosed tags;
//   - nesting deeper than MAX_DEPTH, no root element or more than one, text outside the root,
//     "]]>" in text, an XML declaration not at the very start, unterminated comments, CDATA
//     sections and processing instructions.
// The reasons that fast-xml-parser's validator gave before this scanner replaced it are kept
// word for word where they existed ("Unclosed tag 'MSG'.", "Attribute 'GTNO' is repeated.", …).

export class XmlError extends Error {}

/** Deepest element nesting accepted (SIS nests at most 5 levels: MSG/FLOP/VIPF/VIPT/…). */
export const MAX_DEPTH = 32;

const LT = 0x3c;
const GT = 0x3e;
const AMP = 0x26;
const SLASH = 0x2f;
const QMARK = 0x3f;
const BANG = 0x21;
const EQ = 0x3d;
const DQ = 0x22;
const SQ = 0x27;
const RSQB = 0x5d;
const SEMI = 0x3b;
const HASH = 0x23;

const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;

/** XML 1.0 Char production, for a code point (character references). */
export const isXmlChar = (cp: number) => cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);

/** NameStartChar of XML 1.0 as fast-xml-parser's names (UTF-16 code units). */
function isNameStart(c: number): boolean {
  if (c < 0x80) return (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || c === 0x3a;
  return (
    (c >= 0xc0 && c <= 0xd6) ||
    (c >= 0xd8 && c <= 0xf6) ||
    (c >= 0xf8 && c <= 0x2ff) ||
    (c >= 0x370 && c <= 0x37d) ||
    (c >= 0x37f && c <= 0x1fff) ||
    (c >= 0x200c && c <= 0x200d) ||
    (c >= 0x2070 && c <= 0x218f) ||
    (c >= 0x2c00 && c <= 0x2fef) ||
    (c >= 0x3001 && c <= 0xd7ff) ||
    (c >= 0xf900 && c <= 0xfdcf) ||
    (c >= 0xfdf0 && c <= 0xfffd)
  );
}
function isNameChar(c: number): boolean {
  if (c < 0x80) return isNameStart(c) || c === 0x2d || c === 0x2e || (c >= 0x30 && c <= 0x39);
  return isNameStart(c) || c === 0xb7 || (c >= 0x300 && c <= 0x36f) || (c >= 0x203f && c <= 0x2040);
}
function isName(s: string): boolean {
  if (s.length === 0 || !isNameStart(s.charCodeAt(0))) return false;
  for (let k = 1; k < s.length; k++) if (!isNameChar(s.charCodeAt(k))) return false;
  return true;
}

/** Names the parser builds objects with: a tag or attribute named like this would pollute, throw or be renamed. */
export const isReservedName = (name: string) => {
  // Object.prototype's names all begin with a lower-case letter or '_': a name that begins with an
  // upper-case ASCII letter (every SIS tag) is none of them, without the slower property lookup
  const c = name.charCodeAt(0);
  if (c >= 0x41 && c <= 0x5a) return false;
  return name in Object.prototype || name === 'prototype' || name === '#text' || name === ':@';
};

/** "line L, col C" of an index (1-based; only computed for an error). */
export function position(xml: string, index: number): string {
  let line = 1;
  let lineStart = 0;
  for (let k = xml.indexOf('\n'); k !== -1 && k < index; k = xml.indexOf('\n', k + 1)) {
    line++;
    lineStart = k + 1;
  }
  return `line ${line}, col ${index - lineStart + 1}`;
}

/** A piece of the message for a reason: at most 40 characters. */
const shown = (s: string) => (s.length > 40 ? `${s.slice(0, 40)}…` : s); // a name or token can be megabytes long

const PREDEFINED = new Set(['amp', 'lt', 'gt', 'quot', 'apos']);

/** What the pass saw of the top of the document: enough to read the SIS envelope without building the tree. */
export interface Outline {
  /** The root element's name. */
  root: string;
  /** [start, end) of the root's first child element named META, when there is one. */
  meta?: [number, number];
  /** Whether the root has a child element other than META. */
  payload: boolean;
}

/**
 * Checks that `xml` is a well-formed document of one root element that the tree builder may be
 * given. Throws XmlError with the reason; returns the outline of the root element. `spans`, when
 * given, receives the [start, end) of every element at depth 3 (a child of a child of the root),
 * in document order, as pairs: the tree builder can leave such an element unbuilt (xml.ts lazy).
 */
export function checkXml(xml: string, spans?: number[]): Outline {
  // A literal search, linear; anywhere in the text (also inside comments and CDATA) as before.
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new XmlError('DOCTYPE/ENTITY declarations are not accepted');
  const n = xml.length;
  const fail = (msg: string, at: number): never => {
    throw new XmlError(`not well-formed XML: ${msg} (${position(xml, at)})`);
  };
  const forbidden = (at: number): never => fail(`character U+${xml.charCodeAt(at).toString(16).toUpperCase().padStart(4, '0')} is not allowed in XML`, at);
  /** Index after the character at k when it is an XML character (a surrogate pair counts as one); else refuses. */
  const char = (k: number): number => {
    const c = xml.charCodeAt(k);
    if ((c >= 0x20 && c < 0xd800) || c === 0x0a || c === 0x09 || c === 0x0d || (c >= 0xe000 && c <= 0xfffd)) return k + 1;
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = xml.charCodeAt(k + 1);
      if (d >= 0xdc00 && d <= 0xdfff) return k + 2;
    }
    return forbidden(k);
  };
  const chars = (from: number, to: number) => {
    for (let k = from; k < to; ) {
      const c = xml.charCodeAt(k);
      if (c >= 0x20 && c < 0xd800)
        k++; // the common case, inline
      else k = char(k);
    }
  };
  /** At '&': a predefined entity or a character reference to an allowed character; index after ';'. */
  const reference = (amp: number): number => {
    let k = amp + 1;
    if (xml.charCodeAt(k) === HASH) {
      k++;
      const hex = xml.charCodeAt(k) === 0x78;
      if (hex) k++;
      const start = k;
      let cp = 0;
      for (;;) {
        const c = xml.charCodeAt(k);
        let d = -1;
        if (c >= 0x30 && c <= 0x39) d = c - 0x30;
        else if (hex && c >= 0x61 && c <= 0x66) d = c - 0x57;
        else if (hex && c >= 0x41 && c <= 0x46) d = c - 0x37;
        if (d < 0) break;
        cp = Math.min(cp * (hex ? 16 : 10) + d, 0x110000);
        k++;
      }
      if (k === start || xml.charCodeAt(k) !== SEMI) return fail("char '&' is not expected.", amp);
      if (!isXmlChar(cp)) throw new XmlError(`not well-formed XML: character reference &${shown(xml.slice(amp + 1, k))}; names a character not allowed in XML (${position(xml, amp)})`);
      return k + 1;
    }
    const start = k;
    while (k < n && isNameChar(xml.charCodeAt(k))) k++;
    if (k === start || xml.charCodeAt(k) !== SEMI) return fail("char '&' is not expected.", amp);
    const name = xml.slice(start, k);
    if (!PREDEFINED.has(name)) throw new XmlError(`not well-formed XML: undeclared entity reference &${shown(name)}; (${position(xml, amp)})`);
    return k + 1;
  };
  /** The token a reason names: up to whitespace, '>' or '/' (at most 40 characters shown). */
  const token = (from: number): string => {
    let k = from;
    while (k < n && k - from <= 40 && !isWs(xml.charCodeAt(k)) && xml.charCodeAt(k) !== GT && xml.charCodeAt(k) !== SLASH && xml.charCodeAt(k) !== EQ) k++;
    return shown(xml.slice(from, k));
  };
  const nameEnd = (from: number) => {
    let k = from;
    while (k < n && isNameChar(xml.charCodeAt(k))) k++;
    return k;
  };
  const skipWs = (from: number) => {
    let k = from;
    while (isWs(xml.charCodeAt(k))) k++;
    return k;
  };

  const open: { name: string; at: number }[] = []; // at most MAX_DEPTH entries
  let roots = 0;
  let rootClosed = false;
  const outline: Outline = { root: '', payload: false };
  let metaStart = -1;
  const first = xml.charCodeAt(0) === 0xfeff ? 1 : 0;
  let i = first;

  while (i < n) {
    const c = xml.charCodeAt(i);
    if (c === LT) {
      const c1 = xml.charCodeAt(i + 1);
      if (c1 === QMARK) {
        // processing instruction (or the XML declaration, only at the very start)
        const j = i + 2;
        const target = xml.slice(j, nameEnd(j));
        if (!isName(target)) fail(`processing instruction target '${token(j)}' is not a name`, i);
        if (target.toLowerCase() === 'xml' && i !== first) fail('XML declaration allowed only at the start of the document.', i);
        const end = xml.indexOf('?>', j + target.length);
        if (end === -1) fail('processing instruction is not closed', i);
        chars(j + target.length, end);
        i = end + 2;
        continue;
      }
      if (c1 === BANG) {
        if (xml.startsWith('<!--', i)) {
          const end = xml.indexOf('-->', i + 4);
          if (end === -1) fail('comment is not closed', i);
          chars(i + 4, end);
          i = end + 3;
          continue;
        }
        if (xml.startsWith('<![CDATA[', i)) {
          if (open.length === 0) fail('CDATA section outside the root element', i);
          const end = xml.indexOf(']]>', i + 9);
          if (end === -1) fail('CDATA section is not closed', i);
          chars(i + 9, end);
          i = end + 3;
          continue;
        }
        fail("'<!' must begin a comment or a CDATA section", i);
      }
      if (c1 === SLASH) {
        // end tag: </name S? >
        const j = i + 2;
        let k = j;
        const expected = open.length > 0 ? open[open.length - 1].name : '';
        // the common case: the name of the open element, then white space or '>' (no slice, no scan)
        const after = xml.charCodeAt(j + expected.length);
        const same = expected !== '' && xml.startsWith(expected, j) && (after === GT || isWs(after));
        if (same) k = j + expected.length;
        else while (k < n && !isWs(xml.charCodeAt(k)) && xml.charCodeAt(k) !== GT && xml.charCodeAt(k) !== LT) k++;
        const name = same ? expected : xml.slice(j, k);
        k = skipWs(k);
        if (xml.charCodeAt(k) !== GT) fail(k >= n ? `Closing tag '${shown(name)}' doesn't have proper closing.` : `Closing tag '${shown(name)}' can't have attributes or invalid starting.`, i);
        const top = open.pop();
        if (!top) fail(`Closing tag '${shown(name)}' has not been opened.`, i);
        else if (top.name !== name) fail(`Expected closing tag '${shown(top.name)}' (opened in ${position(xml, top.at)}) instead of closing tag '${shown(name)}'.`, i);
        if (open.length === 0) rootClosed = true;
        else if (open.length === 2 && spans && top) spans.push(top.at, k + 1);
        else if (open.length === 1 && metaStart !== -1 && !outline.meta) outline.meta = [metaStart, k + 1];
        i = k + 1;
        continue;
      }
      // start tag: <name (S attr S? = S? "value")* S? /? >
      const j = i + 1;
      const name = xml.slice(j, nameEnd(j));
      if (name.length === 0 || !isNameStart(name.charCodeAt(0)) || !(isWs(xml.charCodeAt(j + name.length)) || xml.charCodeAt(j + name.length) === GT || xml.charCodeAt(j + name.length) === SLASH)) {
        if (j >= n) fail("unexpected end of the document after '<'", i);
        if (isWs(xml.charCodeAt(j))) fail("Invalid space after '<'.", i);
        if (j + name.length >= n) fail(`start tag <${shown(name)} is not closed`, i);
        fail(`Tag '${token(j)}' is an invalid name.`, i);
      }
      if (isReservedName(name)) throw new XmlError(`element name "${name}" is not accepted (reserved JavaScript property name) (${position(xml, i)})`);
      if (open.length === 0 && roots++ === 0) outline.root = name;
      if (open.length === 1 && roots === 1) {
        if (name !== 'META') outline.payload = true;
        else if (metaStart === -1) metaStart = i;
      }
      let k = j + name.length;
      let attrs: string[] | undefined; // an element has a few attributes at most: a list is cheaper than a set
      let selfClosing = false;
      for (;;) {
        const ws = k;
        k = skipWs(k);
        const a = xml.charCodeAt(k);
        if (k >= n) fail(`start tag <${shown(name)}> is not closed`, i);
        if (a === GT) {
          k++;
          break;
        }
        if (a === SLASH) {
          if (xml.charCodeAt(k + 1) !== GT) fail(`'/' must be followed by '>' in the start tag <${shown(name)}>`, k);
          k += 2;
          selfClosing = true;
          break;
        }
        const at = k;
        const attr = xml.slice(k, nameEnd(k));
        if (k === ws) fail(`Attribute '${token(k)}' has no space in starting.`, at);
        if (!isName(attr) || !(isWs(xml.charCodeAt(k + attr.length)) || xml.charCodeAt(k + attr.length) === EQ)) {
          if (k + attr.length >= n) fail(`start tag <${shown(name)}> is not closed`, i);
          if (isName(attr) && (xml.charCodeAt(k + attr.length) === GT || xml.charCodeAt(k + attr.length) === SLASH)) fail(`boolean attribute '${shown(attr)}' is not allowed.`, at);
          fail(`Attribute '${token(k)}' is an invalid name.`, at);
        }
        if (isReservedName(attr)) throw new XmlError(`attribute name "${attr}" is not accepted (reserved JavaScript property name) (${position(xml, at)})`);
        k = skipWs(k + attr.length);
        if (xml.charCodeAt(k) !== EQ) fail(`boolean attribute '${shown(attr)}' is not allowed.`, at);
        k = skipWs(k + 1);
        const q = xml.charCodeAt(k);
        if (q !== DQ && q !== SQ) fail(`Attribute '${shown(attr)}' is without value.`, at);
        k++;
        for (;;) {
          const v = xml.charCodeAt(k);
          if (v >= 0x20 && v < 0xd800 && v !== q && v !== LT && v !== AMP) {
            k++; // the common case, inline (as in text)
            continue;
          }
          if (k >= n) fail(`Attributes for '${shown(name)}' have open quote.`, i);
          if (v === q) break;
          if (v === LT) fail(`'<' is not allowed in the value of attribute ${shown(attr)} of <${shown(name)}>`, k);
          k = v === AMP ? reference(k) : char(k);
        }
        k++;
        attrs ??= [];
        if (attrs.includes(attr)) fail(`Attribute '${shown(attr)}' is repeated.`, at);
        attrs.push(attr);
      }
      if (selfClosing && open.length === 1 && metaStart === i) outline.meta = [i, k];
      if (selfClosing && open.length === 2 && spans) spans.push(i, k);
      if (!selfClosing) {
        if (open.length >= MAX_DEPTH) throw new XmlError(`elements nested deeper than ${MAX_DEPTH} levels (<${shown(name)}> at ${position(xml, i)})`);
        open.push({ name, at: i });
      } else if (open.length === 0) rootClosed = true;
      i = k;
      continue;
    }
    if (open.length === 0) {
      // outside the root element: only white space (comments and PIs are markup, above)
      if (isWs(c)) {
        i++;
        continue;
      }
      char(i);
      fail(rootClosed ? 'Extra text at the end' : `char '${xml[i]}' is not expected.`, i);
    }
    // text inside an element, up to the next markup
    while (i < n) {
      const t = xml.charCodeAt(i);
      if (t >= 0x20 && t < 0xd800 && t !== LT && t !== AMP && t !== RSQB) {
        i++; // the common case, inline
        continue;
      }
      if (t === LT) break;
      if (t === AMP) i = reference(i);
      else if (t === RSQB) {
        if (xml.charCodeAt(i + 1) === RSQB && xml.charCodeAt(i + 2) === GT) fail('"]]>" is not allowed in text', i);
        i++;
      } else i = char(i);
    }
  }

  if (open.length === 1) fail(`Unclosed tag '${shown(open[0].name)}'.`, open[0].at);
  if (open.length > 1) fail(`Unclosed tags ${open.map((o) => `'${shown(o.name)}'`).join(', ')}.`, open[open.length - 1].at);
  if (roots === 0) throw new XmlError('not well-formed XML: Start tag expected. (line 1)');
  if (roots > 1) throw new XmlError(`expected one root element, found ${roots}`);
  return outline;
}
