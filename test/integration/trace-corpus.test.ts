// The operator view end to end: the third-party corpus through the real pump (the order of
// flight-corpus.test.ts, so every FLOP applies for real: the SCHD DNLD, a hand-written ADFT
// creating the other FLIDs, every FLOP, the FDEL sample last), then the trace and the timeline
// over HTTP from the api process. The pump's own outbox is the yardstick: every msg event a
// message produced must appear in its trace as a flight change with those fields, before -> after.
// Needs the pump to write FLIGHT_CHANGE (sql/migrations/0500_pump_batches.sql); skipped (visibly)
// when ../shared/corpus is absent.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { renumberSeqn } from '../../lib/inject/files.ts';
import { CORPUS_ADFT_FIXTURE, corpusPresent, flightCorpus } from '../support/corpus.ts';
import { testConfig } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';

let s: TestServices;
let api: Proc;
let seqn = 800_000;
const get = async (path: string) => {
  const r = await fetch(`http://127.0.0.1:${api.port}${path}`, { headers: { authorization: 'Bearer test-token' } });
  return { status: r.status, body: (await r.json()) as any };
};

describe.runIf(corpusPresent)('trace and timeline of the corpus through the pump', () => {
  const { schd, flops, fdel } = flightCorpus();
  let fdelId = 0;
  let dnldId = 0;

  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
    const inject = async (xml: string) => putInbox(s.inbox, renumberSeqn(xml, seqn++));
    dnldId = await inject(schd[0].xml);
    await inject(CORPUS_ADFT_FIXTURE);
    for (const m of flops) await inject(m.xml);
    fdelId = await inject(fdel[0].xml);
    await runPipelineUntilSettled(s, testConfig(), new ManualClock('2026-12-01T00:00:00Z'));
    api = startWorker('api');
    await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${api.port}/healthz`)).ok);
  });
  afterAll(async () => {
    await stopAll(api ? [api] : []);
    await s?.close();
  });

  it('every message has a trace; each names the flights and fields its outbox events say it changed', async () => {
    const rows = await procRows(s.db);
    expect(rows.length).toBe(2 + flops.length + 1);
    const events = await sql<{ flid: string; state_version: number; payload: Record<string, any> }>`
      select flid, state_version, payload from msg_event where target = 'msg' order by event_id`.execute(s.db);
    let withFlights = 0;
    for (const r of rows) {
      const { status, body: t } = await get(`/ops/messages/${r.msg_id}`);
      expect(status, `message ${r.msg_id}`).toBe(200);
      expect(t.state.state).toBe(r.state);
      const mine = events.rows.filter((e) => e.payload.MSG_ID === r.msg_id);
      expect(t.flights.map((f: any) => `${f.flid}v${f.stateVersion}`).sort(), `flights of message ${r.msg_id} (${r.kind})`).toEqual(mine.map((e) => `${e.flid}v${e.state_version}`).sort());
      for (const e of mine) {
        const f = t.flights.find((x: any) => x.flid === e.flid && x.stateVersion === e.state_version);
        expect(f.changes.length, `fields of ${e.flid}v${e.state_version}`).toBeGreaterThan(0);
        if (!e.payload.DELETED) expect(f.changes.map((c: any) => c.key)).toEqual(expect.arrayContaining(e.payload.CHANGED));
        expect(t.events.some((x: any) => x.target === 'msg' && x.flid === e.flid && x.stateVersion === e.state_version)).toBe(true);
      }
      if (t.flights.length) withFlights++;
    }
    // every message that produced an event names its flights (a FLOP repeating values changes nothing and has none)
    expect(withFlights).toBe(new Set(events.rows.map((e) => e.payload.MSG_ID)).size);
    expect(withFlights).toBeGreaterThan(flops.length / 2);
    const dnld = (await get(`/ops/messages/${dnldId}`)).body;
    const f16 = dnld.flights.find((f: any) => f.flid === '16');
    expect(f16).toMatchObject({ stateVersion: 1, op: 'CREATE', kind: 'SCHD/DNLD' });
    expect(f16.changes).toEqual(expect.arrayContaining([{ key: 'FLNO', before: null, after: 'YG9061' }]));
  });

  it("the FDEL sample's trace shows the delete and its tombstone event", async () => {
    const t = (await get(`/ops/messages/${fdelId}`)).body;
    expect(t.flights).toEqual([expect.objectContaining({ flid: '15', op: 'DELETE', kind: 'FLOP/FDEL' })]);
    expect(t.events).toEqual([expect.objectContaining({ target: 'msg', flid: '15', tombstone: true, stateVersion: t.flights[0].stateVersion })]);
  });

  it('the timelines of 16 and 15: every version in order with its message, the delete last', async () => {
    const t16 = (await get('/flights/16/timeline')).body;
    expect(t16.versions.map((v: any) => v.stateVersion)).toEqual(Array.from({ length: t16.current.stateVersion }, (_, i) => i + 1));
    expect(t16.versions.every((v: any) => v.source === 'change' && v.message?.id > 0 && v.changes.length > 0)).toBe(true);
    expect(t16.versions[0]).toMatchObject({ op: 'CREATE', message: { id: dnldId, kind: 'SCHD/DNLD' } });
    const t15 = (await get('/flights/15/timeline')).body;
    expect(t15.status).toBe('DELETED');
    expect(t15.versions.at(-1)).toMatchObject({ op: 'DELETE', message: { id: fdelId, kind: 'FLOP/FDEL' } });
  });
});
