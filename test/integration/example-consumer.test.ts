// The reference consumer (examples/consumer/consumer.ts, run as a person runs it: its own node
// process) against the real broker while the gateway works: it joins after a first part of the
// inbox was already published (bootstrap from the beginning of the state topic), follows the rest
// while state-dispatch and msg-dispatch are SIGKILLed and started again, is SIGKILLed itself and
// resumes from its file; in the end its table equals GET /all/flights (live flights, complete
// states) and it remembers the deleted flights' versions.
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_KAFKA } from '../support/env.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, procRows, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { deleteTopics } from './dispatch-support.ts';

type Flight = Record<string, unknown> & { FLID: string; STATE: string; STATE_VERSION: number };
interface Table {
  bootstrapped: boolean;
  flights: Record<string, { version: number; eventId: number; state: Flight | null }>;
}

let s: TestServices;
const procs: Proc[] = [];
const run = randomUUID().slice(0, 8);
const env = {
  MSGX_KAFKA_MSG_TOPIC: `example.${run}.msg`,
  MSGX_KAFKA_SCHD_TOPIC: `example.${run}.schd`,
  MSGX_KAFKA_STATE_TOPIC: `example.${run}.state`,
  MSGX_KAFKA_PARTITIONS: '3',
  MSGX_MSG_BATCH: '10', // small rounds: the kills land in the middle of the backlog
};
const dir = mkdtempSync(join(tmpdir(), 'msgx-example-consumer-'));
const tableFile = join(dir, 'table.json');

