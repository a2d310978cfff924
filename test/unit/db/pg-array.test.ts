// pgArray builds the array literal node-postgres itself sends for a JS array parameter: the same
// text for every kind of element the statements pass (quotes, backslashes, braces, commas, NULL,
// numbers, booleans, JSON), so a parameter given as its literal reaches Postgres unchanged.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { pgArray } from '../../../lib/db/statement.ts';

const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (v: unknown) => unknown };

const cases: [string, (string | number | boolean | null | undefined)[]][] = [
  ['empty', []],
  ['plain text', ['a', 'BA1234', '']],
  ['quotes and backslashes', ['say "hi"', 'C:\\path\\', '\\"', '"']],
  ['braces, commas, spaces, NULL as text', ['{a,b}', 'x, y', '  padded  ', 'NULL', 'null']],
  ['null and undefined', [null, 'a', undefined, null]],
  ['numbers', [0, 1, -7, 12345678901, 1.5]],
  ['booleans', [true, false]],
  ['JSON payloads', [JSON.stringify({ FLID: '1', GATE: 'A"1', NOTE: 'back\\slash', NESTED: [{ a: null }] }), '{}']],
  ['non-ASCII', ['北京', 'Zürich', '✈']],
];

describe('pgArray', () => {
  it.each(cases)('%s: the literal node-postgres sends', (_name, values) => {
    expect(pgArray(values)).toBe(prepareValue(values));
  });
});
