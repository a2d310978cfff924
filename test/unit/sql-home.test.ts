// One home for SQL: outside lib/sql/ (statement text) and lib/db/ (the runner
// and the connections), no module of lib/ or workers/ writes SQL or uses Kysely's builder.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../..');
const files = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
const outsideSqlHome = [...files('lib'), ...files('workers')].filter((f) => !/^lib\/(sql|db)\//.test(f));

/** What writing SQL by hand looks like: Kysely's template tag or builder, or a statement string handed to a client. */
const SIGNS: [string, RegExp][] = [
  ['kysely import', /from 'kysely'/],
  ['sql template', /\bsql(<[^>]*>)?`/],
  ['query builder', /\.(selectFrom|insertInto|updateTable|deleteFrom)\(/],
  ['statement string', /[`'"]\s*(select\s+[\w*(]|insert\s+into\s|update\s+\w+\s+set\s|delete\s+from\s|with\s+\w+\s+as\s*\()/i],
];

describe('SQL lives in lib/sql/', () => {
  it('the scan covers lib/ and workers/', () => {
    expect(outsideSqlHome.length).toBeGreaterThan(90);
    expect(outsideSqlHome).toContain('lib/pipeline/pump/steps.ts');
  });

  it('no module outside lib/sql and lib/db writes SQL text or builds queries', () => {
    const found: string[] = [];
    for (const f of outsideSqlHome) {
      const lines = readFileSync(join(ROOT, f), 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (/^\s*(\/\/|\*|\/\*)/.test(line)) return; // comments may name a statement
        for (const [what, re] of SIGNS) if (re.test(line)) found.push(`${relative(ROOT, join(ROOT, f))}:${i + 1} ${what}: ${line.trim()}`);
      });
    }
    expect(found).toEqual([]);
  });

  it('the scan would see a statement string (the check is not vacuous)', () => {
    const re = SIGNS.find(([w]) => w === 'statement string')![1];
    expect(re.test("await c.query('select 1')")).toBe(true);
    expect(re.test('const q = `insert into proc_state (msg_id) values ($1)`')).toBe(true);
    expect(re.test("log.info('selected 3 rows')")).toBe(false);
  });
});
