// scripts/check-clock.ts: outside lib/core/clock.ts, lib/ and workers/ never read the time
// themselves; the tree as it is passes, a planted read is a finding naming file:line, and what only
// looks like one (a conversion, a comment, a string, another object's now) is not. Through the
// command as `npm run check` runs it, too.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CLOCK_FILE, clockedFiles, clockFindings, clockReads } from '../../../scripts/check-clock.ts';

describe('check:clock', () => {
  it('passes the tree as it is (lib/, workers/), the clock itself being the one exception', () => {
    const files = clockedFiles();
    expect(files.length).toBeGreaterThan(150);
    expect(files.some((f) => f.path.startsWith('workers/'))).toBe(true);
    expect(clockFindings(files)).toEqual([]);
    const clock = files.find((f) => f.path === CLOCK_FILE)!;
    expect(clockReads(clock.path, clock.text).length).toBeGreaterThan(0); // the one place that may
  });

  it('a planted read is a finding with its file and line', () => {
    const text = ['const a = 1;', 'const t = Date.now();', 'const d = new Date();', 'const f = Date.now;', 'const e = new Date;'].join('\n');
    expect(clockFindings([{ path: 'lib/pipeline/planted.ts', text }])).toEqual([
      'lib/pipeline/planted.ts:2: Date.now (ask the injected clock, lib/core/clock.ts)',
      'lib/pipeline/planted.ts:3: new Date() (ask the injected clock, lib/core/clock.ts)',
      'lib/pipeline/planted.ts:4: Date.now (ask the injected clock, lib/core/clock.ts)',
      'lib/pipeline/planted.ts:5: new Date() (ask the injected clock, lib/core/clock.ts)',
    ]);
  });

  it("a conversion, a comment, a string or another object's now is no read of the clock", () => {
    const text = ['// Date.now() and new Date() in a comment', "const s = 'Date.now()';", 'const d = new Date(at.getTime() + 5);', 'const n = clock.now();', 'const p = performance.now();'].join('\n');
    expect(clockFindings([{ path: 'workers/planted.ts', text }])).toEqual([]);
  });

  it('npm run check:clock exits 0 on the tree and prints its count', () => {
    const r = spawnSync('npm', ['run', '--silent', 'check:clock'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^check:clock: \d+ files under lib\/, workers\/, 0 finding\(s\)$/m);
  });
});
