// Backfill against real MariaDB and Postgres: the four outcomes, R, abandonment, fairness, read-only, replay race.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../../lib/core/clock.ts';
import { backfillRound, type BackfillDeps } from '../../../lib/pipeline/backfill.ts';
import { intakeRound } from '../../../lib/pipeline/intake.ts';
import { replayMessages, resumeBackfills } from '../../../lib/pipeline/operator.ts';
import { LOCKS } from '../../../lib/db/postgres.ts';
import { markTerminal } from '../../../lib/sql/transitions.ts';
import { testConfig } from '../../support/env.ts';
import { deadInbox, inboxProcessed, openServices, procRows, putInbox, resetPipeline, silentLog, sisMessage, type TestServices } from '../../support/services.ts';
import { slices } from '../../../lib/core/config.ts';

let s: TestServices;
const clock = new ManualClock('2026-12-01T00:00:00Z'); // 08:00 in Asia/Shanghai
const config = testConfig({ 'msgx.pipeline.backfill-batch': '2', 'msgx.pipeline.backfill-backoff': '5s,30s', 'msgx.pipeline.overdue-backfill': '24h' });
const deps = (over: Partial<BackfillDeps> = {}): BackfillDeps => ({ db: s.db, inbox: s.inbox, clock, backfill: slices(config).backfill, log: silentLog, ...over });
const row = async (id: number) => (await procRows(s.db)).find((r) => r.msg_id === id)!;

/** n inbox rows, enqueued and made terminal at the clock's now. */
async function terminalRows(n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await putInbox(s.inbox, sisMessage()));
  await intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
  for (const id of ids) await markTerminal(s.db, id, 'SUCCEEDED', null, clock.now(), 'TEST/UPD');
  return ids;
}

beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => s.close());
beforeEach(async () => {
  await resetPipeline(s);
  clock.set('2026-12-01T00:00:00Z');
});

