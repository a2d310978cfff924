// The pump reads and decodes the next batch while the current one commits (Pump v3, with its
// decode worker). What it read ahead is never applied ahead: when an operator's replay makes an
// older message the head meanwhile, the next batch starts with that message and the read-ahead
// is discarded; every message ends as it would without the read-ahead, in inbox order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { sql } from 'kysely';
import { ManualClock } from '../../../lib/core/clock.ts';
import { slices } from '../../../lib/core/config.ts';
import { buildDecoder, buildMirror, buildRegistry } from '../../../lib/app/composition.ts';
import type { Mirror } from '../../../lib/domain/handlers.ts';
import { intakeRound } from '../../../lib/pipeline/intake.ts';
import { replayMessages } from '../../../lib/pipeline/operator.ts';
import { drain, pumpSettings, type PumpDeps, withSqlPorts } from '../../../lib/pipeline/pump/loop.ts';
import { bigSnapshot } from '../../support/fixtures.ts';
import { testConfig } from '../../support/env.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, silentLog, sisMessage, type TestServices } from '../../support/services.ts';

let s: TestServices;
const clock = new ManualClock('2026-12-01T00:00:00Z');
const config = testConfig({ 'msgx.pipeline.apply-batch': '2' });
const decoder = buildDecoder(slices(config).pump, slices(config).airport);

beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => {
  await decoder.close();
  await s?.close();
});

const flop = (seqn: number, styp: string, inner: string) => sisMessage({ type: 'FLOP', styp, seqn, body: `<FLOP><FLID>2</FLID><FFID>X</FFID>${inner}</FLOP>` });

describe('read-ahead of the next batch', () => {
  it('a replay that makes an older message the head meanwhile: that message is applied next, the read-ahead discarded; outcomes and order as without it', async () => {
    await resetPipeline(s);
    await resetDomain(s);
    const enqueue = () => intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
    const lines: { msgId: number; state: string }[] = [];
    const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    const real = buildMirror({ db: s.db, redis: s.redis, airport: slices(config).airport });
    let onFirstSync: (() => Promise<unknown>) | null = null;
    const mirror: Mirror = {
      sync: async (flids, known) => {
        const hook = onFirstSync;
        onFirstSync = null;
        await hook?.();
        return real.sync(flids, known);
      },
    };
    const deps = (): PumpDeps => withSqlPorts({ session: s.session, terminalDb: s.db, inbox: s.inbox, registry: buildRegistry(), mirror, clock, ...pumpSettings(config), log, decoder });

    // a snapshot, and X: a FLOP with an empty ACFT (PROTOCOL) → DEAD
    await putInbox(s.inbox, bigSnapshot(3, 1, { seqn: 1 }));
    const x = await putInbox(s.inbox, flop(2, 'ACFT', '<ACFT></ACFT>'));
    await enqueue();
    await drain(deps(), 10_000);
    expect((await procRows(s.db)).find((r) => r.msg_id === x)).toMatchObject({ state: 'DEAD' });

    // six good FLOPs: batches of two; while the first batch is in its mirror step (the next one read
    // ahead), the operator replays X, which becomes the head again
    const ms: number[] = [];
    for (let i = 1; i <= 6; i++) ms.push(await putInbox(s.inbox, flop(10 + i, 'STND', `<STND>S${i}</STND>`)));
    await enqueue();
    clock.set('2026-12-01T01:00:00Z');
    onFirstSync = () => replayMessages(s.db, clock, { ids: [x], force: true });
    lines.length = 0;
    expect(await drain(deps(), 10_000)).toMatchObject({ next: 'idle' });

    // processed in inbox order from the replay on: X (the new head) is applied by the first batch
    // chosen after the replay committed, before the messages read ahead for it. The first batch's
    // mirror step runs while the second batch is chosen (the pump's tail overlaps the next batch),
    // so that is the second batch or the third.
    const order = lines.filter((l) => l.msgId && l.state).map((l) => l.msgId);
    expect([
      [ms[0], ms[1], x, ms[2], ms[3], ms[4], ms[5]],
      [ms[0], ms[1], ms[2], ms[3], x, ms[4], ms[5]],
    ]).toContainEqual(order);
    const rows = new Map((await procRows(s.db)).map((r) => [r.msg_id, r]));
    for (const m of ms) expect(rows.get(m)).toMatchObject({ state: 'SUCCEEDED' });
    expect(rows.get(x)).toMatchObject({ state: 'DEAD', reason: expect.stringMatching(/^PROTOCOL: /) });
    expect(rows.get(x)!.terminal_at).toEqual(new Date('2026-12-01T01:00:00Z')); // applied again, after the replay
    const events = await sql<{ msg: number }>`select (payload->>'MSG_ID')::int as msg from msg_event where flid = '2' and payload->>'TYPE' = 'FLOP' order by event_id`.execute(s.db);
    expect(events.rows.map((r) => r.msg)).toEqual(ms);
    expect(JSON.parse((await s.redis.get('msgx:flight:2'))!)).toMatchObject({ STND: 'S6' });
  }, 60_000);
});
