// All 172 corpus messages, injected with renumbered SEQNs, end terminal and backfilled.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../lib/core/clock.ts';
import { renumberSeqn } from '../../lib/inject/files.ts';
import { corpusMessages, corpusPresent } from '../support/corpus.ts';
import { testConfig } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { inboxProcessed, openServices, putInbox, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';

let s: TestServices;

describe.runIf(corpusPresent)('corpus through the pipeline', () => {
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
  });
  afterAll(async () => s?.close());

  it('every message ends terminal and backfilled; counts by state and reason', async () => {
    const msgs = corpusMessages();
    expect(msgs.length).toBe(172);
    let seqn = 500_000;
    for (const m of msgs) await putInbox(s.inbox, renumberSeqn(m.xml, seqn++));
    await runPipelineUntilSettled(s, testConfig(), new ManualClock('2026-12-01T00:00:00Z'));

    const processed = await inboxProcessed(s.inbox);
    expect(processed.size).toBe(172);
    expect([...processed.values()].filter((v) => v === null)).toEqual([]);
    const rows = await s.db.selectFrom('proc_state').selectAll().execute();
    expect(rows.every((r) => r.backfill_at !== null)).toBe(true);

    const counts = await sql<{ state: string; reason: string; n: number }>`
      select state, coalesce(split_part(reason, ':', 1), '') as reason, count(*)::int as n
        from proc_state group by 1, 2 order by 1, 2`.execute(s.db);
    expect(counts.rows).toEqual(EXPECTED_COUNTS);
    const malformed = rows.filter((r) => r.reason?.startsWith('MALFORMED'));
    expect(malformed.map((r) => r.reason)).toEqual([expect.stringMatching(/^MALFORMED: not well-formed XML/)]);
    const protocol = rows
      .filter((r) => r.reason?.startsWith('PROTOCOL'))
      .map((r) => r.kind)
      .sort();
    expect(protocol).toEqual(['AIRC/DNLD', 'FLOP/FDIV', 'FLTL/ADD']);
  });
});

/**
 * Outcome counts with the handlers registered in lib/app/composition.ts, files injected in
 * name order (so most FLOPs come before the SCHD that creates flights 15 and 16):
 * - DEAD MALFORMED 1: ABNR ADD (junk after </MSG>);
 * - DEAD PROTOCOL 3: AIRC DNLD and FLTL ADD (RECS wrong), FDIV DDIR="TOO";
 * - SKIPPED no-flight 60: FLOPs whose FLID no message created;
 * - SUCCEEDED 108: 95 reference + 2 SCHS + 1 SCHD + 10 FLOPs on flights that exist by then.
 * test/integration/flight-corpus.test.ts injects in the order that applies every FLOP for real.
 */
const EXPECTED_COUNTS = [
  { state: 'DEAD', reason: 'MALFORMED', n: 1 },
  { state: 'DEAD', reason: 'PROTOCOL', n: 3 },
  { state: 'SKIPPED', reason: 'no-flight', n: 60 },
  { state: 'SUCCEEDED', reason: '', n: 108 },
];
