// scripts/check-size.ts: a file or a function over its limit is a finding unless it is listed with
// its reason; a listed one back within its limit is a finding too; the tree as it is passes.
import { describe, expect, it } from 'vitest';
import { functionSizes, libFiles, MAX_FILE_LINES, MAX_FUNCTION_LINES, sizeFindings } from '../../../scripts/check-size.ts';

const lines = (n: number, line = 'x;') => Array.from({ length: n }, () => line).join('\n');
/** A function declaration of exactly `n` lines. */
const fn = (name: string, n: number) => `function ${name}() {\n${lines(n - 2, '  work();')}\n}`;

describe('check:size', () => {
  it('passes the tree as it is (lib/)', () => {
    const files = libFiles();
    expect(files.length).toBeGreaterThan(100);
    expect(sizeFindings(files)).toEqual([]);
  });

  it('measures every kind of function, named by its declaration or binding', () => {
    const text = [fn('declared', 5), 'const arrow = () => {\n  a();\n};', 'class K {\n  method() {\n    return 1;\n  }\n}', 'run(function () {\n  b();\n});'].join('\n');
    expect(functionSizes('lib/x.ts', text)).toEqual([
      { name: 'declared', lines: 5 },
      { name: 'arrow', lines: 3 },
      { name: 'method', lines: 3 },
      { name: '(argument of run)', lines: 3 },
    ]);
  });

  it('a planted file over the limit is a finding; listed with a reason it passes', () => {
    const big = { path: 'lib/pipeline/planted.ts', text: `${lines(MAX_FILE_LINES + 1)}\n` };
    const ok = { path: 'lib/pipeline/small.ts', text: `${lines(MAX_FILE_LINES)}\n` };
    expect(sizeFindings([big, ok], {}, {})).toEqual([expect.stringMatching(/^lib\/pipeline\/planted\.ts: 401 lines/)]);
    expect(sizeFindings([big, ok], { 'lib/pipeline/planted.ts': 'a reason' }, {})).toEqual([]);
  });

  it('a planted function over the limit is a finding; listed with a reason it passes', () => {
    const file = { path: 'lib/pipeline/planted.ts', text: `${fn('long', MAX_FUNCTION_LINES + 1)}\n${fn('short', MAX_FUNCTION_LINES)}\n` };
    expect(sizeFindings([file], {}, {})).toEqual([expect.stringMatching(/^lib\/pipeline\/planted\.ts:long: 121 lines/)]);
    expect(sizeFindings([file], {}, { 'lib/pipeline/planted.ts:long': 'a reason' })).toEqual([]);
  });

  it('an exception that is no longer needed is a finding', () => {
    const file = { path: 'lib/pipeline/small.ts', text: `${fn('short', 10)}\n` };
    const found = sizeFindings([file], { 'lib/pipeline/small.ts': 'was long' }, { 'lib/pipeline/small.ts:short': 'was long' });
    expect(found).toEqual([expect.stringMatching(/FILE_EXCEPTIONS but within/), expect.stringMatching(/FUNCTION_EXCEPTIONS but within/)]);
  });
});
