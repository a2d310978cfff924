// What the Redis heal calls "behind" (lib/watches/redis.ts): a table of what Postgres says
// of a flight and the version Redis holds for it (0: no key).
import { describe, expect, it } from 'vitest';
import { behind, type Expected, runIdOf } from '../../../lib/watches/redis.ts';

const cases: { what: string; pg: Omit<Expected, 'flid'>; redis: number; behind: boolean }[] = [
  { what: 'ACTIVE, same version', pg: { state: 'ACTIVE', version: 4 }, redis: 4, behind: false },
  { what: 'ACTIVE, key missing (flushed, evicted)', pg: { state: 'ACTIVE', version: 4 }, redis: 0, behind: true },
  { what: 'ACTIVE, Redis older (a late write, a replica that missed writes)', pg: { state: 'ACTIVE', version: 4 }, redis: 3, behind: true },
  { what: 'ACTIVE, Redis newer (a restore sign, not healed here)', pg: { state: 'ACTIVE', version: 4 }, redis: 5, behind: false },
  { what: 'DELETED, no key', pg: { state: 'DELETED', version: 6 }, redis: 0, behind: false },
  { what: 'DELETED, an older ACTIVE key left', pg: { state: 'DELETED', version: 6 }, redis: 5, behind: true },
  { what: 'DELETED, a newer key (restore sign)', pg: { state: 'DELETED', version: 6 }, redis: 7, behind: false },
];

describe('behind(): the flights Redis is behind Postgres on', () => {
  for (const c of cases) {
    it(`${c.what} → ${c.behind ? 'behind' : 'not behind'}`, () => {
      expect(behind([{ flid: 'F1', ...c.pg }], [c.redis])).toEqual(c.behind ? ['F1'] : []);
    });
  }

  it('keeps the order of Postgres and names only the flights behind', () => {
    const pg: Expected[] = cases.map((c, i) => ({ flid: `F${i}`, ...c.pg }));
    const expected = cases.flatMap((c, i) => (c.behind ? [`F${i}`] : []));
    expect(
      behind(
        pg,
        cases.map((c) => c.redis),
      ),
    ).toEqual(expected);
  });

  it('a version Redis did not answer for counts as no key', () => {
    expect(behind([{ flid: 'F1', state: 'ACTIVE', version: 1 }], [])).toEqual(['F1']);
  });
});

describe('runIdOf(): the server identity in INFO server', () => {
  it('finds run_id among the other lines', () => {
    expect(runIdOf('# Server\r\nredis_version:7.0.15\r\nrun_id:4f1c0e9d2a\r\ntcp_port:6379\r\n')).toBe('4f1c0e9d2a');
  });
  it('null when absent', () => {
    expect(runIdOf('# Server\r\nredis_version:7.0.15\r\n')).toBeNull();
  });
});
