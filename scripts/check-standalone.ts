// npm run check:standalone (part of `npm run check`): the repository stands alone. Code, tests and
// documents explain the why in place or point to docs/; they never cite documents a clone does not
// have (the design documents this project started from, by file name or path) nor issue numbers.
// Reading the third-party sample corpus from ../shared/corpus in tests is allowed (it is data, and
// the tests skip visibly without it). Exit 1 with one line per finding.
import { scanTrackedLines } from './tracked-lines.ts';
import { cliArgs } from './args.ts';

cliArgs({
  name: 'check:standalone',
  positional: 'none',
  usage: `usage: npm run check:standalone
  Fails (exit 1, one line per finding) when a tracked file cites a document outside the
  repository (../shared/spec, ../shared/seeds, or a design document's file name not under docs/)
  or an issue number (the word issue followed by a number). No arguments.`,
});

const SELF = 'scripts/check-standalone.ts';
const OUTSIDE_NAMES = [
  'pipeline',
  'reference',
  'flight-domain',
  'sis-format',
  'architecture',
  'quality-bars',
  'refdata-requests',
  'style',
  'dispatch',
  'lifecycle',
  'current-state-design',
  'implementation',
];
const RULES: { what: string; re: RegExp }[] = [
  { what: 'a path outside the repository', re: /\.\.\/shared\/(?:spec|seeds)\b|\bshared\/spec\b/ },
  // a design document's name, unless it is one of this repository's docs/ files (docs/lifecycle.md)
  { what: 'a document outside the repository', re: new RegExp(`(?<![\\w/.-])(?:${OUTSIDE_NAMES.join('|')})\\.md\\b`) },
  { what: 'an issue number', re: /\b[Ii]ssues? #?\d+\b/ },
];
const findings: string[] = [];
const files = scanTrackedLines(
  (f) => f !== SELF && f !== 'package-lock.json',
  (f, n, line) => {
    for (const r of RULES) if (r.re.test(line)) findings.push(`${f}:${n}: ${r.what}: ${line.trim().slice(0, 160)}`);
  },
);
for (const f of findings) console.error(f);
console.log(`check:standalone: ${files} files, ${findings.length} finding(s)`);
if (findings.length) process.exitCode = 1;
