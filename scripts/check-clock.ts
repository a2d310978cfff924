// npm run check:clock (part of `npm run check`): time has one source. Under lib/ and workers/,
// `Date.now` and `new Date()` (the current time, no argument) appear only in the clock's own
// implementation, lib/core/clock.ts (and the browser console's, lib/api/console/clock.js;
// docs/decisions.md "One clock"): every other module asks the
// clock it is given (Clock.now()), so that a test can move time and a backoff can be read as data.
// `new Date(x)` (a conversion) is no read of the clock. Read from the syntax tree: comments and
// strings that name them do not count. Exit 1 with one `file:line` per finding.
import ts from 'typescript';
import { cliArgs } from './args.ts';
import { sourceFiles } from './source-files.ts';

/** The only file that reads the system time: the clock's implementation. */
export const CLOCK_FILE = 'lib/core/clock.ts';
/** The ops console runs in the browser, with the browser's clock: its own one reader of it. */
export const BROWSER_CLOCK_FILE = 'lib/api/console/clock.js';
const CLOCKS = new Set([CLOCK_FILE, BROWSER_CLOCK_FILE]);
export const ROOTS = ['lib', 'workers'] as const;

/** Where a source text reads the current time itself: line (1-based) and what it wrote. */
export function clockReads(path: string, text: string): { line: number; what: string }[] {
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, path.endsWith('.js') ? ts.ScriptKind.JS : ts.ScriptKind.TS);
  const out: { line: number; what: string }[] = [];
  const at = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  const isDate = (e: ts.Expression) => ts.isIdentifier(e) && e.text === 'Date';
  const visit = (node: ts.Node) => {
    if (ts.isPropertyAccessExpression(node) && isDate(node.expression) && node.name.text === 'now') out.push({ line: at(node), what: 'Date.now' });
    if (ts.isNewExpression(node) && isDate(node.expression) && (node.arguments?.length ?? 0) === 0) out.push({ line: at(node), what: 'new Date()' });
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** The findings for these files (path relative to the repository, text): `file:line: what`. */
export function clockFindings(files: readonly { path: string; text: string }[]): string[] {
  return files.filter((f) => !CLOCKS.has(f.path)).flatMap((f) => clockReads(f.path, f.text).map((r) => `${f.path}:${r.line}: ${r.what} (ask the injected clock, ${CLOCK_FILE})`));
}

/** The .ts and .js files under lib/ and workers/, as the working tree has them. */
export const clockedFiles = (root = '.') => sourceFiles(ROOTS, root);

function main(): void {
  cliArgs({
    name: 'check:clock',
    positional: 'none',
    usage: `usage: npm run check:clock
  Fails (exit 1, one file:line per finding) when a file under ${ROOTS.join('/ or ')}/ other than ${CLOCK_FILE}
  reads the current time itself (Date.now, new Date()). No arguments.`,
  });
  const files = clockedFiles();
  const findings = clockFindings(files);
  for (const f of findings) console.log(f);
  console.log(`check:clock: ${files.length} files under ${ROOTS.join('/, ')}/, ${findings.length} finding(s)`);
  if (findings.length) process.exitCode = 1;
}

if (import.meta.main) main();
