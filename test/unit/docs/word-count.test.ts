// npm run check:words: counts README, docs/ (not docs/history/, the archive), BENCHMARKS.md and
// RELIABILITY.md, prints the total in every CI run, and fails over the budget.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUDGET, documents } from '../../../scripts/word-count.ts';

const SCRIPT = path.resolve(import.meta.dirname, '../../../scripts/word-count.ts');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A repository-shaped folder with the given README word count and an archive far over the budget. */
function tree(readmeWords: number): string {
  const root = mkdtempSync(path.join(tmpdir(), 'words-'));
  dirs.push(root);
  mkdirSync(path.join(root, 'docs/history'), { recursive: true });
  writeFileSync(path.join(root, 'README.md'), 'word '.repeat(readmeWords));
  writeFileSync(path.join(root, 'docs/design.md'), 'one two three');
  writeFileSync(path.join(root, 'docs/history/benchmarks.md'), 'old '.repeat(BUDGET * 2));
  writeFileSync(path.join(root, 'BENCHMARKS.md'), 'b');
  writeFileSync(path.join(root, 'RELIABILITY.md'), 'r');
  return root;
}

const run = (root: string) => spawnSync(process.execPath, [SCRIPT], { cwd: root, encoding: 'utf8' });

describe('check:words', () => {
  it('counts the documents a reader is asked to read, never the archive', () => {
    expect(documents(tree(1))).toEqual(['README.md', 'docs/design.md', 'BENCHMARKS.md', 'RELIABILITY.md']);
  });

  it('prints the total and passes within the budget, fails over it', () => {
    const ok = run(tree(BUDGET - 5));
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(new RegExp(`total\\s+${BUDGET}\\s+words of ${BUDGET}`));
    const over = run(tree(BUDGET));
    expect(over.status).toBe(1);
    expect(over.stderr).toContain(`check:words: ${BUDGET + 5} words, over the budget of ${BUDGET} by 5`);
  });
});
