// The line scan shared by the repository's text checks (check:standalone, check:step-names):
// every line of the files git tracks that `keep` selects, as they are on disk.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Calls `check` on every line of the tracked files `keep` selects; returns how many files were read. */
export function scanTrackedLines(keep: (file: string) => boolean, check: (file: string, lineNo: number, line: string) => void): number {
  const files = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' })
    .split('\0')
    .filter((f) => f && !/\.(png|jpg|ico)$/.test(f) && keep(f));
  for (const f of files) {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue; // a file in the index but not on disk (being deleted)
    }
    text.split('\n').forEach((line, i) => check(f, i + 1, line));
  }
  return files.length;
}
