// npm run check:sql (part of `npm run check`): one SQL convention (docs/decisions.md "SQL: static
// statements in lib/sql/"). A file of lib/sql/ exports operations (functions taking an Executor and
// typed arguments) and keeps the statements they run to itself; every other module of lib/,
// workers/ and scripts/ calls those operations. So outside lib/sql/ and lib/db/ (the runner and
// the connections) nothing declares a statement (pgStatement, myStatement), runs one (pgRows,
// pgOne, pgRun, myRows, myRun) or imports one from lib/sql/; and no file of lib/sql/ exports a
// statement (a constant declared with pgStatement/myStatement, or anything typed PgStatement /
// MyStatement). Read from the syntax tree: comments and strings that name them do not count.
// Exit 1 with one `file:line` per finding.
import { dirname, join, normalize } from 'node:path';
import ts from 'typescript';
import { cliArgs } from './args.ts';
import { sourceFiles } from './source-files.ts';

export const ROOTS = ['lib', 'workers', 'scripts'] as const;
/** Where statements are declared (lib/sql/) and run (lib/db/statement.ts). */
const HOME = /^lib\/(sql|db)\//;
const SQL_HOME = /^lib\/sql\//;
/** The runner's functions that declare or run a statement. */
export const STATEMENT_FUNCTIONS = new Set(['pgStatement', 'myStatement', 'pgRows', 'pgOne', 'pgRun', 'myRows', 'myRun']);
const DECLARE = new Set(['pgStatement', 'myStatement']);
const STATEMENT_TYPE = /\b(PgStatement|MyStatement)\b/;

type File = { path: string; text: string };
const parse = (f: File) => ts.createSourceFile(f.path, f.text, ts.ScriptTarget.Latest, true, f.path.endsWith('.js') ? ts.ScriptKind.JS : ts.ScriptKind.TS);
const lineOf = (sf: ts.SourceFile, n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
const isExported = (n: ts.Node) => ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

/** Does this node call pgStatement/myStatement, or one of the file's own statement factories (`factories`), anywhere inside? */
function callsDeclare(e: ts.Node, factories: ReadonlySet<string>): boolean {
  if (ts.isCallExpression(e) && ts.isIdentifier(e.expression) && (DECLARE.has(e.expression.text) || factories.has(e.expression.text))) return true;
  return ts.forEachChild(e, (c) => callsDeclare(c, factories)) ?? false;
}

/** Does this expression declare a statement at module load (such a call not inside a function)? */
function declaresStatement(e: ts.Node, factories: ReadonlySet<string>): boolean {
  if (ts.isFunctionLike(e)) return false;
  if (ts.isCallExpression(e) && ts.isIdentifier(e.expression) && (DECLARE.has(e.expression.text) || factories.has(e.expression.text))) return true;
  return ts.forEachChild(e, (c) => declaresStatement(c, factories)) ?? false;
}

/** A file's statement factories: its top-level functions that build a statement (e.g. one per outbox target). */
function statementFactories(sf: ts.SourceFile): Set<string> {
  const out = new Set<string>();
  for (const st of sf.statements) {
    if (ts.isFunctionDeclaration(st) && st.name && callsDeclare(st, out)) out.add(st.name.text);
    if (ts.isVariableStatement(st))
      for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name) && d.initializer && ts.isFunctionLike(d.initializer) && callsDeclare(d.initializer, out)) out.add(d.name.text);
  }
  return out;
}

/** The statements a lib/sql/ file exports: name and line. */
export function exportedStatements(f: File): { name: string; line: number }[] {
  const sf = parse(f);
  const out: { name: string; line: number }[] = [];
  const local = new Map<string, number>();
  const factories = statementFactories(sf);
  for (const st of sf.statements) {
    if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) {
        if (!ts.isIdentifier(d.name)) continue;
        const statement = (d.initializer && declaresStatement(d.initializer, factories)) || (d.type && STATEMENT_TYPE.test(d.type.getText(sf)));
        if (!statement) continue;
        if (isExported(st)) out.push({ name: d.name.text, line: lineOf(sf, d) });
        else local.set(d.name.text, lineOf(sf, d));
      }
    } else if (ts.isFunctionDeclaration(st) && st.name && isExported(st) && st.type && STATEMENT_TYPE.test(st.type.getText(sf))) {
      out.push({ name: st.name.text, line: lineOf(sf, st) });
    } else if (ts.isExportDeclaration(st) && !st.moduleSpecifier && st.exportClause && ts.isNamedExports(st.exportClause)) {
      for (const e of st.exportClause.elements) {
        const name = (e.propertyName ?? e.name).text;
        if (local.has(name)) out.push({ name: e.name.text, line: lineOf(sf, e) });
      }
    }
  }
  return out;
}

