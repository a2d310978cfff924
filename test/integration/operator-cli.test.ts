// The operator CLIs as an operator runs them (`node scripts/replay.ts …`, the npm script's command):
// selections by --state/--reason/--force, why untouched messages were left, exit codes, --help
// and bad arguments of every CLI, backfill-resume's checks (never-applied messages, rows still
// missing), the dead-letter CLIs' reasons, and the request CLI's look-ups.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { ManualClock } from '../../lib/core/clock.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { testConfig, testEnv } from '../support/env.ts';
import { openServices, procRows, putInbox, resetPipeline, silentLog, sisMessage, type TestServices } from '../support/services.ts';
import { slices } from '../../lib/core/config.ts';
import { inboxProcessed } from '../support/services.ts';
import { createdTopics, deleteTopics, putMsgEvents, topicWith } from './dispatch-support.ts';
import { Kafka, logLevel } from 'kafkajs';
import { TEST_KAFKA } from '../support/env.ts';
import { sql } from 'kysely';
import { createRequest, requestSettings } from '../../lib/requests/outbound.ts';
import { runCli } from '../support/processes.ts';
import { markFailed } from '../../lib/requests/track.ts';

let s: TestServices;
const clock = new ManualClock('2026-12-01T00:00:00Z');
const config = testConfig();

