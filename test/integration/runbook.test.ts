// The runbook cannot drift: the commands of each drill in docs/operations.md (fenced blocks tagged
// `drill=<name>`) are extracted from the document — not copied here — and run exactly as written,
// through bash and npm as an operator runs them, against running processes (pump, backfill,
// msg-dispatch, started as the other process tests start them). The test only prepares the
// incident (the state the drill starts from), sets the variables the document tells the operator
// to set from the query above the block, and checks the end state.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { slices } from '../../lib/core/config.ts';
import { ManualClock } from '../../lib/core/clock.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { formatLocalDatetime } from '../../lib/sis/values.ts';
import { testConfig, testEnv } from '../support/env.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { inboxProcessed, openServices, putInbox, resetDomain, resetPipeline, silentLog, sisMessage, type TestServices } from '../support/services.ts';
import { createdTopics, deleteTopics, putMsgEvents, uniqueTopic } from './dispatch-support.ts';

const DOC = join(import.meta.dirname, '../../docs/operations.md');

/** The drills of the runbook: name → the command lines of its block(s), in document order. */
function drills(markdown: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const re = /^([ \t]*)```[a-z]*[ \t]+drill=([\w-]+)[^\n]*\n([\s\S]*?)^[ \t]*```/gm;
  for (const m of markdown.matchAll(re)) {
    const lines = m[3]
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    out.set(m[2], [...(out.get(m[2]) ?? []), ...lines]);
  }
  return out;
}

const config = testConfig();
const TZ = config['msgx.airport.timezone'];
const topic = uniqueTopic('runbook');
const env = { ...testEnv({ 'msgx.kafka.msg-topic': topic, 'msgx.kafka.partitions': '1' }) };

interface Ran {
  line: string;
  code: number | null;
  out: string;
  err: string;
}

/** One line of a drill, through bash, as typed at a prompt in the repository (variables set as the document says). */
function run(line: string, vars: Record<string, string>): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', line], { env: { ...process.env, ...env, ...vars }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (err += b));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ line, code, out, err });
    });
  });
}

async function runDrill(name: string, vars: Record<string, string> = {}): Promise<Ran[]> {
  const lines = drills(readFileSync(DOC, 'utf8')).get(name);
  expect(lines, `docs/operations.md has the drill ${name}`).toBeDefined();
  const ran: Ran[] = [];
  for (const line of lines!) ran.push(await run(line, vars));
  return ran;
}

let s: TestServices;
let procs: Proc[] = [];
const clock = new ManualClock('2026-12-01T00:00:00Z');
const deadAt = new Date(Date.now() - 3600_000);

const proc = async (id: number) => (await s.db.selectFrom('proc_state').selectAll().where('msg_id', '=', id).executeTakeFirstOrThrow()) as Record<string, any>;
const events = async () => (await sql<{ event_id: string; flid: string; state: string }>`select event_id, flid, state from msg_event where target = 'msg' order by event_id`.execute(s.db)).rows;

/** Inbox rows for these messages, enqueued by intake (PENDING), then given the incident's state. */
async function incident(n: number, set: Record<string, unknown>): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await putInbox(s.inbox, sisMessage()));
  await intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
  await s.db.updateTable('proc_state').set(set).where('msg_id', 'in', ids).execute();
  return ids;
}

let exhausted: number[];
let applied: number;
let neverRead: number;
let k1: string[];
let k2: string[];

beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
  // flights, outbox and the Redis mirror too: flights another run left in Redis but not in
  // Postgres look like a restore from backup, and the processes would hold (lib/watches/restore.ts)
  await resetDomain(s);

  // DEAD(EXHAUSTED) after a bug now fixed: terminal an hour ago, backfilled then (the inbox holds that time)
  exhausted = await incident(2, { state: 'DEAD', reason: 'EXHAUSTED(INTERNAL): TypeError: boom', reason_class: 'EXHAUSTED', attempts: 5, terminal_at: deadAt, backfill_at: deadAt });
  await s.inbox.query('UPDATE cminmsgs SET CMINMSGS_DATE_PROCESSED = ? WHERE CMINMSGS_ID IN (?)', [formatLocalDatetime(deadAt, TZ), exhausted]);

  // rows deleted while queued, now back: one applied before its row went (backfill abandoned), one never read
  [applied] = await incident(1, { state: 'SUCCEEDED', terminal_at: deadAt, backfill_abandoned_at: deadAt, backfill_abandoned_reason: 'MISSING_ROW' });
  [neverRead] = await incident(1, {
    state: 'DEAD',
    reason: 'MALFORMED: raw-missing',
    reason_class: 'RAW_MISSING',
    terminal_at: deadAt,
    backfill_abandoned_at: deadAt,
    backfill_abandoned_reason: 'MISSING_ROW',
  });

  // Kafka refused the first event of flights K1 and K2 (DEAD); the later event of each is held
  const ids = (await putMsgEvents(s.db, ['K1', 'K2', 'K1', 'K2'])).map(String);
  k1 = [ids[0], ids[2]];
  k2 = [ids[1], ids[3]];
  await sql`update msg_event set state = 'DEAD', attempts = 5, last_error = 'KafkaJSProtocolError: message larger than max' where event_id = any(${[k1[0], k2[0]]}::bigint[])`.execute(s.db);

  procs = ['pump', 'backfill', 'msg-dispatch'].map((name) => startWorker(name, { 'msgx.kafka.msg-topic': topic, 'msgx.kafka.partitions': '1' }));
  for (const p of procs) await waitFor(`${p.name} up`, async () => (await fetch(`http://127.0.0.1:${p.port}/healthz`)).ok, 60_000);
}, 180_000);

afterAll(async () => {
  await stopAll(procs);
  await deleteTopics(createdTopics()).catch(() => {});
  await s?.close();
});

