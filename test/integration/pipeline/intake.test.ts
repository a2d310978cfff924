// Intake against real MariaDB and Postgres: predicate, idempotence, watermark + full scan, ID gaps, outages.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/core/clock.ts';
import { intakeLoop, intakeRound, type IntakeDeps } from '../../../lib/pipeline/intake.ts';
import { metrics } from '../../../lib/runtime/metrics.ts';
import { enqueue } from '../../../lib/sql/transitions.ts';
import { testConfig } from '../../support/env.ts';
import { deadInbox, openServices, procRows, putInbox, resetPipeline, silentLog, sisMessage, type TestServices } from '../../support/services.ts';
import { slices } from '../../../lib/core/config.ts';

let s: TestServices;
const clock = new ManualClock('2026-12-01T00:00:00Z');
const config = testConfig({ 'msgx.pipeline.claim-batch': '3', 'msgx.intake.gap-settle': '2s', 'msgx.intake.full-scan-every': '10m' });
const deps = (over: Partial<IntakeDeps> = {}): IntakeDeps => ({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog, ...over });
const enqueued = async () => (await procRows(s.db)).map((r) => r.msg_id);
const counter = async (c: { get(): Promise<{ values: { value: number }[] }> }) => (await c.get()).values[0]?.value ?? 0;

beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => s.close());
beforeEach(async () => {
  await resetPipeline(s);
  clock.set('2026-12-01T00:00:00Z');
});

describe('intake', () => {
  it('enqueues only rows whose processing time is NULL, in ID order, batch by batch, and wakes the pump', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 1 });
    await putInbox(s.inbox, sisMessage(), { id: 2, processed: '2026-11-30 10:00:00' });
    for (const id of [3, 4, 5, 6]) await putInbox(s.inbox, sisMessage(), { id });
    const r1 = await intakeRound(deps());
    expect(r1.enqueued).toEqual([1, 3, 4]);
    const r2 = await intakeRound(deps());
    expect(r2.enqueued).toEqual([5, 6]);
    expect(await enqueued()).toEqual([1, 3, 4, 5, 6]);
    const rows = await procRows(s.db);
    expect(rows.every((r) => r.state === 'PENDING' && r.enqueued_at !== null)).toBe(true);
    const pumpJobs = await s.pool.query(`select count(*)::int n from graphile_worker.jobs where task_identifier = 'pump'`);
    expect(pumpJobs.rows[0].n).toBe(1);
  });

  it('is idempotent: a second round and a full scan enqueue nothing new', async () => {
    for (const id of [1, 2]) await putInbox(s.inbox, sisMessage(), { id });
    await intakeRound(deps());
    const again = await intakeRound(deps());
    expect(again.enqueued).toEqual([]);
    clock.advance(11 * 60_000);
    const scan = await intakeRound(deps());
    expect(scan.enqueued).toEqual([]);
    expect(scan.scanned).toBeGreaterThan(0); // terminal-but-not-backfilled rows keep showing up
    expect(await enqueued()).toEqual([1, 2]);
  });

  it('finds a row below the watermark with the periodic full scan, late and counted', async () => {
    for (const id of [1, 2, 3]) await putInbox(s.inbox, sisMessage(), { id });
    await intakeRound(deps());
    expect(await enqueued()).toEqual([1, 2, 3]);
    await s.db.deleteFrom('proc_state').where('msg_id', '=', 2).execute(); // e.g. a restored Postgres: 2 is unknown again
    const late0 = await counter(metrics.intakeLateRows);
    expect((await intakeRound(deps())).enqueued).toEqual([]); // the watermark scan cannot see it
    clock.advance(10 * 60_000);
    const r = await intakeRound(deps()); // the full scan starts below the lowest unterminated message (1)
    expect(r.enqueued).toEqual([2]);
    expect(r.late).toEqual([2]);
    expect(await counter(metrics.intakeLateRows)).toBe(late0 + 1);
  });

  it('an ID gap that fills within gap-settle keeps inbox order', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 1 });
    await putInbox(s.inbox, sisMessage(), { id: 3 });
    const r1 = await intakeRound(deps());
    expect(r1.enqueued).toEqual([1]);
    expect(r1.waitingOnGap).toBe(2);
    clock.advance(1000);
    expect((await intakeRound(deps())).enqueued).toEqual([]);
    await putInbox(s.inbox, sisMessage(), { id: 2 }); // the slow insert commits
    clock.advance(500);
    expect((await intakeRound(deps())).enqueued).toEqual([2, 3]);
  });

  it('an ID gap that never fills is passed after gap-settle and counted', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 1 });
    await putInbox(s.inbox, sisMessage(), { id: 3 });
    await intakeRound(deps());
    const passed0 = await counter(metrics.intakeGapsPassed);
    clock.advance(2000);
    expect((await intakeRound(deps())).enqueued).toEqual([3]);
    expect(await counter(metrics.intakeGapsPassed)).toBe(passed0 + 1);
  });

  it('holes that are processed rows are not gaps', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 1 });
    await putInbox(s.inbox, sisMessage(), { id: 2, processed: '2026-11-30 10:00:00' });
    await putInbox(s.inbox, sisMessage(), { id: 3 });
    expect((await intakeRound(deps())).enqueued).toEqual([1, 3]);
  });

  it('a watermark that moved during the round (Postgres restored under it) is kept: the round fails and saves nothing', async () => {
    for (const id of [1, 2, 3, 4]) await putInbox(s.inbox, sisMessage(), { id });
    await intakeRound(deps());
    const before = await enqueued();
    expect(before).toEqual([1, 2, 3]);
    // the restore lands while the round reads the inbox: the cursor goes back to 1, proc_state keeps 1 only
    const restoring: IntakeDeps['inbox'] = Object.create(s.inbox, {
      query: {
        value: async (...args: unknown[]) => {
          await s.pool.query('update intake_cursor set watermark = 1 where id = 1');
          await s.pool.query('delete from proc_state where msg_id > 1');
          return (s.inbox.query as (...a: unknown[]) => unknown).apply(s.inbox, args);
        },
      },
    });
    await expect(intakeRound(deps({ inbox: restoring }))).rejects.toThrow(
      /intake_cursor's watermark is no longer 3 \(Postgres restored from a backup during the round\?\); nothing of this round was kept/,
    );
    expect((await s.pool.query('select watermark::int w from intake_cursor')).rows[0].w).toBe(1);
    expect(await enqueued()).toEqual([1]); // row 4 of the failed round was not enqueued either
  });

  it('an unreachable inbox is an error, logged and retried — never "no new messages"; nothing is marked', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 1 });
    const down = deadInbox();
    try {
      await expect(intakeRound(deps({ inbox: down }))).rejects.toThrow();
      const errors0 = await counter(metrics.intakeErrors);
      await intakeLoop(
        deps({ inbox: down }),
        300,
        () => false,
        (ms) => new Promise((r) => setTimeout(r, ms)),
      );
      expect(await counter(metrics.intakeErrors)).toBeGreaterThan(errors0);
    } finally {
      await down.end().catch(() => {});
    }
    expect(await enqueued()).toEqual([]);
    const cursor = await s.db.selectFrom('intake_cursor').selectAll().executeTakeFirstOrThrow();
    expect(cursor.watermark).toBe(0);
    expect((await intakeRound(deps())).enqueued).toEqual([1]);
  });
});

