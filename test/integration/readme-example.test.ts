// The README's first example, run as written: its `npm run inject -- …` lines (read from README.md,
// not copied here) load the inbox, the pipeline applies it, and the outcome is what README and
// docs/getting-started.md tell a newcomer to expect.
// 1. The sample set in the repository (examples/sample/, dated 2099 so that retention keeps it):
//    a schedule of three flights, changes to them, a deletion, a change for a flight nobody knows
//    and a broken time — each message's end state and the flights in Postgres and Redis.
// 2. With the AODB's sample corpus checked out beside the clone: every message terminal, no FLOP
//    skipped for want of its flight (schedules first, examples/corpus-flights.xml creates the two
//    flights the corpus lacks), the FLOPs after the FDEL sample skipped (flight 15 is deleted by
//    then), and only the corpus's deliberately broken samples DEAD.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { flightKey } from '../../lib/flight/mirror.ts';
import { CORPUS_DIR, corpusPresent } from '../support/corpus.ts';
import { testConfig, testEnv } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { inboxProcessed, openServices, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The `npm run inject -- …` lines of README.md's shell blocks, in order, comments removed. */
function readmeInjectLines(): string[] {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const lines: string[] = [];
  for (const m of readme.matchAll(/```sh\n([\s\S]*?)```/g)) {
    for (const l of m[1].split('\n')) if (l.startsWith('npm run inject -- ')) lines.push(l.replace(/\s+#.*$/, ''));
  }
  return lines;
}

/** Runs a README line through bash from the repository root, as a newcomer types it. */
function inject(line: string): string {
  const r = spawnSync('bash', ['-c', line], { cwd: ROOT, env: { ...process.env, ...testEnv() }, encoding: 'utf8', timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

const outcomes = async (s: TestServices) =>
  (
    await sql<{ state: string; reason: string | null; n: number }>`
      select state, case when state = 'SKIPPED' then reason else nullif(split_part(coalesce(reason, ''), ':', 1), '') end as reason, count(*)::int as n
        from proc_state group by 1, 2 order by 1, 2`.execute(s.db)
  ).rows;

let s: TestServices;
beforeAll(async () => {
  s = await openServices();
});
beforeEach(async () => {
  await resetPipeline(s);
  await resetDomain(s);
});
afterAll(async () => s?.close());

describe("README's first example: the repository's sample set", () => {
  it('each message ends as getting-started says; the flights are in Postgres and Redis', async () => {
    const line = readmeInjectLines()[0];
    expect(line).toBe('npm run inject -- --renumber-seqn examples/sample/*.xml');
    expect(inject(line)).toMatch(/inserted 7 rows into CMINMSGS/);

    await runPipelineUntilSettled(s, testConfig(), new ManualClock('2026-12-01T00:00:00Z'));
    expect((await inboxProcessed(s.inbox)).size).toBe(7); // every row marked processed (backfill)
    expect(await outcomes(s)).toEqual([
      { state: 'DEAD', reason: 'PROTOCOL', n: 1 }, // 7-bad-time.xml: ESTT 32DEC99…
      { state: 'SKIPPED', reason: 'no-flight', n: 1 }, // 6-unknown-flight.xml
      { state: 'SUCCEEDED', reason: null, n: 5 },
    ]);
    const dead = await sql<{ reason: string }>`select reason from proc_state where state = 'DEAD'`.execute(s.db);
    expect(dead.rows.map((r) => r.reason)).toEqual(['PROTOCOL: FLOP/ESTT ESTT="32DEC991110" is not a valid date/time']); // as getting-started quotes it
    const flights = await sql<{ flid: string; state: string; state_version: number; operation_day: string }>`
      select flid, state, state_version, to_char(operation_day, 'YYYY-MM-DD') as operation_day from flight_schd order by flid`.execute(s.db);
    expect(flights.rows).toEqual([
      { flid: '990001', state: 'ACTIVE', state_version: 3, operation_day: '2099-12-01' }, // created, gate, stand
      { flid: '990002', state: 'ACTIVE', state_version: 2, operation_day: '2099-12-01' }, // created, estimate
      { flid: '990003', state: 'DELETED', state_version: 2, operation_day: '2099-12-01' }, // created, deleted
    ]);
    const redis = JSON.parse((await s.redis.get(flightKey('990001')))!);
    expect(redis).toMatchObject({ FLID: '990001', STATE_VERSION: 3, STND: '121' });
    expect(await s.redis.exists(flightKey('990003'))).toBe(0);
    const gate = await sql<{ payload: { OP: string; TYPE: string; STYP: string; CHANGED: string[] } }>`
      select payload from msg_event where target = 'msg' and flid = '990001' and state_version = 2`.execute(s.db);
    expect(gate.rows[0].payload).toMatchObject({ OP: 'UPSERT', TYPE: 'FLOP', STYP: 'GTDT' }); // getting-started follows this one
    expect(gate.rows[0].payload.CHANGED).toContain('GTDT');
    const events = await sql<{ target: string; n: number }>`select target, count(*)::int as n from msg_event group by 1 order by 1`.execute(s.db);
    expect(events.rows).toEqual([
      { target: 'msg', n: 7 }, // one per version: 3 creates, gate, estimate, stand, delete
      { target: 'schd', n: 2 }, // the two ACTIVE flights' latest states
      { target: 'state', n: 3 }, // the latest state of each flight (a tombstone for 990003)
    ]);
  }, 180_000);
});

describe.runIf(corpusPresent)("README's corpus example: the AODB's sample corpus beside the clone", () => {
  it('every message ends terminal; no FLOP is skipped for want of its flight; only the broken samples are DEAD', async () => {
    const line = readmeInjectLines().find((l) => l.includes('../shared/corpus/unisys-sis/*.sql'));
    expect(line).toBeDefined();
    // The README is read from the repository root, where ../shared is the corpus's parent.
    expect(inject(line!.replace('../shared/corpus/unisys-sis', CORPUS_DIR))).toMatch(/inserted 173 rows into CMINMSGS/); // 172 samples + the ADFT

    await runPipelineUntilSettled(s, testConfig(), new ManualClock('2026-12-01T00:00:00Z'));
    expect((await inboxProcessed(s.inbox)).size).toBe(173);
    expect(await outcomes(s)).toEqual([
      { state: 'DEAD', reason: 'MALFORMED', n: 1 }, // ABNR ADD: junk after </MSG>
      { state: 'DEAD', reason: 'PROTOCOL', n: 3 }, // AIRC DNLD and FLTL ADD (RECS wrong), FDIV DDIR="TOO"
      { state: 'SKIPPED', reason: 'no-flight:deleted', n: 25 }, // FLOPs for flight 15 after the FDEL sample
      { state: 'SUCCEEDED', reason: null, n: 144 },
    ]);
  }, 180_000);
});
