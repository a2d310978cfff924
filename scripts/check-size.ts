// npm run check:size (part of `npm run check`): no file under lib/ longer than MAX_FILE_LINES and
// no function longer than MAX_FUNCTION_LINES, so that a line of code keeps a room of a size a
// reader takes in. The exceptions are listed below, each with its reason; an exception that no
// longer exceeds its limit is reported too (remove it). Exit 1 with one line per finding.
import ts from 'typescript';
import { cliArgs } from './args.ts';
import { sourceFiles } from './source-files.ts';

export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 120;

/** Files allowed over MAX_FILE_LINES (path → why): none at present; a table group that outgrows it is split by operation (lib/sql/outbox/). */
export const FILE_EXCEPTIONS: Readonly<Record<string, string>> = {};

/** Functions allowed over MAX_FUNCTION_LINES (`path:name` → why). */
export const FUNCTION_EXCEPTIONS: Readonly<Record<string, string>> = {
  'lib/sis/scan.ts:checkXml': "the decoder's hot loop: one pass over the XML text with its states in local variables, kept whole so that no call per character is added",
};

/** A function of a file: its name as the check reports it, and its length in lines. */
export interface FunctionSize {
  name: string;
  lines: number;
}

/** The name of a function node: its own, or the binding, property or call it is given to. */
function nameOf(node: ts.Node, sf: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name) return named.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))) return parent.name.getText(sf);
  if (parent && ts.isCallExpression(parent)) return `(argument of ${parent.expression.getText(sf).slice(0, 40)})`;
  return '(anonymous)';
}

/** Every function of a source text (declarations, methods, arrow functions, function expressions), with its length in lines. */
export function functionSizes(path: string, text: string): FunctionSize[] {
  const sf = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, path.endsWith('.js') ? ts.ScriptKind.JS : ts.ScriptKind.TS);
  const out: FunctionSize[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      out.push({ name: nameOf(node, sf), lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const lineCount = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

/** The findings for these files (path relative to the repository, text). */
export function sizeFindings(files: readonly { path: string; text: string }[], fileExceptions = FILE_EXCEPTIONS, functionExceptions = FUNCTION_EXCEPTIONS): string[] {
  const findings: string[] = [];
  const usedFile = new Set<string>();
  const usedFunction = new Set<string>();
  for (const { path, text } of files) {
    const n = lineCount(text);
    if (n > MAX_FILE_LINES) {
      if (path in fileExceptions) usedFile.add(path);
      else findings.push(`${path}: ${n} lines (at most ${MAX_FILE_LINES}; split it by concern, or list it in FILE_EXCEPTIONS with its reason)`);
    }
    for (const f of functionSizes(path, text)) {
      if (f.lines <= MAX_FUNCTION_LINES) continue;
      const key = `${path}:${f.name}`;
      if (key in functionExceptions) usedFunction.add(key);
      else findings.push(`${key}: ${f.lines} lines (at most ${MAX_FUNCTION_LINES}; split it, or list it in FUNCTION_EXCEPTIONS with its reason)`);
    }
  }
  const seen = new Set(files.map((f) => f.path));
  for (const path of Object.keys(fileExceptions))
    if (seen.has(path) && !usedFile.has(path)) findings.push(`${path}: listed in FILE_EXCEPTIONS but within ${MAX_FILE_LINES} lines: remove the exception`);
  for (const key of Object.keys(functionExceptions))
    if (seen.has(key.slice(0, key.lastIndexOf(':'))) && !usedFunction.has(key))
      findings.push(`${key}: listed in FUNCTION_EXCEPTIONS but within ${MAX_FUNCTION_LINES} lines (or gone): remove the exception`);
  return findings;
}

/** The source files under lib/ (.ts and .js), as the working tree has them. */
export const libFiles = (root = '.') => sourceFiles(['lib'], root);

function main(): void {
  cliArgs({
    name: 'check:size',
    positional: 'none',
    usage: `usage: npm run check:size
  Fails (exit 1, one line per finding) when a file under lib/ is longer than ${MAX_FILE_LINES} lines or a
  function longer than ${MAX_FUNCTION_LINES}, unless scripts/check-size.ts lists it with its reason.
  No arguments.`,
  });
  const files = libFiles();
  const findings = sizeFindings(files);
  for (const f of findings) console.log(f);
  console.log(`check:size: ${files.length} files under lib/, ${findings.length} finding(s)`);
  if (findings.length) process.exitCode = 1;
}

if (import.meta.main) main();