interface Child {
  logs: string[];
  kill: (sig: NodeJS.Signals) => void;
  exited: Promise<number | null>;
}
function startConsumer(): Child {
  const child = spawn(process.execPath, ['examples/consumer/consumer.ts'], {
    env: { ...process.env, KAFKA_BROKERS: TEST_KAFKA, STATE_TOPIC: env.MSGX_KAFKA_STATE_TOPIC, TABLE_FILE: tableFile, GROUP_ID: `example-${run}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  child.stdout!.on('data', (b: Buffer) => logs.push(...b.toString().split('\n').filter(Boolean)));
  child.stderr!.on('data', (b: Buffer) => logs.push(...b.toString().split('\n').filter(Boolean)));
  return { logs, kill: (sig) => child.kill(sig), exited: new Promise((r) => child.on('exit', (code) => r(code))) };
}

let seqn = 600_000;
const flop = (styp: string, f: number, inner: string) => sisMessage({ type: 'FLOP', styp, seqn: ++seqn, body: `<FLOP><FLID>${f}</FLID><FFID>X</FFID>${inner}</FLOP>` });
const table = () => (existsSync(tableFile) ? (JSON.parse(readFileSync(tableFile, 'utf8')) as Table) : null);
const count = async (sql: string) => Number((await s.pool.query(sql)).rows[0].n);

async function allFlights(port: number): Promise<Flight[]> {
  const out: Flight[] = [];
  let cursor: string | null = null;
  do {
    const body = (await (await fetch(`http://127.0.0.1:${port}/all/flights?limit=1000&includeDeleted=true${cursor ? `&cursor=${cursor}` : ''}`)).json()) as {
      flights: Flight[];
      nextCursor: string | null;
    };
    out.push(...body.flights);
    cursor = body.nextCursor;
  } while (cursor);
  return out;
}

describe('the reference consumer of the state topic', () => {
  const consumers: Child[] = [];
  beforeAll(async () => {
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
  });
  afterAll(async () => {
    for (const c of consumers) c.kill('SIGKILL');
    await stopAll(procs);
    await deleteTopics([env.MSGX_KAFKA_MSG_TOPIC, env.MSGX_KAFKA_SCHD_TOPIC, env.MSGX_KAFKA_STATE_TOPIC]).catch(() => {});
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('bootstraps, follows through dispatcher kills and its own, and ends equal to GET /all/flights', async () => {
    // part 1, published before the consumer exists: a snapshot of 800 flights, changes, deletions
    await putInbox(s.inbox, bigSnapshot(800, 2000, { seqn: ++seqn }));
    for (let i = 0; i < 40; i++) await putInbox(s.inbox, flop('STND', 2000 + i, `<STND>A${i}</STND>`));
    for (const f of [2001, 2002]) await putInbox(s.inbox, flop('FDEL', f, '<FDEL></FDEL>'));
    for (const name of ['intake', 'pump', 'backfill', 'msg-dispatch', 'state-dispatch']) procs.push(startWorker(name, env));
    const api = startWorker('api', env);
    procs.push(api);
    const total = 1 + 40 + 2;
    await waitFor(
      'part 1 published',
      async () =>
        (await procRows(s.db)).filter((r) => !['PENDING', 'FAILED'].includes(r.state)).length === total &&
        (await count(`select count(*)::int n from msg_event where target = 'state' and state <> 'SENT'`)) === 0,
      120_000,
      250,
    );

    // the consumer joins: bootstrap from the beginning
    const first = startConsumer();
    consumers.push(first);
    await waitFor('bootstrapped', () => first.logs.some((l) => l.includes('"msg":"bootstrapped"')), 60_000, 100).catch((e: Error) => {
      throw new Error(`${e.message}; consumer output: ${[...first.logs.filter((l) => !l.includes('"batch"')), ...first.logs.slice(-3)].join('\n')}`);
    });

    // part 2 while the dispatchers are SIGKILLed and started again, and the consumer too
    for (let i = 0; i < 300; i++) await putInbox(s.inbox, flop('STND', 2000 + (i % 150), `<STND>B${i}</STND>`));
    for (const f of [2003, 2004, 2005]) await putInbox(s.inbox, flop('FDEL', f, '<FDEL></FDEL>'));
    await putInbox(s.inbox, bigSnapshot(850, 2000, { seqn: ++seqn })); // revives 2001–2005, adds 2800–2849
    for (const f of [2010, 2011]) await putInbox(s.inbox, flop('FDEL', f, '<FDEL></FDEL>'));
    const killAndRestart = async (name: string) => {
      const i = procs.findIndex((p) => p.name === name && p.child.exitCode === null && p.child.signalCode === null);
      procs[i].child.kill('SIGKILL');
      await procs[i].exited;
      procs.push(startWorker(name, env));
    };
    await waitFor('part 2 under way', async () => (await count(`select count(*)::int n from proc_state where state <> 'PENDING'`)) > total + 50, 60_000, 50);
    await killAndRestart('state-dispatch');
    first.kill('SIGKILL');
    await first.exited;
    await killAndRestart('msg-dispatch');
    const second = startConsumer();
    consumers.push(second);
    await waitFor('part 2 under way further', async () => (await count(`select count(*)::int n from proc_state where state <> 'PENDING'`)) > total + 200, 60_000, 50);
    await killAndRestart('state-dispatch');

    const all = total + 300 + 3 + 1 + 2;
    await waitFor('every message terminal', async () => (await procRows(s.db)).filter((r) => !['PENDING', 'FAILED'].includes(r.state)).length === all, 180_000, 250);
    await waitFor('the state outbox drained', async () => (await count(`select count(*)::int n from msg_event where target in ('msg', 'state') and state <> 'SENT'`)) === 0, 180_000, 250);

    const flights = await allFlights(api.port);
    const live = flights.filter((f) => f.STATE === 'ACTIVE');
    const deleted = flights.filter((f) => f.STATE === 'DELETED');
    expect(live.length).toBe(848);
    expect(deleted.map((f) => f.FLID).sort()).toEqual(['2010', '2011']);
    // the consumer's table catches up: its live flights are exactly the api's
    const liveOf = (t: Table | null) => Object.fromEntries(Object.entries(t?.flights ?? {}).flatMap(([k, v]) => (v.state ? [[k, v.state]] : [])));
    const want = Object.fromEntries(live.map((f) => [f.FLID, f]));
    const holds = () => {
      try {
        expect(liveOf(table())).toEqual(want);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor('the consumer holds GET /all/flights', holds, 60_000, 250);
    const t = table()!;
    expect(t.bootstrapped).toBe(true);
    expect(liveOf(t)).toEqual(want);
    for (const f of live) expect(t.flights[f.FLID].version).toBe(f.STATE_VERSION);
    for (const f of deleted) expect(t.flights[f.FLID]).toMatchObject({ state: null, version: f.STATE_VERSION }); // remembered with its version
    // the restarted consumer resumed from its file (no second bootstrap) and saw duplicates or stale versions only as such
    expect(second.logs.some((l) => l.includes('"msg":"starting"') && l.includes('"bootstrapped":true'))).toBe(true);
    expect(second.logs.filter((l) => l.includes('"msg":"bootstrapped"'))).toEqual([]);
  }, 480_000);
});
