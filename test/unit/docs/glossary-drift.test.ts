// Drift: the glossary covers every term docs/getting-started.md uses. The glossary is that page's
// "Glossary" table (the gateway's words) and docs/design.md "Glossary of SIS terms". A term of the
// page is, in its prose (code spans and blocks aside):
//   - a word in capitals (AODB, FLID; not a file name): a glossary term, or enumerated in a
//     meaning (the states), or a general acronym of GENERAL;
//   - a dependency of package.json it names (graphile-worker);
//   - a lower-case word in italics (the pump's steps), or in bold that is no process of the
//     Procfile (those are README "Processes");
//   - a word of JARGON: the gateway's terms of art a newcomer cannot guess, with the glossary
//     term that defines each (a new term of art on the page belongs here and in the glossary).
// The glossary's own meanings count as the page's prose. The comparison also runs on a planted term.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseProcfile } from '../../../scripts/start.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

/** Acronyms of computing in general, not of the gateway; `node`, the runtime's package. */
const GENERAL = new Set(['JSON', 'XML', 'NULL', 'README', 'HTTP', 'SQL', 'API', 'TLS', 'CPU', 'RSS', 'FIFO', 'node']);

/** The gateway's terms of art: how the page may write each, and the glossary term that defines it. */
const JARGON: [RegExp, string][] = [
  [/\bwatermark\b/i, 'watermark'],
  [/\btombstones?\b/i, 'tombstone'],
  [/\bcompacted\b/i, 'compacted topic'],
  [/\bchange records?\b/i, 'change record'],
  [/\bdecode worker\b/i, 'decode worker'],
  [/\bhead of (?:the )?queue\b|\bthe head\b/i, 'head'],
  [/\bbatch(?:es)?\b/i, 'batch'],
  [/\bbackfill intent\b/i, 'backfill intent'],
  [/\bterminal\b/i, 'terminal'],
  [/\boutbox\b/i, 'outbox'],
  [/\bdead letters?\b/i, 'dead letter'],
  [/\bduty\b|\bduties\b/i, 'duty'],
  [/\bleader lock\b/i, 'leader lock'],
  [/\bsnapshot\b/i, 'snapshot'],
  [/\boperation day\b/i, 'SODT'],
];

/** A glossary table's rows under `heading`: its terms (first column, split at "," and " / ") and its meanings. */
function glossary(md: string, heading: string): { terms: Set<string>; meanings: string } {
  const lines = md.split('\n');
  const at = lines.findIndex((l) => l.trim() === heading);
  if (at < 0) return { terms: new Set(), meanings: '' };
  const terms = new Set<string>();
  let meanings = '';
  for (const l of lines.slice(at + 1)) {
    if (l.startsWith('## ')) break;
    if (!l.startsWith('| ') || /^\|\s*(word|term)\s*\|/.test(l) || /^\|-/.test(l)) continue;
    const cells = l.split(/(?<!\\)\|/).map((c) => c.trim());
    for (const t of cells[1].split(/,| \/ /)) terms.add(t.replace(/`/g, '').trim().toLowerCase());
    meanings += ` ${cells.slice(2).join(' ')}`;
  }
  return { terms, meanings };
}

/** The page's prose: no code blocks or spans, no glossary table. */
function prose(md: string): string {
  const at = md.indexOf('\n## Glossary');
  const body = at < 0 ? md : md.slice(0, at) + (md.slice(at + 1).match(/\n## [\s\S]*/)?.[0] ?? '');
  return body.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
}

function uncovered(page: string, design: string, pkg: { dependencies: Record<string, string> }, processes: string[]): string[] {
  const own = glossary(page, '## Glossary');
  const sis = glossary(design, '## Glossary of SIS terms');
  const terms = new Set([...own.terms, ...sis.terms]);
  // capitals a meaning enumerates in parentheses are defined there: "its state (PENDING, FAILED, …)"
  const enumerated = new Set([...`${own.meanings} ${sis.meanings}`.matchAll(/\(([A-Z_]+(?:, [A-Z_]+)+)\)/g)].flatMap((m) => m[1].split(', ')));
  // the page's prose and its own glossary's meanings: a glossary that uses a term defines it too
  const text = `${prose(page)} ${own.meanings.replace(/`[^`]*`/g, '')}`;
  const out = new Set<string>();
  for (const w of text.match(/\b[A-Z][A-Z_]{2,}\b(?!\.md)/g) ?? []) if (!GENERAL.has(w) && !terms.has(w.toLowerCase()) && !enumerated.has(w)) out.add(w);
  for (const d of Object.keys(pkg.dependencies)) if (!GENERAL.has(d) && new RegExp(`\\b${d}\\b`).test(text) && !terms.has(d)) out.add(d);
  for (const m of text.matchAll(/(?<!\*)\*([a-z][^*]*)\*(?!\*)/g)) if (!terms.has(m[1])) out.add(m[1]);
  for (const m of text.matchAll(/\*\*([^*]+)\*\*/g)) if (!processes.includes(m[1]) && !terms.has(m[1].toLowerCase())) out.add(m[1]);
  for (const [used, term] of JARGON) if (used.test(text) && !terms.has(term.toLowerCase())) out.add(term);
  return [...out].sort();
}

describe('the glossary covers the terms of docs/getting-started.md', () => {
  const page = read('docs/getting-started.md');
  const design = read('docs/design.md');
  const pkg = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
  const processes = parseProcfile(read('Procfile')).map((p) => p.name);

  it('every term the page uses is defined', () => {
    expect(glossary(page, '## Glossary').terms.size).toBeGreaterThan(20);
    expect(uncovered(page, design, pkg, processes)).toEqual([]);
  });

  it('a planted term is reported: an acronym, a dependency, a term of art, an emphasised word', () => {
    const planted = page.replace('## One message, end to end', '## One message, end to end\n\nThe RDBMS of kafkajs keeps a *ledger* of **epochs**, as its watermark says.\n');
    const withoutWatermark = planted.replace(/\n\| watermark \|[^\n]*/, '');
    expect(uncovered(withoutWatermark, design, pkg, processes)).toEqual(['RDBMS', 'epochs', 'kafkajs', 'ledger', 'watermark']);
  });
});
