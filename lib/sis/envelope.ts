// The SIS envelope: <MSG><META>SNDR SEQN DTTM TYPE STYP</META> body </MSG>.
// Decoding the envelope is the same for every family; the body is decoded by the family's handler.
import { malformed, protocol } from '../core/errors.ts';
import { child, childText, parseXml, XmlError, type LazySpec, type XmlNode } from './xml.ts';

export interface Envelope {
  sndr: string;
  seqn: string;
  /** META/DTTM as sent: yyyyMMddHHmmss, local, no zone. */
  dttm: string;
  type: string;
  /** '' when absent (EROR may omit it). */
  styp: string;
  /** The <MSG> element; the payload is root.children after META. */
  root: XmlNode;
}

/** TYPE/STYP as stored in PROC_STATE.KIND and used as metric label. */
export const kindOf = (e: Pick<Envelope, 'type' | 'styp'>) => (e.styp ? `${e.type}/${e.styp}` : e.type);

/** Decode the envelope. MALFORMED for structure, PROTOCOL for a META value that violates its format. `lazy`: parseXml's. */
export function decodeEnvelope(raw: string, lazy?: LazySpec): Envelope {
  let root: XmlNode;
  try {
    root = parseXml(raw, lazy);
  } catch (e) {
    if (e instanceof XmlError) throw malformed(e.message);
    throw e;
  }
  if (root.tag !== 'MSG') throw malformed(`root element is <${root.tag}>, expected <MSG>`);
  const meta = child(root, 'META');
  if (!meta) throw malformed('no META element');
  const get = (tag: string) => {
    const v = childText(meta, tag);
    if (v === undefined || v === '') throw malformed(`META/${tag} missing or empty`);
    return v;
  };
  const env: Envelope = {
    sndr: get('SNDR'),
    seqn: get('SEQN'),
    dttm: get('DTTM'),
    type: get('TYPE').toUpperCase(),
    styp: (childText(meta, 'STYP') ?? '').toUpperCase(),
    root,
  };
  if (!/^\d{1,9}$/.test(env.seqn)) throw protocol(`META/SEQN="${env.seqn}" is not an integer`);
  if (!isValidDttm(env.dttm)) throw protocol(`META/DTTM="${env.dttm}" is not yyyyMMddHHmmss`);
  if (root.children.filter((c) => c.tag !== 'META').length === 0) throw malformed(`payload element missing after META (${kindOf(env)})`);
  return env;
}

function isValidDttm(s: string): boolean {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(s);
  if (!m) return false;
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number);
  const t = new Date(Date.UTC(y, mo - 1, d, h, mi, se));
  return t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d && h < 24 && mi < 60 && se < 60;
}

/** C-3: SNDR|TYPE|STYP|SEQN, plus the DTTM day (yyyyMMdd) when the day boundary is on. Never change after go-live. */
export function identityKey(e: Envelope, includeDayBoundary: boolean): string {
  const base = `${e.sndr}|${e.type}|${e.styp}|${Number(e.seqn)}`;
  return includeDayBoundary ? `${base}|${e.dttm.slice(0, 8)}` : base;
}

/** The payload element (first child after META), e.g. <FLOP>, <SCHD>, or the first reference record. */
export function payload(e: Envelope): XmlNode[] {
  return e.root.children.filter((c) => c.tag !== 'META');
}