describe('intake gaps and the full scan', () => {
  it('each gap has its own settle time: passing an old gap never passes a new one', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 1 });
    await putInbox(s.inbox, sisMessage(), { id: 3 }); // gap 2, first seen now
    expect((await intakeRound(deps())).enqueued).toEqual([1]);
    clock.advance(3000); // gap 2 has settled …
    await putInbox(s.inbox, sisMessage(), { id: 5 }); // … gap 4 is new
    const r = await intakeRound(deps());
    expect(r.enqueued).toEqual([3]); // past 2, not past 4
    expect(r.waitingOnGap).toBe(4);
    clock.advance(1000);
    await putInbox(s.inbox, sisMessage(), { id: 4 }); // the slow insert commits within its own settle time
    expect((await intakeRound(deps())).enqueued).toEqual([4, 5]); // in inbox order
  });

  it('a row committed late into a passed gap is enqueued by the next round, not the next full scan', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 1 });
    await putInbox(s.inbox, sisMessage(), { id: 3 });
    await intakeRound(deps());
    clock.advance(3000);
    expect((await intakeRound(deps())).enqueued).toEqual([3]); // gap 2 passed
    await putInbox(s.inbox, sisMessage(), { id: 2 });
    clock.advance(1000); // far from full-scan-every
    const r = await intakeRound(deps());
    expect(r.enqueued).toEqual([2]);
    expect(r.late).toEqual([2]);
  });

  it('the full scan starts at the lowest unterminated ID, not at 0, and skips empty ID spans: done in a few rounds at a 50 M watermark', async () => {
    // the state of a long-running gateway: watermark 50,000,000, the head (PENDING) at 49,999,000
    await s.db.transaction().execute((tx) => enqueue(tx, [{ id: 49_999_000, received: null }], clock.now()));
    await putInbox(s.inbox, sisMessage(), { id: 49_999_000 });
    await s.db.updateTable('intake_cursor').set({ watermark: 50_000_000, full_scan_at: clock.now() }).execute();
    await putInbox(s.inbox, sisMessage(), { id: 49_999_500 }); // below the watermark, never enqueued
    clock.advance(11 * 60_000);
    let found: number[] = [];
    for (let round = 0; round < 5 && found.length === 0; round++) found = (await intakeRound(deps())).enqueued;
    expect(found).toEqual([49_999_500]);
    const cursor = await s.db.selectFrom('intake_cursor').selectAll().executeTakeFirstOrThrow();
    expect(cursor.full_scan_from).toBeNull(); // the scan is complete
  });

  it('does not spin without a pause while a gap blocks a full batch', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 1 });
    for (const id of [3, 4, 5]) await putInbox(s.inbox, sisMessage(), { id }); // a full batch (3) behind gap 2
    const slow = testConfig({ 'msgx.pipeline.claim-batch': '3', 'msgx.intake.gap-settle': '1h', 'msgx.pipeline.idle-poll': '100ms' });
    const scanned0 = await counter(metrics.intakeScannedRows);
    await intakeLoop(
      deps({ intake: slices(slow).intake, clock: { now: () => new Date() } as never }),
      1000,
      () => false,
      (ms) => new Promise((r) => setTimeout(r, ms)),
    );
    const rounds = (await counter(metrics.intakeScannedRows)) - scanned0;
    expect(await enqueued()).toEqual([1]);
    expect(rounds).toBeLessThanOrEqual(3 * 12 + 1); // about one round per idle-poll, not hundreds
  });
});

