// scripts/check-sql.ts: outside lib/sql/ and lib/db/, lib/, workers/ and scripts/ call the
// operations of lib/sql/, never the runner on a statement; no file of lib/sql/ exports a statement.
// The tree as it is passes, a planted use or export is a finding naming file:line, and what only
// looks like one (a comment, a string, an operation of the same file's name) is not. Through the
// command as `npm run check` runs it, too.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { checkedFiles, exportedStatements, sqlFindings } from '../../../scripts/check-sql.ts';

describe('check:sql', () => {
  it('passes the tree as it is (lib/, workers/, scripts/), lib/sql and lib/db being where statements live', () => {
    const files = checkedFiles();
    expect(files.length).toBeGreaterThan(200);
    expect(files.some((f) => f.path.startsWith('lib/sql/outbox/'))).toBe(true);
    expect(sqlFindings(files)).toEqual([]);
  });

  it('a caller that runs a statement itself or imports one is a finding with its file and line', () => {
    const sql = { path: 'lib/sql/planted.ts', text: "export const heads = pgStatement<[], { id: number }>('planted.heads', 'select 1 as id');" };
    const caller = {
      path: 'lib/pipeline/planted.ts',
      text: [
        "import { pgRows } from '../db/statement.ts';",
        "import * as Planted from '../sql/planted.ts';",
        "import { heads } from '../sql/planted.ts';",
        'const a = await pgRows(db, Planted.heads);',
        "const s = pgStatement('x.y', 'select 1');",
      ].join('\n'),
    };
    expect(sqlFindings([sql, caller])).toEqual([
      'lib/sql/planted.ts:1: exports the statement heads (keep it unexported beside the operation that runs it)',
      'lib/pipeline/planted.ts:1: imports pgRows (call an operation of lib/sql/ instead)',
      'lib/pipeline/planted.ts:3: imports the statement heads of lib/sql/planted.ts (call an operation of lib/sql/ instead)',
      'lib/pipeline/planted.ts:4: calls pgRows (call an operation of lib/sql/ instead)',
      'lib/pipeline/planted.ts:4: uses the statement Planted.heads (call an operation of lib/sql/ instead)',
      'lib/pipeline/planted.ts:5: calls pgStatement (call an operation of lib/sql/ instead)',
    ]);
  });

  it('a lib/sql file exports operations; a statement exported in any form is a finding', () => {
    const text = [
      "const headsStatement = pgStatement<[], { id: number }>('planted.heads', 'select 1 as id');",
      'export function readHeads(db: Executor) {',
      '  return pgRows(db, headsStatement);',
      '}',
      "const perTarget = (t: string) => pgStatement('planted.pending_' + t, 'select 1');",
      "export const pending = { a: perTarget('a'), b: perTarget('b') };",
      'export { headsStatement as heads };',
      'export function statements(): { x: PgStatement<[], never> } {',
      '  return { x: headsStatement };',
      '}',
      'export const LIMIT = 3;',
    ].join('\n');
    expect(exportedStatements({ path: 'lib/sql/planted.ts', text })).toEqual([
      { name: 'pending', line: 6 },
      { name: 'heads', line: 7 },
      { name: 'statements', line: 8 },
    ]);
  });

  it('a comment or a string that names the runner, or an operation of lib/sql, is no finding', () => {
    const caller = {
      path: 'workers/planted.ts',
      text: ['// pgRows(db, Planted.heads) in a comment', "const s = 'pgRun(db, x)';", "import * as Planted from '../lib/sql/planted.ts';", 'await Planted.readHeads(db);'].join('\n'),
    };
    const sql = {
      path: 'lib/sql/planted.ts',
      text: "const headsStatement = pgStatement('planted.heads', 'select 1');\nexport function readHeads(db: Executor) {\n  return pgRows(db, headsStatement);\n}",
    };
    expect(sqlFindings([sql, caller])).toEqual([]);
  });

  it('npm run check:sql exits 0 on the tree and prints its count', () => {
    const r = spawnSync('npm', ['run', '--silent', 'check:sql'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^check:sql: \d+ files under lib\/, workers\/, scripts\/, 0 finding\(s\)$/m);
  });
});