describe('backfill', () => {
  it('written: TERMINAL_AT lands in the inbox as airport local time, BACKFILL_AT set; batches until done', async () => {
    const ids = await terminalRows(3);
    clock.advance(1000);
    expect((await backfillRound(deps())).written).toBe(2);
    expect((await backfillRound(deps())).written).toBe(1);
    const inbox = await inboxProcessed(s.inbox);
    expect(ids.map((id) => inbox.get(id))).toEqual(['2026-12-01 08:00:00', '2026-12-01 08:00:00', '2026-12-01 08:00:00']);
    for (const id of ids) expect((await row(id)).backfill_at).not.toBeNull();
    expect((await backfillRound(deps())).candidates).toBe(0);
  });

  it('already marked: success without overwriting the inbox value', async () => {
    const [id] = await terminalRows(1);
    await s.inbox.query('UPDATE cminmsgs SET CMINMSGS_DATE_PROCESSED = ? WHERE CMINMSGS_ID = ?', ['2026-11-30 01:02:03', id]);
    const r = await backfillRound(deps());
    expect(r).toMatchObject({ written: 0, alreadyMarked: 1 });
    expect((await inboxProcessed(s.inbox)).get(id)).toBe('2026-11-30 01:02:03');
    expect((await row(id)).backfill_at).not.toBeNull();
  });

  it('row missing: abandoned at once (MISSING_ROW), never counted as backfilled; resumable once the row is back', async () => {
    const [a, b] = await terminalRows(2);
    const [[saved]] = (await s.inbox.query('SELECT * FROM cminmsgs WHERE CMINMSGS_ID = ?', [a])) as unknown as [Record<string, unknown>[]];
    await s.inbox.query('DELETE FROM cminmsgs WHERE CMINMSGS_ID = ?', [a]);
    const r = await backfillRound(deps());
    expect(r.missing).toEqual([a]);
    expect(await row(a)).toMatchObject({ backfill_at: null, backfill_abandoned_reason: 'MISSING_ROW' });
    expect((await row(b)).backfill_at).not.toBeNull();
    const resume = { db: s.db, inbox: s.inbox, clock, timeoutMs: 5000 };
    expect(await resumeBackfills(resume, { reason: 'MISSING_ROW' })).toEqual([]); // still missing: left abandoned
    await s.inbox.query('INSERT INTO cminmsgs SET ?', [saved]);
    expect(await resumeBackfills(resume, { reason: 'MISSING_ROW' })).toEqual([a]);
    expect(await row(a)).toMatchObject({ backfill_abandoned_at: null, backfill_attempts: 0 });
  });

  it('a message never applied (DEAD MALFORMED: raw-missing) is never marked in the inbox, even when its row is there', async () => {
    const [id] = await terminalRows(1);
    await s.db.updateTable('proc_state').set({ state: 'DEAD', reason: 'MALFORMED: raw-missing', reason_class: 'RAW_MISSING' }).where('msg_id', '=', id).execute();
    const r = await backfillRound(deps());
    expect(r.missing).toEqual([id]);
    expect((await inboxProcessed(s.inbox)).get(id) ?? null).toBeNull();
    expect(await row(id)).toMatchObject({ backfill_at: null, backfill_abandoned_reason: 'MISSING_ROW' });
  });

  it('transient failure backs off; inside R the backoff is honoured, past R every round retries and a failure abandons (TRANSIENT_DEADLINE)', async () => {
    const [id] = await terminalRows(1);
    const down = deadInbox();
    try {
      expect((await backfillRound(deps({ inbox: down }))).transient).toEqual([id]);
      expect(await row(id)).toMatchObject({ backfill_attempts: 1, backfill_at: null });
      expect((await row(id)).backfill_next_at).toEqual(new Date(clock.now().getTime() + 5000));
      expect((await backfillRound(deps({ inbox: down }))).candidates).toBe(0); // backoff honoured
      clock.advance(5000);
      await backfillRound(deps({ inbox: down }));
      expect((await row(id)).backfill_next_at).toEqual(new Date(clock.now().getTime() + 30_000));
      clock.advance(30_000);
      await backfillRound(deps({ inbox: down }));
      expect((await row(id)).backfill_next_at).toEqual(new Date(clock.now().getTime() + 30_000)); // last step repeats
      clock.set(new Date(Date.parse('2026-12-01T00:00:00Z') + 24 * 3600_000)); // TERMINAL_AT + R
      const r = await backfillRound(deps({ inbox: down }));
      expect(r.abandonedDeadline).toEqual([id]);
      expect(await row(id)).toMatchObject({ backfill_abandoned_reason: 'TRANSIENT_DEADLINE', backfill_at: null });
    } finally {
      await down.end().catch(() => {});
    }
  });

  it('past R the backoff is overridden: the row is retried in every round', async () => {
    const [id] = await terminalRows(1);
    await s.db
      .updateTable('proc_state')
      .set({ backfill_next_at: new Date('2026-12-05T00:00:00Z'), backfill_attempts: 3 })
      .where('msg_id', '=', id)
      .execute();
    expect((await backfillRound(deps())).candidates).toBe(0);
    clock.set('2026-12-02T00:00:01Z');
    expect((await backfillRound(deps())).written).toBe(1);
  });

  it('fairness: a row that keeps failing does not starve the others', async () => {
    const ids = await terminalRows(4);
    await s.db.updateTable('proc_state').set({ backfill_attempts: 7, backfill_next_at: clock.now() }).where('msg_id', '=', ids[0]).execute();
    const r = await backfillRound(deps()); // batch of 2: the fresh rows go first
    expect(r.written).toBe(2);
    expect((await row(ids[1])).backfill_at).not.toBeNull();
    expect((await row(ids[2])).backfill_at).not.toBeNull();
    expect((await row(ids[0])).backfill_at).toBeNull();
  });

  it('read-only mode writes nothing to the inbox and leaves BACKFILL_AT NULL', async () => {
    const [id] = await terminalRows(1);
    const ro = testConfig({ 'msgx.inbox.read-only': 'true' });
    expect((await backfillRound(deps({ backfill: slices(ro).backfill }))).candidates).toBe(0);
    expect((await inboxProcessed(s.inbox)).get(id)).toBeNull();
    expect((await row(id)).backfill_at).toBeNull();
  });

  it('replay keeps IDENTITY_KEY, resets the message, and waits for a running backfill round (lifecycle gate)', async () => {
    const [id] = await terminalRows(1);
    await s.db
      .updateTable('proc_state')
      .set({ identity_key: 'AODB|TEST|UPD|1|20261201', state: 'DEAD', reason: 'EXHAUSTED(INTERNAL): x', reason_class: 'EXHAUSTED' })
      .where('msg_id', '=', id)
      .execute();
    // a backfill round holds the gate …
    const holder = await s.pool.connect();
    await holder.query('begin');
    await holder.query('select pg_advisory_xact_lock($1)', [LOCKS.LIFECYCLE_GATE]);
    let replayed: number[] | undefined;
    const p = replayMessages(s.db, clock, { ids: [id] }).then((r) => (replayed = r));
    await new Promise((r) => setTimeout(r, 300));
    expect(replayed).toBeUndefined(); // … so replay waits
    await holder.query('commit');
    holder.release();
    await p;
    expect(replayed).toEqual([id]);
    expect(await row(id)).toMatchObject({ state: 'PENDING', identity_key: 'AODB|TEST|UPD|1|20261201', attempts: 0, terminal_at: null, backfill_next_at: null });
    // nothing to backfill while it is not terminal again
    expect((await backfillRound(deps())).candidates).toBe(0);
    expect((await inboxProcessed(s.inbox)).get(id)).toBeNull();
  });

  it('replay whitelist: DEAD(MALFORMED|PROTOCOL) only with force', async () => {
    const [a, b] = await terminalRows(2);
    await s.db.updateTable('proc_state').set({ state: 'DEAD', reason: 'PROTOCOL: RECS="2" but 1 record', reason_class: 'PROTOCOL' }).where('msg_id', '=', a).execute();
    await s.db.updateTable('proc_state').set({ state: 'SKIPPED', reason: 'unsupported', reason_class: 'UNSUPPORTED' }).where('msg_id', '=', b).execute();
    expect(await replayMessages(s.db, clock, { ids: [a, b] })).toEqual([]);
    expect(await replayMessages(s.db, clock, { ids: [a, b], force: true })).toEqual([a]);
    const jobs = await sql<{ n: number }>`select count(*)::int n from graphile_worker.jobs where task_identifier = 'pump'`.execute(s.db);
    expect(jobs.rows[0].n).toBe(1);
  });
});