describe('intake of a read-only (shadow) installation', () => {
  const shadowConfig = testConfig({ 'msgx.pipeline.claim-batch': '3', 'msgx.intake.gap-settle': '2s', 'msgx.intake.full-scan-every': '10m', 'msgx.inbox.read-only': 'true' });
  const shadowDeps = () => deps({ intake: slices(shadowConfig).intake });
  const shadowRow = async () => (await s.pool.query('select started_after::int as started, lost from shadow_intake')).rows[0];

  it('takes every row by ID, processed by another installation or not, with the same gap handling', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 5, processed: '2026-11-30 10:00:00' });
    await putInbox(s.inbox, sisMessage(), { id: 6 });
    await putInbox(s.inbox, sisMessage(), { id: 8, processed: '2026-11-30 10:00:00' });
    const r1 = await intakeRound(shadowDeps());
    expect(r1.enqueued).toEqual([5, 6]); // started just below the oldest retained row; 7 is a gap that has not settled
    expect(r1.waitingOnGap).toBe(7);
    expect(await shadowRow()).toEqual({ started: 4, lost: [] });
    clock.advance(2_000);
    expect((await intakeRound(shadowDeps())).enqueued).toEqual([8]);
    // 7 commits late (and the other installation has processed it already): the passed-gap recheck takes it
    await putInbox(s.inbox, sisMessage(), { id: 7, processed: '2026-11-30 10:00:00' });
    const late = await intakeRound(shadowDeps());
    expect(late.enqueued).toEqual([7]);
    expect(late.late).toEqual([7]);
    expect(await enqueued()).toEqual([5, 6, 7, 8]);
  });

  it('starts after msgx.inbox.start-after; rows retention deleted before it read them are recorded and reported', async () => {
    await putInbox(s.inbox, sisMessage(), { id: 1 }); // never marked (a DEAD message): retention keeps it
    for (const id of [2, 3, 4, 5, 6]) await putInbox(s.inbox, sisMessage(), { id, processed: '2026-11-30 10:00:00' });
    const from3 = slices(testConfig({ 'msgx.pipeline.claim-batch': '3', 'msgx.intake.gap-settle': '2s', 'msgx.inbox.read-only': 'true', 'msgx.inbox.start-after': '2' })).intake;
    expect((await intakeRound(deps({ intake: from3 }))).enqueued).toEqual([3, 4, 5]);
    expect((await shadowRow()).started).toBe(2);
    // the shadow is down; retention (on the live installation) deletes the marked rows up to 8 while 7..10 arrive
    for (const id of [7, 8, 9, 10]) await putInbox(s.inbox, sisMessage(), { id, processed: '2026-11-30 10:00:00' });
    await s.inbox.query('DELETE FROM cminmsgs WHERE CMINMSGS_ID <= 8 AND CMINMSGS_DATE_PROCESSED IS NOT NULL');
    const r = await intakeRound(deps({ intake: from3 }));
    expect(r.enqueued).toEqual([]);
    expect(r.waitingOnGap).toBe(6); // a gap like any other: it waits gap-settle first
    clock.advance(2_000);
    expect((await intakeRound(deps({ intake: from3 }))).enqueued).toEqual([9, 10]);
    const row = await shadowRow();
    expect(row.lost.map((g: { lo: number; hi: number }) => [g.lo, g.hi])).toEqual([[6, 8]]);
    const { healthNotes } = await import('../../../lib/runtime/conditions.ts');
    expect(healthNotes().shadow).toEqual({ startedAfter: 2, lostToRetention: { count: 3, ranges: ['6-8'] } });
  });
});
