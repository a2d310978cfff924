// The README's first example, run as written: its `npm run inject -- …` line (read from README.md,
// not copied here) loads the sample corpus into the test inbox, the pipeline applies it, and the
// outcome is what the README tells a newcomer to expect — every message terminal, no FLOP skipped
// for want of its flight (the schedules go first, examples/corpus-flights.xml creates the two
// flights the corpus itself lacks), the FLOPs after the FDEL sample skipped because flight 15 is
// deleted by then, and only the corpus's deliberately broken samples DEAD.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { CORPUS_DIR, corpusPresent } from '../support/corpus.ts';
import { testConfig, testEnv } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { inboxProcessed, openServices, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The first `npm run inject -- …` line of README.md's first shell block. */
function readmeInjectLine(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = /```sh\n([\s\S]*?)```/g;
  for (const m of readme.matchAll(block)) {
    const line = m[1].split('\n').find((l) => l.startsWith('npm run inject -- '));
    if (line) return line.replace(/\s+#.*$/, '');
  }
  throw new Error('README.md has no `npm run inject -- …` line in a sh block');
}

let s: TestServices;

describe.runIf(corpusPresent)("README's first example: the sample corpus injected as shown", () => {
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
  });
  afterAll(async () => s?.close());

  it('every message ends terminal; no FLOP is skipped for want of its flight; only the broken samples are DEAD', async () => {
    const line = readmeInjectLine();
    expect(line).toContain('../shared/corpus/unisys-sis/*.sql');
    // The README is read from the repository root, where ../shared is the corpus's parent.
    const cmd = line.replace('../shared/corpus/unisys-sis', CORPUS_DIR);
    const r = spawnSync('bash', ['-c', cmd], { cwd: ROOT, env: { ...process.env, ...testEnv() }, encoding: 'utf8', timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/inserted 173 rows into CMINMSGS/); // 172 samples + the example's ADFT

    await runPipelineUntilSettled(s, testConfig(), new ManualClock('2026-12-01T00:00:00Z'));
    const processed = await inboxProcessed(s.inbox);
    expect(processed.size).toBe(173);
    const counts = await sql<{ state: string; reason: string; n: number }>`
      select state, case when state = 'SKIPPED' then reason else coalesce(split_part(reason, ':', 1), '') end as reason, count(*)::int as n
        from proc_state group by 1, 2 order by 1, 2`.execute(s.db);
    expect(counts.rows).toEqual([
      { state: 'DEAD', reason: 'MALFORMED', n: 1 }, // ABNR ADD: junk after </MSG>
      { state: 'DEAD', reason: 'PROTOCOL', n: 3 }, // AIRC DNLD and FLTL ADD (RECS wrong), FDIV DDIR="TOO"
      { state: 'SKIPPED', reason: 'no-flight:deleted', n: 25 }, // FLOPs for flight 15 after the FDEL sample
      { state: 'SUCCEEDED', reason: '', n: 144 },
    ]);
    console.log(`README example: ${counts.rows.map((c) => `${c.state}${c.reason ? ` ${c.reason}` : ''} ${c.n}`).join(', ')}`);
  }, 180_000);
});
