// npm run check:words (part of `npm run check`, so CI output shows it): the words of the documents
// a reader is asked to read — README.md, BENCHMARKS.md, RELIABILITY.md and every file under docs/ —
// per file and in total, counted as `wc -w` does (runs of non-whitespace). It only reports: the
// size of the documentation is visible in every run; no limit is enforced.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { cliArgs } from './args.ts';

/** The documents counted, in a fixed order. */
export function documents(root = '.'): string[] {
  const docs = readdirSync(path.join(root, 'docs'))
    .filter((f) => /\.(md|ya?ml)$/.test(f))
    .sort()
    .map((f) => `docs/${f}`);
  return ['README.md', ...docs, 'BENCHMARKS.md', 'RELIABILITY.md'];
}

export const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function main(): void {
  cliArgs({
    name: 'check:words',
    positional: 'none',
    usage: `usage: npm run check:words
  Prints the word count (as wc -w) of README.md, docs/*, BENCHMARKS.md and RELIABILITY.md, per
  file and in total. Always exit 0: it reports, it does not limit. No arguments.`,
  });
  const counts = documents().map((f) => ({ f, n: words(readFileSync(f, 'utf8')) }));
  const width = Math.max(...counts.map((c) => c.f.length));
  for (const { f, n } of counts) console.log(`${f.padEnd(width)}  ${String(n).padStart(7)}`);
  console.log(`${'total'.padEnd(width)}  ${String(counts.reduce((s, c) => s + c.n, 0)).padStart(7)}  words (check:words)`);
}

if (import.meta.main) main();
