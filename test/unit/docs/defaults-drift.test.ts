// Drift: where README, docs/ and BENCHMARKS.md call a batch size K "the default", it is the default
// of msgx.pipeline.apply-batch (lib/core/config.ts) — unless the sentence dates it ("then").
// BENCHMARKS.md keeps runs made when the default was another K; those say "then". The comparison
// is also run on a mutated copy: a planted "K = 200 (default)" is reported.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeConfig } from '../../../lib/core/config.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const K = Number(describeConfig().find((c) => c.key === 'msgx.pipeline.apply-batch')!.default);
const num = (s: string) => Number(s.replace(/,/g, ''));

/** "file:line: K = n called the default" for every claim that names another K than the config's default. */
function kDrift(file: string, text: string, k: number): string[] {
  const out: string[] = [];
  let kTable = false;
  text.split('\n').forEach((line, i) => {
    if (!line.startsWith('|')) kTable = false;
    else if (/^\| K\b/.test(line)) kTable = true;
    const claims = [
      ...line.matchAll(/\bdefault K = ([\d,]+)/g),
      ...line.matchAll(/\bK = ([\d,]+)(?: \*\*)? \((?:the )?default(?: now)?\)/g),
      ...line.matchAll(/\bK = ([\d,]+) is the default\b/g),
      ...line.matchAll(/\bdefault (?:stays|is) K = ([\d,]+)/g),
      ...(kTable ? line.matchAll(/^\| \*{0,2}([\d,]+) \(default\)/g) : []),
    ];
    for (const m of claims) if (num(m[1]) !== k && !/\bthen\b/.test(line)) out.push(`${file}:${i + 1}: K = ${m[1]} called the default (msgx.pipeline.apply-batch is ${k})`);
  });
  return out;
}

const FILES = [
  'README.md',
  'BENCHMARKS.md',
  'RELIABILITY.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const text = Object.fromEntries(FILES.map((f) => [f, readFileSync(path.join(ROOT, f), 'utf8')]));

describe('the default K in the documents vs msgx.pipeline.apply-batch', () => {
  it('every "default" K is the config default, or dated "then"', () => {
    expect(K).toBe(500);
    expect(FILES.flatMap((f) => kDrift(f, text[f], K))).toEqual([]);
  });

  it('reports each planted drift', () => {
    const planted = [
      'the pump at K = 200 (default) reaches 0.9 ×',
      '`npm run bench:e2e` (default K = 200)',
      'K = 200 is the default: 86 % of the rate',
      'The default stays K = 200 where commits are cheap.',
      '| K (`msgx.pipeline.apply-batch`) | msg/s |\n|---|---|\n| **200 (default)** | 5,444 |',
    ];
    for (const p of planted) expect(kDrift('BENCHMARKS.md', `${text['BENCHMARKS.md']}\n${p}\n`, K), p).toHaveLength(1);
    // the same claims about the config's default pass
    expect(kDrift('x.md', 'K = 500 (the default now); default K = 500', K)).toEqual([]);
  });
});
