// npm run check:step-names (part of `npm run check`): the pump's steps are called by their names
// (read, decode, business, mirror, terminal: docs/design.md "The pump's steps") in code,
// comments, log lines, metric help texts and documents, never by a number: the numbers changed
// as steps were added, and a newcomer met "step 2" meaning decode in one file and the Redis
// write in another. Scans the tracked files under lib/, workers/, scripts/ and docs/ for a
// numbered step ("step" or "steps" followed by a digit); an amount such as "step (2 min)" or a
// ladder step given in ms is not a step name and is not flagged. Exit 1 with one line per finding.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cliArgs } from './args.ts';

cliArgs({
  name: 'check:step-names',
  positional: 'none',
  usage: `usage: npm run check:step-names
  Fails (exit 1, one line per finding) when a tracked file under lib/, workers/, scripts/ or docs/
  calls a pump step by a number instead of its name (read, decode, business, mirror, terminal).
  No arguments.`,
});

const SELF = 'scripts/check-step-names.ts';
const SCANNED = /^(lib|workers|scripts|docs)\//;
/**
 * Files being rewritten to use the step names; each is still checked once it leaves this list.
 * Remove an entry when its file no longer numbers the steps.
 */
const NOT_YET: readonly string[] = [];

/** "step 3", "Steps 1–2", "steps 3 to 5": a digit after the word, not followed by more of a number or a unit. */
const NUMBERED_STEP = /\b[Ss]teps? \d+(?![\d.,])(?!\s*(?:ms|s|min|h|%|×)\b)/;

// The rule is not vacuous, and an amount is not a finding.
for (const [text, want] of [
  ['Step 3 for a batch', true],
  ['Steps 1–2 of the NEXT batch run while steps 3–5 of this one do', true],
  ['Redis flight snapshots (step 2).', true],
  ['then every last step (2 min) for as long as it takes', false],
  ['the ladder step 500 ms', false],
  ['the mirror step', false],
] as const) {
  if (NUMBERED_STEP.test(text) !== want) throw new Error(`check:step-names: the rule ${want ? 'misses' : 'flags'} "${text}"`);
}

const files = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' })
  .split('\0')
  .filter((f) => SCANNED.test(f) && f !== SELF && !NOT_YET.includes(f) && !/\.(png|jpg|ico)$/.test(f));
const findings: string[] = [];
for (const f of files) {
  let text: string;
  try {
    text = readFileSync(f, 'utf8');
  } catch {
    continue; // a file in the index but not on disk (being deleted)
  }
  text.split('\n').forEach((line, i) => {
    if (NUMBERED_STEP.test(line)) findings.push(`${f}:${i + 1}: a pump step called by a number (use read, decode, business, mirror or terminal): ${line.trim().slice(0, 160)}`);
  });
}
for (const f of findings) console.error(f);
console.log(`check:step-names: ${files.length} files, ${findings.length} finding(s)${NOT_YET.length ? `; not yet checked: ${NOT_YET.join(', ')}` : ''}`);
if (findings.length) process.exitCode = 1;
