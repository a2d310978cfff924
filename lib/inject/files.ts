// Load SIS messages from files for injection: `.xml` (one message per file) and SQL files shaped
// like the corpus (`INSERT INTO aodbinterface.cminmsgs (…) VALUES ('<xml>', …);`).
import { readFileSync } from 'node:fs';

/** Every first string literal after VALUES ( … ) of each INSERT, SQL-unescaped, in file order. */
export function messagesFromSql(text: string): string[] {
  const out: string[] = [];
  const re = /VALUES\s*\(\s*'/gi;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text))) {
    let i = m.index + m[0].length;
    let s = '';
    for (;;) {
      if (i >= text.length) throw new Error(`unterminated string literal starting at offset ${m.index}`);
      const c = text[i];
      if (c === "'") {
        if (text[i + 1] === "'") {
          s += "'";
          i += 2;
          continue;
        }
        break;
      }
      if (c === '\\' && i + 1 < text.length) {
        const n = text[i + 1];
        s += n === 'n' ? '\n' : n === 't' ? '\t' : n === 'r' ? '\r' : n === '0' ? '\0' : n;
        i += 2;
        continue;
      }
      s += c;
      i++;
    }
    out.push(s);
    re.lastIndex = i + 1;
  }
  return out;
}

export function messagesFromFile(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  return /\.sql$/i.test(path) ? messagesFromSql(text) : [text];
}

/** Give the message a fresh META/SEQN (the corpus reuses SEQN 1243 in 162 of 172 samples). */
export function renumberSeqn(xml: string, seqn: number): string {
  // The first <SEQN>…</SEQN> (text only) after the first <META>, found with searches that never
  // go back (a lazy regex here was quadratic on a file of many <META> without a <SEQN>).
  const meta = xml.indexOf('<META>');
  if (meta === -1) return xml;
  for (let at = xml.indexOf('<SEQN>', meta + 6); at !== -1; at = xml.indexOf('<SEQN>', at + 6)) {
    const end = xml.indexOf('<', at + 6);
    if (end !== -1 && xml.startsWith('</SEQN>', end)) return `${xml.slice(0, at + 6)}${seqn}${xml.slice(end)}`;
  }
  return xml;
}

/** A SEQN counter that starts at a random 6-digit base and wraps like the AODB's. */
export function seqnCounter(start = 100_000 + Math.floor(Math.random() * 800_000)): () => number {
  let n = start;
  return () => {
    const v = n;
    n = n >= 999_999 ? 1 : n + 1;
    return v;
  };
}
