// The per-message budget (msgx.pipeline.message-budget), through the inbox and the real pump
// process: a message whose XML takes far longer to parse than its budget — written straight
// into the inbox as the AODB would, between two good messages of the same batch — ends DEAD
// (MALFORMED, the reason names the budget); the pump ends its decode worker, decodes the rest of
// the batch in a new one, and the good messages are applied in inbox order. The pump's /healthz
// keeps answering meanwhile (the parse never runs on its event loop).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { ManualClock } from '../../../lib/core/clock.ts';
import { slices } from '../../../lib/core/config.ts';
import { intakeRound } from '../../../lib/pipeline/intake.ts';
import { bigSnapshot } from '../../support/fixtures.ts';
import { testConfig } from '../../support/env.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../../support/processes.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, silentLog, sisMessage, type TestServices } from '../../support/services.ts';

const BUDGET = '150ms';
const config = testConfig();
let s: TestServices;
const procs: Proc[] = [];

beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => {
  await stopAll(procs);
  await s?.close();
});

const flop = (seqn: number, stnd: string) => sisMessage({ type: 'FLOP', styp: 'STND', seqn, body: `<FLOP><FLID>1</FLID><FFID>X</FFID><STND>${stnd}</STND></FLOP>` });

/**
 * Well-formed and 14 MB (the inbox column holds 16 MB): the processing instruction full of '<!--'
 * that once stalled the pump, and 3.5 million empty elements — 0.4–0.6 s of parsing in the decode
 * worker on this machine kind, 3–4 × the 150 ms budget. (At a million elements the parse took
 * 130–270 ms: one-pass tree building and the worker's 16 MB young generation made it that fast.)
 */
const hostile = sisMessage({
  type: 'FLOP',
  styp: 'STND',
  seqn: 7,
  body: `<FLOP><FLID>1</FLID><FFID>X</FFID><STND>BAD</STND></FLOP><TEST>1</TEST><?pi ${'<!--'.repeat(70_000)}?>${'<b/>'.repeat(3_500_000)}`,
});

describe('a message over its budget', () => {
  it('ends DEAD(MALFORMED) naming the budget; the good messages around it are applied in order; /healthz answers throughout', async () => {
    await resetPipeline(s);
    await resetDomain(s);
    const ids = {
      snapshot: await putInbox(s.inbox, bigSnapshot(3, 1, { seqn: 1 })),
      before: await putInbox(s.inbox, flop(5, 'S-BEFORE')),
      hostile: await putInbox(s.inbox, hostile),
      after: await putInbox(s.inbox, flop(9, 'S-AFTER')),
    };
    await intakeRound({ db: s.db, inbox: s.inbox, clock: new ManualClock(), intake: slices(config).intake, log: silentLog });

    const pump = startWorker('pump', { MSGX_PIPELINE_MESSAGE_BUDGET: BUDGET });
    procs.push(pump);
    // /healthz of the pump process, polled while it works
    const answers: { status: number; ms: number }[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const t0 = performance.now();
        try {
          const res = await fetch(`http://127.0.0.1:${pump.port}/healthz`, { signal: AbortSignal.timeout(10_000) });
          await res.arrayBuffer();
          answers.push({ status: res.status, ms: performance.now() - t0 });
        } catch {
          // not listening yet
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await waitFor(
      'every message terminal',
      async () => (await sql<{ n: number }>`select count(*)::int as n from proc_state where state in ('PENDING', 'FAILED')`.execute(s.db)).rows[0].n === 0,
      60_000,
    ).catch((e) => {
      console.error(pump.logs.slice(-20).join('\n'));
      throw e;
    });
    polling = false;
    await poller;
    await stopAll([pump]);

    const rows = new Map((await procRows(s.db)).map((r) => [Number(r.msg_id), r]));
    expect(rows.get(ids.snapshot)).toMatchObject({ state: 'SUCCEEDED' });
    expect(rows.get(ids.before)).toMatchObject({ state: 'SUCCEEDED' });
    expect(rows.get(ids.after)).toMatchObject({ state: 'SUCCEEDED' });
    expect(rows.get(ids.hostile)).toMatchObject({ state: 'DEAD' });
    expect(rows.get(ids.hostile)!.reason).toMatch(/^MALFORMED: .*budget of 150 ms \(msgx\.pipeline\.message-budget\)/);
    // in inbox order: flight 1's FLOP events are the good ones', before then after, and it ends with S-AFTER
    const events = await sql<{ msg: number }>`select (payload->>'MSG_ID')::int as msg from msg_event where flid = '1' and payload->>'TYPE' = 'FLOP' order by event_id`.execute(s.db);
    expect(events.rows.map((r) => r.msg)).toEqual([ids.before, ids.after]);
    expect(JSON.parse((await s.redis.get('msgx:flight:1'))!)).toMatchObject({ STND: 'S-AFTER' });
    // the pump answered /healthz all along: once ready (its start-up checks ran), every answer 200, none held for seconds by the parse
    const ready = answers.slice(answers.findIndex((a) => a.status === 200));
    expect(ready.length).toBeGreaterThan(3);
    expect(ready.every((a) => a.status === 200)).toBe(true);
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(2_000);
  }, 120_000);
});
