// The operator CLIs as an operator runs them (`node scripts/replay.ts …`, the npm script's command):
// selections by --state/--reason/--force, why untouched messages were left, exit codes.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { ManualClock } from '../../lib/core/clock.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { testConfig, testEnv } from '../support/env.ts';
import { openServices, procRows, putInbox, resetPipeline, silentLog, sisMessage, type TestServices } from '../support/services.ts';
import { slices } from '../../lib/core/config.ts';

let s: TestServices;
const clock = new ManualClock('2026-12-01T00:00:00Z');
const config = testConfig();

function cli(script: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`scripts/${script}.ts`, ...args], { env: { ...process.env, ...testEnv() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (err += b));
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

/** n inbox rows enqueued, then given this state/reason directly. */
async function rows(n: number, set: Record<string, unknown>): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await putInbox(s.inbox, sisMessage()));
  await intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
  await s.db.updateTable('proc_state').set(set).where('msg_id', 'in', ids).execute();
  return ids;
}
const stateOf = async (id: number) => (await procRows(s.db)).find((r) => r.msg_id === id)!.state;

beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => s.close());
beforeEach(async () => resetPipeline(s));

describe('npm run replay', () => {
  it('--state DEAD --reason PROTOCOL --force replays every such message', async () => {
    const ids = await rows(3, { state: 'DEAD', reason: 'PROTOCOL: RECS="2" but 1 record', terminal_at: clock.now() });
    const r = await cli('replay', ['--state', 'DEAD', '--reason', 'PROTOCOL', '--force']);
    expect(r.out).toContain(`replayed 3 message(s): ${ids.join(' ')}`);
    expect(r.code).toBe(0);
    for (const id of ids) expect(await stateOf(id)).toBe('PENDING');
  });

  it('--state FAILED replays FAILED messages', async () => {
    const ids = await rows(2, { state: 'FAILED', reason: 'INFRA: down', error_class: 'INFRA' });
    const r = await cli('replay', ['--state', 'FAILED']);
    expect(r.out).toContain(`replayed 2 message(s)`);
    expect(r.code).toBe(0);
    for (const id of ids) expect(await stateOf(id)).toBe('PENDING');
  });

  it('a MALFORMED message by id without --force: says it needs --force and exits non-zero', async () => {
    const [id] = await rows(1, { state: 'DEAD', reason: 'MALFORMED: not XML', terminal_at: clock.now() });
    const r = await cli('replay', [String(id)]);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(new RegExp(`${id}.*DEAD\\(MALFORMED\\).*--force`));
    expect(await stateOf(id)).toBe('DEAD');
  });

  it('a selection matching only messages that need --force says so and exits non-zero', async () => {
    await rows(2, { state: 'DEAD', reason: 'PROTOCOL: x', terminal_at: clock.now() });
    const r = await cli('replay', ['--state', 'DEAD']);
    expect(r.out).toContain('replayed 0 message(s)');
    expect(r.err).toMatch(/2 message\(s\) not replayed: DEAD\(PROTOCOL\) needs --force/);
    expect(r.code).not.toBe(0);
  });

  it('ids that are not replayable (unknown, SUCCEEDED) are named with the reason; the rest is replayed', async () => {
    const [dead] = await rows(1, { state: 'DEAD', reason: 'EXHAUSTED(INTERNAL): x', terminal_at: clock.now() });
    const [ok] = await rows(1, { state: 'SUCCEEDED', terminal_at: clock.now() });
    const r = await cli('replay', [String(dead), String(ok), '999999']);
    expect(r.out).toContain(`replayed 1 message(s): ${dead}`);
    expect(r.err).toContain(`${ok}: SUCCEEDED, not FAILED or DEAD`);
    expect(r.err).toContain('999999: no such message');
    expect(r.code).not.toBe(0);
  });

  it('an empty selection exits non-zero', async () => {
    const r = await cli('replay', ['--state', 'FAILED']);
    expect(r.out).toContain('replayed 0 message(s)');
    expect(r.err).toContain('no message matches');
    expect(r.code).not.toBe(0);
  });
});

describe('npm run backfill-resume', () => {
  it('--reason MISSING_ROW resumes every abandoned backfill of that reason', async () => {
    const ids = await rows(2, { state: 'SUCCEEDED', terminal_at: clock.now(), backfill_abandoned_at: clock.now(), backfill_abandoned_reason: 'MISSING_ROW' });
    await rows(1, { state: 'SUCCEEDED', terminal_at: clock.now(), backfill_abandoned_at: clock.now(), backfill_abandoned_reason: 'TRANSIENT_DEADLINE' });
    const r = await cli('backfill-resume', ['--reason', 'MISSING_ROW']);
    expect(r.out).toContain(`resumed 2 backfill(s): ${ids.join(' ')}`);
    expect(r.code).toBe(0);
  });

  it('an id whose backfill is not abandoned is named, exit non-zero', async () => {
    const [id] = await rows(1, { state: 'SUCCEEDED', terminal_at: clock.now() });
    const r = await cli('backfill-resume', [String(id)]);
    expect(r.out).toContain('resumed 0 backfill(s)');
    expect(r.err).toContain(`${id}: backfill not abandoned`);
    expect(r.code).not.toBe(0);
  });
});
