// npm run check:words (part of `npm run check`, so CI output shows it): the words of the documents
// a reader is asked to read — README.md, BENCHMARKS.md, RELIABILITY.md and the files directly in
// docs/ — per file and in total, counted as `wc -w` does (runs of non-whitespace). The total must
// stay within BUDGET, else exit 1. docs/history/ is not counted: it is the archive of past runs,
// superseded reasoning and old procedures, kept verbatim as a record, not reading for newcomers.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { cliArgs } from './args.ts';

/** The most words README, docs/ (without docs/history/), BENCHMARKS.md and RELIABILITY.md may hold together. */
export const BUDGET = 30_000;

/** The documents counted, in a fixed order (files directly in docs/; its subfolders are archives). */
export function documents(root = '.'): string[] {
  const docs = readdirSync(path.join(root, 'docs'), { withFileTypes: true })
    .filter((e) => e.isFile() && /\.(md|ya?ml)$/.test(e.name))
    .map((e) => `docs/${e.name}`)
    .sort();
  return ['README.md', ...docs, 'BENCHMARKS.md', 'RELIABILITY.md'];
}

export const words = (text: string) => text.split(/\s+/).filter(Boolean).length;

function main(): void {
  cliArgs({
    name: 'check:words',
    positional: 'none',
    usage: `usage: npm run check:words
  Prints the word count (as wc -w) of README.md, docs/* (not docs/history/, the archive),
  BENCHMARKS.md and RELIABILITY.md, per file and in total. Exit 1 when the total is over the
  budget (${BUDGET.toLocaleString('en')} words), else 0. No arguments.`,
  });
  const counts = documents().map((f) => ({ f, n: words(readFileSync(f, 'utf8')) }));
  const total = counts.reduce((s, c) => s + c.n, 0);
  const width = Math.max(...counts.map((c) => c.f.length));
  for (const { f, n } of counts) console.log(`${f.padEnd(width)}  ${String(n).padStart(7)}`);
  console.log(`${'total'.padEnd(width)}  ${String(total).padStart(7)}  words of ${BUDGET} (check:words; docs/history/ not counted)`);
  if (total > BUDGET) {
    console.error(`check:words: ${total} words, over the budget of ${BUDGET} by ${total - BUDGET}`);
    process.exitCode = 1;
  }
}

if (import.meta.main) main();
