// What a handler names in its `counts` (lib/runtime/labels.ts) is counted by the pump once the
// business transaction committed, once per message: a FLOP with six ROUT points keeps four and
// adds two to msgx_flight_route_points_dropped_total, through the whole pipeline as the pump runs it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../lib/core/clock.ts';
import { metrics } from '../../lib/runtime/metrics.ts';
import { fltr } from '../support/fixtures.ts';
import { testConfig } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';

let s: TestServices;
beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
  await resetDomain(s);
});
afterAll(async () => s?.close());

const dropped = async () => ((await metrics.routePointsDropped.get()).values ?? []).reduce((n, v) => n + v.value, 0);

it('route points beyond the four kept are counted once, after the commit', async () => {
  const before = await dropped();
  const route = Array.from({ length: 6 }, (_, i) => `<ROUT RTNO="${i + 1}"><APCD>A${i}</APCD></ROUT>`).join('');
  await putInbox(s.inbox, sisMessage({ type: 'SCHD', styp: 'ADFT', seqn: 920_001, body: `<SCHD><RECS>1</RECS>${fltr(9301)}</SCHD>` }));
  await putInbox(s.inbox, sisMessage({ type: 'FLOP', styp: 'ROUT', seqn: 920_002, body: `<FLOP><FLID>9301</FLID><FFID>CA-9301</FFID>${route}</FLOP>` }));
  await runPipelineUntilSettled(s, testConfig(), new ManualClock('2026-12-01T00:00:00Z'));

  expect((await procRows(s.db)).map((r) => [r.kind, r.state])).toEqual([
    ['SCHD/ADFT', 'SUCCEEDED'],
    ['FLOP/ROUT', 'SUCCEEDED'],
  ]);
  const kept = await sql<{ n: number }>`select count(*)::int n from flight_route_point where flid = '9301'`.execute(s.db);
  expect(kept.rows[0].n).toBe(4);
  expect(await dropped()).toBe(before + 2);
});
