// Every statement declared in lib/sql/ parses and type-checks against the migrated schemas:
// Postgres PREPAREs each one (parse, analyse, parameter types), MariaDB PREPAREs each one. A
// rarely-run statement (a purge branch, an operator command) fails here, not at 3 a.m.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { declaredStatements } from '../../lib/db/statement.ts';
import { openServices, type TestServices } from '../support/services.ts';

const SQL_DIR = join(import.meta.dirname, '../../lib/sql');
/** The table group files, relative to lib/sql/: a group split by operation is a directory (lib/sql/outbox/). */
const files = readdirSync(SQL_DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
/** A file's group: its name, or the name of the directory it is in. */
const groupOf = (f: string) => f.split('/')[0].replace(/\.ts$/, '').replaceAll('-', '_');
let s: TestServices;

beforeAll(async () => {
  for (const f of files) await import(join(SQL_DIR, f));
  // Statements built from a rule table are declared when their module builds them, once at load.
  await import('../../lib/flight/store.ts');
  s = await openServices();
});
afterAll(async () => s?.close());

/** The statement without its `-- <name>` line, lower case. */
const body = (text: string) =>
  text
    .replace(/^--[^\n]*\n/, '')
    .trim()
    .toLowerCase();
const isTransactionControl = (text: string) => /^(savepoint|release|rollback)\b/.test(body(text));

function catalogue() {
  return [...declaredStatements()].map(([name, x]) => ({ name, ...x }));
}

describe('the statement catalogue (lib/sql/)', () => {
  it('holds the statements of every table group file, each named <group>.<operation> after its file', () => {
    const groups = new Set(catalogue().map((x) => x.name.split('.')[0]));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(groups.has(groupOf(f)), f).toBe(true);
  });

  it('every Postgres statement PREPAREs against the migrated schema', async () => {
    expect(declaredStatements().has('flight.write_batch')).toBe(true);
    const pg = catalogue().filter((x) => x.engine === 'pg' && !isTransactionControl(x.text));
    expect(pg.length).toBeGreaterThan(0);
    const failures: string[] = [];
    for (const [i, x] of pg.entries()) {
      try {
        await s.sessionClient.query(`prepare msgx_catalogue_${i} as ${x.text}`);
        await s.sessionClient.query(`deallocate msgx_catalogue_${i}`);
      } catch (e) {
        failures.push(`${x.name}: ${(e as Error).message}`);
      }
    }
    expect(failures).toEqual([]);
  });

  // PREPARE takes no transaction control (a savepoint of the pump's business transaction): those
  // run, in a transaction of their own — savepoints first, then rollbacks to them, then releases.
  it('every Postgres savepoint statement runs inside a transaction', async () => {
    const order = (t: string) => (body(t).startsWith('savepoint') ? 0 : body(t).startsWith('rollback') ? 1 : 2);
    const control = catalogue()
      .filter((x) => x.engine === 'pg' && isTransactionControl(x.text))
      .sort((a, b) => order(a.text) - order(b.text));
    expect(control.length).toBeGreaterThan(0);
    const failures: string[] = [];
    await s.sessionClient.query('begin');
    try {
      for (const x of control) {
        try {
          await s.sessionClient.query(x.text);
        } catch (e) {
          failures.push(`${x.name}: ${(e as Error).message}`);
        }
      }
    } finally {
      await s.sessionClient.query('rollback');
    }
    expect(failures).toEqual([]);
  });

  it('every MariaDB statement PREPAREs against the inbox/outbox schema', async () => {
    const my = catalogue().filter((x) => x.engine === 'mysql');
    expect(my.length).toBeGreaterThan(0);
    const failures: string[] = [];
    const conn = await s.inbox.getConnection();
    try {
      for (const x of my) {
        try {
          await conn.query('PREPARE msgx_catalogue FROM ?', [x.text]);
          await conn.query('DEALLOCATE PREPARE msgx_catalogue');
        } catch (e) {
          failures.push(`${x.name}: ${(e as Error).message}`);
        }
      }
    } finally {
      conn.release();
    }
    expect(failures).toEqual([]);
  });
});