/** Where a file outside lib/sql/ and lib/db/ uses the runner itself or a statement of lib/sql/ (`exported`: path → its exported statements). */
export function statementUses(f: File, exported: ReadonlyMap<string, ReadonlySet<string>> = new Map()): { line: number; what: string }[] {
  const sf = parse(f);
  const out: { line: number; what: string }[] = [];
  const namespaces = new Map<string, ReadonlySet<string>>();
  for (const st of sf.statements) {
    if (!ts.isImportDeclaration(st) || !ts.isStringLiteral(st.moduleSpecifier)) continue;
    const target = normalize(join(dirname(f.path), st.moduleSpecifier.text));
    const bindings = st.importClause?.namedBindings;
    const statements = exported.get(target);
    if (bindings && ts.isNamespaceImport(bindings) && statements) namespaces.set(bindings.name.text, statements);
    if (!bindings || !ts.isNamedImports(bindings)) continue;
    for (const e of bindings.elements) {
      const name = (e.propertyName ?? e.name).text;
      if (/^lib\/db\/statement\.ts$/.test(target) && STATEMENT_FUNCTIONS.has(name)) out.push({ line: lineOf(sf, e), what: `imports ${name}` });
      if (statements?.has(name)) out.push({ line: lineOf(sf, e), what: `imports the statement ${name} of ${target}` });
    }
  }
  const visit = (n: ts.Node) => {
    if (ts.isCallExpression(n)) {
      const callee = n.expression;
      const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : '';
      if (STATEMENT_FUNCTIONS.has(name)) out.push({ line: lineOf(sf, n), what: `calls ${name}` });
    }
    if (ts.isPropertyAccessExpression(n) && ts.isIdentifier(n.expression) && namespaces.get(n.expression.text)?.has(n.name.text))
      out.push({ line: lineOf(sf, n), what: `uses the statement ${n.expression.text}.${n.name.text}` });
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return out;
}

/** The findings for these files (path relative to the repository, text): `file:line: what`. */
export function sqlFindings(files: readonly File[]): string[] {
  const findings: string[] = [];
  const exported = new Map<string, Set<string>>();
  for (const f of files.filter((x) => SQL_HOME.test(x.path))) {
    const st = exportedStatements(f);
    exported.set(f.path, new Set(st.map((s) => s.name)));
    for (const s of st) findings.push(`${f.path}:${s.line}: exports the statement ${s.name} (keep it unexported beside the operation that runs it)`);
  }
  for (const f of files.filter((x) => !HOME.test(x.path))) for (const u of statementUses(f, exported)) findings.push(`${f.path}:${u.line}: ${u.what} (call an operation of lib/sql/ instead)`);
  return findings;
}

/** The .ts and .js files under lib/, workers/ and scripts/, as the working tree has them. */
export const checkedFiles = (root = '.') => sourceFiles(ROOTS, root);

function main(): void {
  cliArgs({
    name: 'check:sql',
    positional: 'none',
    usage: `usage: npm run check:sql
  Fails (exit 1, one file:line per finding) when a file under ${ROOTS.join('/, ')}/ outside lib/sql/ and
  lib/db/ declares or runs a statement itself (${[...STATEMENT_FUNCTIONS].join(', ')}) or imports one
  from lib/sql/, or when a file of lib/sql/ exports a statement. No arguments.`,
  });
  const files = checkedFiles();
  const findings = sqlFindings(files);
  for (const f of findings) console.log(f);
  console.log(`check:sql: ${files.length} files under ${ROOTS.join('/, ')}/, ${findings.length} finding(s)`);
  if (findings.length) process.exitCode = 1;
}

if (import.meta.main) main();
