// XML → a small ordered tree. Rejects what SIS never sends and what could hurt us:
// anything not well-formed, DOCTYPE and entity declarations (no entity expansion, ever),
// element/attribute names that are JavaScript object properties (the parser would throw or
// rename them), nesting deeper than MAX_DEPTH. The five predefined entities and character
// references (&#65; &#x4E2D;) are decoded, once, as XML requires. Every refusal is an XmlError
// with a reason (the envelope turns it into MALFORMED); nothing the parser throws escapes as a
// plain Error.
import { XMLParser } from 'fast-xml-parser';
import { checkXml, XmlError } from './scan.ts';

export { MAX_DEPTH, XmlError } from './scan.ts';

export interface XmlNode {
  tag: string;
  attrs: Record<string, string>;
  /** Trimmed text content directly inside this element ('' when none). */
  text: string;
  children: XmlNode[];
}

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
  // Decodes character references (&#65; &#x4E2D;) in the same single pass as &amp; &lt; …
  // (so "&amp;#65;" stays the text "&#65;"). The HTML named entities it would also decode never
  // reach it: checkXml (scan.ts) refuses every named reference but the five of XML.
  htmlEntities: true,
  // Belt and braces: checkXml (scan.ts) refuses these names before the parser sees them.
  onDangerousProperty: (name: string) => {
    throw new XmlError(`name "${name}" is not accepted (reserved JavaScript property name)`);
  },
  maxNestedTags: 1000,
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

/** The parser's own errors (plain Error) are the document's fault too: XmlError with its reason. */
function parseTree(xml: string): Raw[] {
  try {
    return parser.parse(xml) as Raw[];
  } catch (e) {
    if (e instanceof XmlError) throw e;
    throw new XmlError(`not accepted by the XML parser: ${(e as Error).message}`);
  }
}

/** Parse a whole document; returns its root element. Throws XmlError with a reason. */
export function parseXml(xml: string): XmlNode {
  checkXml(xml); // one linear pass: well-formed, no DOCTYPE, allowed characters and names (scan.ts)
  const top = parseTree(xml)
    .map(toNode)
    .filter((n): n is XmlNode => n !== null);
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
