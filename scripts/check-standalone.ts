// npm run check:standalone (part of `npm run check`): the repository stands alone. Code, tests and
// documents explain the why in place or point to docs/; they never cite documents a clone does not
// have (the design documents this project started from, by file name or path, or their numbered
// sections), nor issue or task numbers (the word followed by a number, with a space, a hyphen or
// '#'), nor rule IDs the repository does not define (the forms US-nn, G-NAME, C-n, Dn, INV-n:
// docs/design.md "IDs" and "Invariants" define the ones in use). Reading the third-party sample corpus from
// ../shared/corpus in tests is allowed (it is data, and the tests skip visibly without it).
// Exit 1 with one line per finding. test/unit/docs/check-standalone.test.ts plants each form.
import { readFileSync } from 'node:fs';
import { cliArgs } from './args.ts';
import { scanTrackedLines } from './tracked-lines.ts';

const SELF = 'scripts/check-standalone.ts';
/** The document that defines every rule ID (its tables' first column). */
export const ID_DOC = 'docs/design.md';
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
export const RULES: { what: string; re: RegExp }[] = [
  { what: 'a path outside the repository', re: /\.\.\/shared\/(?:spec|seeds)\b|\bshared\/spec\b|\.helper-env\b/ },
  // a design document's name, unless it is one of this repository's docs/ files (docs/lifecycle.md)
  { what: 'a document outside the repository', re: new RegExp(`(?<![\\w/.-])(?:${OUTSIDE_NAMES.join('|')})\\.md\\b`) },
  // the word issue(s) or task(s), then a number after a space, a hyphen or '#'
  { what: 'an issue or task number', re: /\b(?:issues?|tasks?)(?:[ -]?#\s?|[ -])\d+\b/i },
  // a section of a document outside the repository: the section sign, or 'seed' with a section number
  { what: 'a section of an outside document', re: /§|\bseeds?\s+(?:section\s+)?\d+(?:\.\d+)*\b/i },
];

/**
 * The rule IDs a line may cite, of the forms US-nn (with ACn), G-NAME, C-n, Dn, INV-n. A D-number
 * inside XML (`<RSID>D1</RSID>`, test data) or a code point (`U+D800`) is not an ID.
 */
const ID_RE = /(?<![\w>+-])(?:US-\d+|G-[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*|C-\d+|D\d+|INV-\d+)(?![\w<-])/g;

/** The IDs ID_DOC defines: the first cell of its table rows (`| C-1 | …`); `INV-n` stands for the invariants' rows. */
export function definedIds(text: string): Set<string> {
  const ids = new Set<string>();
  for (const m of text.matchAll(/^\|\s*([A-Z][A-Za-z0-9-]*)\s*\|/gm)) ids.add(m[1]);
  return ids;
}

/** What is wrong with one line (empty: nothing). */
export function lineFindings(line: string, defined: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const r of RULES) if (r.re.test(line)) out.push(r.what);
  for (const m of line.matchAll(ID_RE)) if (!defined.has(m[0])) out.push(`an ID ${ID_DOC} does not define (${m[0]})`);
  return out;
}

function main(): void {
  cliArgs({
    name: 'check:standalone',
    positional: 'none',
    usage: `usage: npm run check:standalone
  Fails (exit 1, one line per finding) when a tracked file cites a document outside the
  repository (the project's spec or seed folders beside the clone, a helper's environment file, a
  design document's file name not under docs/, a numbered section of one), an issue or task
  number, or a rule ID (US-nn, G-XXX, C-n, D-n, INV-n) that ${ID_DOC} does not define.
  No arguments.`,
  });
  const defined = definedIds(readFileSync(ID_DOC, 'utf8'));
  const findings: string[] = [];
  const files = scanTrackedLines(
    (f) => f !== SELF && f !== 'package-lock.json' && f !== 'test/unit/docs/check-standalone.test.ts',
    (f, n, line) => {
      for (const what of lineFindings(line, defined)) findings.push(`${f}:${n}: ${what}: ${line.trim().slice(0, 160)}`);
    },
  );
  for (const f of findings) console.error(f);
  console.log(`check:standalone: ${files} files, ${findings.length} finding(s)`);
  if (findings.length) process.exitCode = 1;
}

if (import.meta.main) main();
