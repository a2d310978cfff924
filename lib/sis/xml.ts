// XML → a small ordered tree. Rejects what SIS never sends and what could hurt us:
// anything not well-formed, DOCTYPE and entity declarations (no entity expansion, ever).
import { XMLParser, XMLValidator } from 'fast-xml-parser';

export interface XmlNode {
  tag: string;
  attrs: Record<string, string>;
  /** Trimmed text content directly inside this element ('' when none). */
  text: string;
  children: XmlNode[];
}

export class XmlError extends Error {}

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  ignoreDeclaration: true,
  ignorePiTags: true,
  commentPropName: false,
  processEntities: true,
  htmlEntities: false,
});

type Raw = Record<string, unknown> & { ':@'?: Record<string, string> };

function toNode(raw: Raw): XmlNode | null {
  const tag = Object.keys(raw).find((k) => k !== ':@');
  if (!tag || tag === '#text') return null;
  const attrs: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw[':@'] ?? {})) attrs[k] = String(v).trim();
  const children: XmlNode[] = [];
  let text = '';
  for (const c of (raw[tag] as Raw[]) ?? []) {
    if ('#text' in c) text += String(c['#text']);
    else {
      const n = toNode(c);
      if (n) children.push(n);
    }
  }
  return { tag, attrs, text: text.trim(), children };
}

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
    const num = /^#x([0-9a-fA-F]{1,6})$/.exec(name) ?? /^#([0-9]{1,7})$/.exec(name);
    const cp = num ? parseInt(num[1], name.startsWith('#x') ? 16 : 10) : NaN;
    if (num && isXmlChar(cp)) continue;
    throw new XmlError(`not well-formed XML: ${num ? `character reference &${name}; names a character not allowed in XML` : `undeclared entity reference &${name};`} (${position(xml, m.index)})`);
  }
}

/** Parse a whole document; returns its root element. Throws XmlError with a reason. */
export function parseXml(xml: string): XmlNode {
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new XmlError('DOCTYPE/ENTITY declarations are not accepted');
  checkCharsAndReferences(xml);
  const v = XMLValidator.validate(xml);
  if (v !== true) throw new XmlError(`not well-formed XML: ${v.err.msg} (line ${v.err.line}${v.err.col === undefined ? '' : `, col ${v.err.col}`})`);
  const top = (parser.parse(xml) as Raw[]).map(toNode).filter((n): n is XmlNode => n !== null);
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
