// The test run's file order (test/support/sequencer.ts): longest first, from vitest's results cache
// when it has the file, else from the recorded durations; groups and projects keep their order.
import { describe, expect, it } from 'vitest';
import type { TestSpecification } from 'vitest/node';
import LongestFirst, { RECORDED_SECONDS } from '../support/sequencer.ts';

const ROOT = '/repo';
const spec = (path: string, project = 'side-by-side', groupOrder = 0) =>
  ({ moduleId: `${ROOT}/${path}`, project: { name: project, config: { sequence: { groupOrder } } } }) as unknown as TestSpecification;
const order = async (specs: TestSpecification[], cached: Record<string, number> = {}, sizes: Record<string, number> = {}) => {
  const ctx = {
    config: { root: ROOT },
    cache: {
      getFileTestResults: (key: string) => (key in cached ? { duration: cached[key], failed: false } : undefined),
      getFileStats: (key: string) => (key in sizes ? { size: sizes[key] } : undefined),
    },
  };
  return (await new LongestFirst(ctx as never).sort(specs)).map((s) => `${s.project.name}:${s.moduleId.slice(ROOT.length + 1)}`);
};

describe('test file order', () => {
  it('a fresh clone (no cache): the recorded longest first, then the unrecorded by size, largest first', async () => {
    const files = [spec('test/unit/a.test.ts'), spec('test/integration/restore.test.ts'), spec('test/unit/b.test.ts'), spec('test/integration/shadow.test.ts')];
    expect(RECORDED_SECONDS['test/integration/shadow.test.ts']).toBeGreaterThan(RECORDED_SECONDS['test/integration/restore.test.ts']);
    expect(await order(files, {}, { 'side-by-side:test/unit/a.test.ts': 100, 'side-by-side:test/unit/b.test.ts': 900 })).toEqual([
      'side-by-side:test/integration/shadow.test.ts',
      'side-by-side:test/integration/restore.test.ts',
      'side-by-side:test/unit/b.test.ts',
      'side-by-side:test/unit/a.test.ts',
    ]);
  });

  it("vitest's cached durations (ms) come before the recorded ones", async () => {
    const files = [spec('test/integration/shadow.test.ts'), spec('test/unit/a.test.ts')];
    expect(await order(files, { 'side-by-side:test/unit/a.test.ts': 500_000, 'side-by-side:test/integration/shadow.test.ts': 1_000 })).toEqual([
      'side-by-side:test/unit/a.test.ts',
      'side-by-side:test/integration/shadow.test.ts',
    ]);
  });

  it('the group order and the project come first: a long later-group file still runs after the earlier group', async () => {
    const files = [spec('test/integration/outages.test.ts', 'alone', 1), spec('test/unit/a.test.ts'), spec('test/integration/probe.test.ts', 'solo', 2)];
    expect(await order(files, { 'alone:test/integration/outages.test.ts': 80_000 })).toEqual([
      'side-by-side:test/unit/a.test.ts',
      'alone:test/integration/outages.test.ts',
      'solo:test/integration/probe.test.ts',
    ]);
  });
});
