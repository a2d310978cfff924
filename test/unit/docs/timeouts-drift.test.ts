// Drift: the runbook's "The queue is stuck" names the limits a pump statement runs under — the
// statement timeout, the lock wait on the pump's own session (lib/core/tuning.ts PUMP, set by
// workers/pump.ts) and on its pool (RUNTIME.postgresSession, every pooled session) — as the code
// sets them. Also run on a planted drift (the "20 s" a reader once took for the pool's 60 s).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PUMP, RUNTIME } from '../../../lib/core/tuning.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const ops = readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
const seconds = (s: string) => Number(/^(\d+)s$/.exec(s)?.[1]);

/** The INFRA line of "The queue is stuck", and what it must say. */
function drift(md: string): string[] {
  const line = /`FAILED` with `INFRA: …`\*\*:[\s\S]*?\n- \*\*/.exec(md)?.[0].replace(/\s+/g, ' ') ?? '';
  const want = [
    `ran past ${seconds(PUMP.statementTimeout)} s`,
    `waited for a lock past ${seconds(PUMP.lockTimeout)} s (the pump's session; ${RUNTIME.postgresSession.lockTimeoutMs / 1000} s on its pool)`,
  ];
  return want.filter((w) => !line.includes(w)).map((w) => `docs/operations.md "The queue is stuck": expected "${w}"`);
}

describe('the runbook states the pump statement limits the code sets', () => {
  it('statement timeout and lock waits as in lib/core/tuning.ts', () => {
    expect(PUMP.statementTimeout).toBe(`${RUNTIME.postgresSession.statementTimeoutMs / 1000}s`);
    expect(drift(ops)).toEqual([]);
  });

  it('a planted drift is reported', () => {
    expect(drift(ops.replace('waited for a lock past 20 s', 'waited for a lock past 60 s'))).toEqual([
      'docs/operations.md "The queue is stuck": expected "waited for a lock past 20 s (the pump\'s session; 60 s on its pool)"',
    ]);
  });
});