describe('the runbook as tests (docs/operations.md, blocks tagged drill=…)', () => {
  it('the document has the three drills, each with commands', () => {
    const d = drills(readFileSync(DOC, 'utf8'));
    expect([...d.keys()].sort()).toEqual(['dead-replay', 'kafka-dead-letters', 'missing-row']);
    for (const [name, lines] of d) expect(lines.length, name).toBeGreaterThan(0);
  });

  it('DEAD messages after a fix: replayed, applied again; the inbox keeps its first processing time', async () => {
    const ran = await runDrill('dead-replay');
    for (const r of ran) expect(r.code, `${r.line}\n${r.out}\n${r.err}`).toBe(0);
    expect(ran[0].out).toContain(`replayed 2 message(s): ${exhausted.join(' ')}`);
    for (const id of exhausted) {
      const p = await waitFor(`message ${id} applied and backfilled again`, async () => {
        const r = await proc(id);
        return r.state !== 'PENDING' && r.state !== 'DEAD' && r.backfill_at ? r : undefined;
      });
      expect(p.state).toBe('SKIPPED'); // the test messages have no handler: applied as "unsupported"
      expect(p.terminal_at.getTime()).toBeGreaterThan(deadAt.getTime());
    }
    const inbox = await inboxProcessed(s.inbox);
    for (const id of exhausted) expect(inbox.get(id)).toBe(formatLocalDatetime(deadAt, TZ)); // docs/decisions.md: kept, never overwritten
  }, 120_000);

  it('abandoned backfills MISSING_ROW, rows back: the applied one is marked, the never-read one is applied first', async () => {
    const ran = await runDrill('missing-row');
    for (const r of ran) expect(r.code, `${r.line}\n${r.out}\n${r.err}`).toBe(0);
    expect(ran[0].out).toContain(`resumed 1 backfill(s): ${applied}`);
    expect(ran[0].err).toContain(`npm run replay -- ${neverRead} --force`); // the refusal names the next line's command
    expect(ran[1].out).toContain(`replayed 1 message(s): ${neverRead}`);

    const a = await waitFor('the applied message marked', async () => ((await proc(applied)).backfill_at ? proc(applied) : undefined));
    expect(a.backfill_abandoned_at).toBeNull();
    expect((await inboxProcessed(s.inbox)).get(applied)).toBe(formatLocalDatetime(deadAt, TZ));

    const b = await waitFor('the never-read message applied, then marked', async () => {
      const r = await proc(neverRead);
      return r.state !== 'PENDING' && r.backfill_at ? r : undefined;
    });
    expect(b.state).toBe('SKIPPED');
    expect(b.reason).toBe('unsupported');
    // marked with the time of the outcome that applied it, never with the raw-missing one
    expect((await inboxProcessed(s.inbox)).get(neverRead)).toBe(formatLocalDatetime(b.terminal_at, TZ));
  }, 120_000);

  it('Kafka dead letters: send the flight again (its held event follows, in order), skip the other, see what reached Kafka', async () => {
    const ran = await runDrill('kafka-dead-letters', { FLID: 'K1', EVENT_ID: k2[0] });
    for (const r of ran) expect(r.code, `${r.line}\n${r.out}\n${r.err}`).toBe(0);
    expect(ran[0].out).toContain(`replayed 1 event(s): ${k1[0]}`);
    expect(ran[1].out).toContain(`skipped 1 event(s): ${k2[0]}`);
    await waitFor('the events sent', async () => (await events()).filter((e) => e.state === 'SENT').length === 3);
    expect((await events()).map((e) => [String(e.event_id), e.state])).toEqual([
      [k1[0], 'SENT'],
      [k2[0], 'SKIPPED'],
      [k1[1], 'SENT'],
      [k2[1], 'SENT'],
    ]);
    // kafka:tail's lines: K1's two events in order, K2's held one, never the skipped one
    const records = ran[2].out
      .split('\n')
      .filter((l) => l.startsWith(`${topic} `))
      .map((l) => ({ key: /key=(\S+)/.exec(l)![1], eventId: String(JSON.parse(l.slice(l.indexOf('{'))).EVENT_ID) }));
    expect(records.filter((r) => r.key === 'K1').map((r) => r.eventId)).toEqual(k1);
    expect(records.filter((r) => r.key === 'K2').map((r) => r.eventId)).toEqual([k2[1]]);
  }, 120_000);

  it('the pump counts messages that go DEAD at once (PROTOCOL, MALFORMED) in msgx_pipeline_failures_total', async () => {
    const pump = procs.find((p) => p.name === 'pump')!;
    const count = async (cls: string) => {
      const text = await (await fetch(`http://127.0.0.1:${pump.port}/metrics`)).text();
      return Number(new RegExp(`^msgx_pipeline_failures_total\\{class="${cls}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 'NaN');
    };
    const before = { PROTOCOL: await count('PROTOCOL'), MALFORMED: await count('MALFORMED') };
    const protocol = await putInbox(s.inbox, sisMessage().replace(/<SEQN>\d+<\/SEQN>/, '<SEQN>12a</SEQN>'));
    const malformed = await putInbox(s.inbox, 'not xml at all');
    await intakeRound({ db: s.db, inbox: s.inbox, clock, intake: slices(config).intake, log: silentLog });
    await waitFor('both DEAD', async () => (await Promise.all([protocol, malformed].map(proc))).every((r) => r.state === 'DEAD'));
    expect((await proc(protocol)).reason).toMatch(/^PROTOCOL: /);
    await waitFor('counted', async () => (await count('PROTOCOL')) === before.PROTOCOL + 1 && (await count('MALFORMED')) === before.MALFORMED + 1);
  }, 120_000);
});