function cli(script: string, args: string[], viaNpm = false): Promise<{ code: number | null; out: string; err: string }> {
  const [cmd, argv] = viaNpm ? ['npm', ['run', '--silent', script, '--', ...args]] : [process.execPath, [`scripts/${script}.ts`, ...args]];
  return runCli(cmd, argv, { ...process.env, ...testEnv() });
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
    const ids = await rows(3, { state: 'DEAD', reason: 'PROTOCOL: RECS="2" but 1 record', reason_class: 'PROTOCOL', terminal_at: clock.now() });
    const r = await cli('replay', ['--state', 'DEAD', '--reason', 'PROTOCOL', '--force']);
    expect(r.out).toContain(`replayed 3 message(s): ${ids.join(' ')}`);
    expect(r.code).toBe(0);
    for (const id of ids) expect(await stateOf(id)).toBe('PENDING');
  });

  it('--state FAILED replays FAILED messages', async () => {
    const ids = await rows(2, { state: 'FAILED', reason: 'INFRA: down', reason_class: 'INFRA', error_class: 'INFRA' });
    const r = await cli('replay', ['--state', 'FAILED']);
    expect(r.out).toContain(`replayed 2 message(s)`);
    expect(r.code).toBe(0);
    for (const id of ids) expect(await stateOf(id)).toBe('PENDING');
  });

  it('a MALFORMED message by id without --force: says it needs --force and exits non-zero', async () => {
    const [id] = await rows(1, { state: 'DEAD', reason: 'MALFORMED: not XML', reason_class: 'MALFORMED', terminal_at: clock.now() });
    const r = await cli('replay', [String(id)]);
    expect(r.code).not.toBe(0);
    expect(r.err).toMatch(new RegExp(`${id}.*DEAD\\(MALFORMED\\).*--force`));
    expect(await stateOf(id)).toBe('DEAD');
  });

  it('a selection matching only messages that need --force says so and exits non-zero', async () => {
    await rows(2, { state: 'DEAD', reason: 'PROTOCOL: x', reason_class: 'PROTOCOL', terminal_at: clock.now() });
    const r = await cli('replay', ['--state', 'DEAD']);
    expect(r.out).toContain('replayed 0 message(s)');
    expect(r.err).toMatch(/2 message\(s\) not replayed: DEAD\(PROTOCOL\) needs --force/);
    expect(r.code).not.toBe(0);
  });

  it('ids that are not replayable (unknown, SUCCEEDED) are named with the reason; the rest is replayed', async () => {
    const [dead] = await rows(1, { state: 'DEAD', reason: 'EXHAUSTED(INTERNAL): x', reason_class: 'EXHAUSTED', terminal_at: clock.now() });
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

describe('every CLI answers --help with its usage and exit 0, before touching anything', () => {
  const CLIS = [
    'start',
    'replay',
    'backfill-resume',
    'dispatch-replay',
    'dispatch-skip',
    'dispatch-resend',
    'migrate',
    'inject',
    'request',
    'kafka-tail',
    'healthcheck',
    'compare',
    'dry-run',
    'recover-restore',
    ...['pump', 'snapshot', 'reads', 'dispatch', 'backfill', 'latency', 'intake', 'e2e'].map((b) => `bench/${b}`),
    ...['r1-chaos', 'r2-outages', 'r4-takeover'].map((r) => `reliability/${r}`),
  ];
  // side by side (vitest's maxConcurrency at a time): --help touches nothing
  it.concurrent.each(CLIS)('%s --help', async (name) => {
    const r = await cli(name, ['--help']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^usage: (npm run |npm start|node scripts\/)/);
    expect(r.err).toBe('');
  });

  it('npm run replay -- --help (as typed) prints the usage', async () => {
    const r = await cli('replay', ['--help'], true);
    expect(r.code).toBe(0);
    expect(r.out).toContain('usage: npm run replay -- <msgId…> | --state FAILED|DEAD');
  });

  it('npm run migrate -- --help does not migrate', async () => {
    const r = await cli('migrate', ['--help']);
    expect(r.out).not.toContain('migrated');
    expect(r.code).toBe(0);
    expect(await cli('migrate', ['--now'])).toMatchObject({ code: 2, err: expect.stringContaining('migrate: unknown option --now (it knows --help)') });
  });

  it('a bad argument names the flags the command knows, once prefixed, exit 2', async () => {
    const r = await cli('replay', ['--sate', 'DEAD']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^replay: unknown option --sate \(it knows --state, --reason, --force and --help\)\nusage:/);
    const d = await cli('dispatch-replay', ['--target', 'x', '--all']);
    expect(d.code).toBe(2);
    expect(d.err).toMatch(/^dispatch-replay: --target must be msg, schd or state, not x\n/);
    expect(d.err).not.toContain('dispatch-replay: dispatch-replay');
    const none = await cli('dispatch-skip', []);
    expect(none.err).toMatch(/^dispatch-skip: give exactly one of: <eventId…>, --flid FLID, --all\n/);
    expect(none.code).toBe(2);
  });

  it('recover-restore: a bad argument names its flags (exit 2); a configuration error is one prefixed line, exit 2, nothing opened', async () => {
    const r = await cli('recover-restore', ['--dryrun']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^recover-restore: unknown option --dryrun \(it knows --dry-run and --help\)\nusage:/);
    const c = spawnSync(process.execPath, ['scripts/recover-restore.ts', '--dry-run'], { env: { ...process.env, ...testEnv(), MSGX_IO_TIMEOUT: 'banana' }, encoding: 'utf8' });
    expect(c.status).toBe(2);
    expect(c.stderr).toMatch(/^recover-restore: invalid configuration: msgx\.io\.timeout[^\n]*\n$/);
    expect(c.stdout).toBe('');
  });

  it('inject with a path that does not exist gives a usage message, not a stack', async () => {
    const r = await cli('inject', ['no-such-dir/corpus/*.sql', '--renumber-seqn']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('inject: no such file: no-such-dir/corpus/*.sql (the shell found nothing matching this pattern)');
    expect(r.err).toContain('usage: npm run inject --');
    expect(r.err).not.toMatch(/\bat .*\.ts:\d+/);
  });
});

describe('backfill-resume checks first', () => {
  const abandoned = { terminal_at: clock.now(), backfill_abandoned_at: clock.now(), backfill_abandoned_reason: 'MISSING_ROW' };

  it('refuses a never-applied message (DEAD raw-missing) with the command that recovers it; replay --force applies it', async () => {
    const [id] = await rows(1, { state: 'DEAD', reason: 'MALFORMED: raw-missing', reason_class: 'RAW_MISSING', ...abandoned });
    const r = await cli('backfill-resume', [String(id)]);
    expect(r.out).toContain('resumed 0 backfill(s)');
    expect(r.err).toContain(`${id}: never applied`);
    expect(r.err).toContain(`npm run replay -- ${id} --force`);
    expect(r.code).toBe(1);
    const byReason = await cli('backfill-resume', ['--reason', 'MISSING_ROW']);
    expect(byReason.err).toContain(`npm run replay -- ${id} --force`);
    expect(byReason.code).toBe(1);
    expect((await procRows(s.db)).find((x) => x.msg_id === id)).toMatchObject({ state: 'DEAD', backfill_abandoned_reason: 'MISSING_ROW', backfill_at: null });
    expect((await inboxProcessed(s.inbox)).get(id)).toBeNull();
    const replay = await cli('replay', [String(id), '--force']);
    expect(replay).toMatchObject({ code: 0, out: expect.stringContaining(`replayed 1 message(s): ${id}`) });
    expect(await stateOf(id)).toBe('PENDING');
  });

  it('replay --force of a never-read message whose row is still missing: left, says why, exit 1', async () => {
    const [id] = await rows(1, { state: 'DEAD', reason: 'MALFORMED: raw-missing', reason_class: 'RAW_MISSING', ...abandoned });
    await s.inbox.query('DELETE FROM cminmsgs WHERE CMINMSGS_ID = ?', [id]);
    const r = await cli('replay', ['--state', 'DEAD', '--reason', 'MALFORMED: raw-missing', '--force']);
    expect(r.out).toContain('replayed 0 message(s)');
    expect(r.err).toContain('inbox row is still missing');
    expect(r.code).toBe(1);
    expect(await stateOf(id)).toBe('DEAD');
  });

  it('--reason MISSING_ROW while the rows are still missing: nothing resumed, says why, exit 1', async () => {
    const ids = await rows(2, { state: 'SUCCEEDED', ...abandoned });
    await s.inbox.query('DELETE FROM cminmsgs WHERE CMINMSGS_ID IN (?)', [ids]);
    const r = await cli('backfill-resume', ['--reason', 'MISSING_ROW']);
    expect(r.out).toContain('resumed 0 backfill(s)');
    expect(r.err).toContain(`2 message(s) not resumed: inbox row still missing`);
    expect(r.err).toContain(ids.join(' '));
    expect(r.code).toBe(1);
    for (const row of (await procRows(s.db)).filter((x) => ids.includes(x.msg_id))) expect(row.backfill_abandoned_reason).toBe('MISSING_ROW');
  });
});

describe('dispatch-replay / dispatch-skip say why', () => {
  beforeEach(async () => {
    await sql`truncate msg_event`.execute(s.db);
  });

  it('dispatch-skip of an event that does not exist: reason on stderr, exit 1', async () => {
    const r = await cli('dispatch-skip', ['999999']);
    expect(r.out).toContain('skipped 0 event(s)');
    expect(r.err).toContain('dispatch-skip: 999999: no such event');
    expect(r.code).toBe(1);
  });

  it('dispatch-replay of a held event names the DEAD event it waits behind; --flid with no DEAD event says so', async () => {
    const [dead, held] = await putMsgEvents(s.db, ['H', 'H']);
    await sql`update msg_event set state = 'DEAD', attempts = 5, last_error = 'message larger than max' where event_id = ${dead}`.execute(s.db);
    const r = await cli('dispatch-replay', [String(held)]);
    expect(r.out).toContain('replayed 0 event(s)');
    expect(r.err).toContain(`${held}: PENDING, held behind DEAD event ${dead} of flight H`);
    expect(r.err).toContain(`npm run dispatch-replay -- ${dead}`);
    expect(r.code).toBe(1);
    const none = await cli('dispatch-skip', ['--flid', 'NOPE']);
    expect(none.err).toContain('no DEAD event in flight NOPE');
    expect(none.code).toBe(1);
    expect(await cli('dispatch-skip', ['--all'])).toMatchObject({ code: 0, out: expect.stringContaining(`skipped 1 event(s): ${dead}`) });
  });
});

describe('npm run request -- show / list', () => {
  beforeEach(async () => {
    await sql`truncate req_track`.execute(s.db);
  });

  it('show tells FAILED with the AODB error text; list --state filters; an unknown id exits 1', async () => {
    const settings = requestSettings(config);
    const { request: a } = await createRequest(s.db, { ...settings, now: clock.now(), spec: { kind: 'RQRD', rtype: 'SLST' }, enqueue: false });
    await markFailed(s.db, a.id, 77, 'EROR 12: unknown reference type', clock.now());
    const { request: b } = await createRequest(s.db, { ...settings, now: clock.now(), spec: { kind: 'RQFD', operationDay: '2026-12-02' }, enqueue: false });
    const show = await cli('request', ['show', String(a.id)]);
    expect(show.code).toBe(0);
    expect(JSON.parse(show.out)).toMatchObject({ id: a.id, state: 'FAILED', errorText: 'EROR 12: unknown reference type', closedByMsgId: 77, createdAt: '2026-12-01T00:00:00.000Z' });
    const list = await cli('request', ['list', '--state', 'PENDING']);
    expect(JSON.parse(list.out).map((r: { id: number }) => r.id)).toEqual([b.id]);
    expect(await cli('request', ['show', '424242'])).toMatchObject({ code: 1, err: expect.stringContaining('no request 424242') });
    expect((await cli('request', ['list', '--state', 'LOST'])).code).toBe(2);
  });
});

describe('npm run kafka:tail', () => {
  afterAll(async () => deleteTopics(createdTopics()));

  it('--from-beginning prints every record with its key and value (a tombstone named), then stops when idle', async () => {
    const topic = await topicWith('tail', {});
    const producer = new Kafka({ clientId: 'msgx-tail-test', brokers: [TEST_KAFKA], logLevel: logLevel.NOTHING }).producer();
    await producer.connect();
    await producer.send({
      topic,
      messages: [
        { key: '15', value: '{"FLID":"15","STATE_VERSION":1}' },
        { key: '15', value: null },
      ],
    });
    await producer.disconnect();
    const r = await cli('kafka-tail', ['--topic', topic, '--from-beginning', '--idle', '3']);
    expect(r.code).toBe(0);
    expect(r.out.trim().split('\n')).toEqual([`${topic} 0@0 key=15 {"FLID":"15","STATE_VERSION":1}`, `${topic} 0@1 key=15 (tombstone)`]);
    expect(r.err).toContain('no record for 3 s');
  }, 60_000);

  it('--idle 0 runs until Ctrl-C, then exits 0', async () => {
    const topic = await topicWith('tail-int', {});
    const child = spawn(process.execPath, ['scripts/kafka-tail.ts', '--topic', topic, '--idle', '0'], { env: { ...process.env, ...testEnv() }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (b) => (err += b));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const deadline = Date.now() + 30_000;
    while (!err.includes('reading') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(err).toContain(`kafka:tail: reading ${topic} (new records only)`);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  }, 60_000);
});
