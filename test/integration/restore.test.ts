// R7 restore from backup, end to end with the real processes (RELIABILITY.md "R7"): a mixed
// stream, `pg_dump -Fc` when ~40 % of it is terminal, drained, processes stopped, the dump
// restored over the same database (`pg_restore --clean`), processes restarted. Then:
//   - detected: pump and intake /healthz 503 with the reason, msgx_postgres_behind{source} = 1,
//     one ERROR line; new messages wait (nothing taken in, nothing applied);
//   - `npm run recover-restore` exactly as docs/operations.md shows it → everything drains to the
//     state of a run without restore (flights, reference data, outcomes; canonical JSON without
//     clock-valued fields), Redis equal to Postgres;
//   - on the msg topic, no (FLID, STATE_VERSION) and no EVENT_ID carries two different contents;
//   - the same dump restored again under the running processes: held within about a second (the
//     watermark went back), recovered to the same state.
import { canonical as canonicalJson } from '../support/canonical.ts';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { listFlights, readFlights } from '../../lib/flight/read.ts';
import { toJson } from '../../lib/flight/state.ts';
import { TEST_PG_URL, testConfig, testEnv } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { hasLog, startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { consumeAll, deleteTopics, payloadOf, uniqueTopic } from './dispatch-support.ts';

const run = promisify(execFile);
const TZ = 'Asia/Shanghai';
const FLIGHTS = Array.from({ length: 40 }, (_, i) => 5001 + i);

// ---- the workload (fixed text: both runs inject byte-identical messages)

function workload(): { before: string[]; after: string[]; late: string[] } {
  let seqn = 930_000;
  const msg = (type: string, styp: string, body: string) => sisMessage({ type, styp, body, seqn: ++seqn });
  const flop = (styp: string, flid: number, inner: string) => msg('FLOP', styp, `<FLOP><FLID>${flid}</FLID><FFID>XX-${flid}</FFID>${inner}</FLOP>`);
  const ref = (type: string, styp: string, records: string[]) => msg(type, styp, `<RECS>${records.length}</RECS>${records.join('')}`);
  const t = (hhmm: string) => `01DEC26${hhmm}`;
  const rec = (flid: number) => {
    const hh = String(6 + (flid % 14)).padStart(2, '0');
    return `<FLTR><FLID>${flid}</FLID><ALCD>CA</ALCD><FLNO>CA${flid}</FLNO><MVIN>D</MVIN><SODT>${t(`${hh}${String((flid * 7) % 60).padStart(2, '0')}`)}</SODT><FLTY>W</FLTY><FLIN>D</FLIN>
<ACFT>320</ACFT><STND>${500 + (flid % 10)}</STND><GTDT GTNO="1"><GATE>G${flid % 30}</GATE><GTYP>D</GTYP></GTDT></FLTR>`;
  };
  /** The i-th FLOP: remark, estimate, gate or seats, on the flights in turn. */
  const change = (i: number) => {
    const flid = FLIGHTS[(i * 7) % FLIGHTS.length];
    switch (i % 4) {
      case 0:
        return flop('REMC', flid, `<REMC>R${i}</REMC>`);
      case 1:
        return flop('ESTT', flid, `<ESTT>${t(`${String(8 + (i % 12)).padStart(2, '0')}${String(i % 60).padStart(2, '0')}`)}</ESTT>`);
      case 2:
        return flop('GTDT', flid, `<GTDT GTNO="1"><GATE>G${i % 50}</GATE><GTYP>D</GTYP></GTDT>`);
      default:
        return flop('MAXP', flid, `<MAXP>${100 + i}</MAXP>`);
    }
  };
  const before = [
    ref('GLST', 'DNLD', ['<GLST><GCOD>G1</GCOD><GTNM>Gate 1</GTNM><GTML>T1</GTML></GLST>', '<GLST><GCOD>G2</GCOD><GTNM>Gate 2</GTNM><GTML>T1</GTML></GLST>']),
    ref('AIRL', 'DNLD', ['<AIRL><ITOP>CA</ITOP><ICOP>CCA</ICOP><ONAM>Air China</ONAM><TRML>T2</TRML></AIRL>']),
    msg('SCHD', 'DNLD', `<SCHD><RECS>${FLIGHTS.length}</RECS>${FLIGHTS.map(rec).join('\n')}</SCHD>`),
    ...Array.from({ length: 130 }, (_, i) => change(i)),
  ];
  const after = [
    ...Array.from({ length: 90 }, (_, i) => change(130 + i)),
    flop('FDEL', 5003, '<FDEL></FDEL>'),
    msg('SCHD', 'ADFT', `<SCHD><RECS>1</RECS>${rec(5100)}</SCHD>`),
    ref('GLST', 'UPD', ['<GLST><GCOD>G2</GCOD><GTNM>Gate 2 (north)</GTNM><GTML>T1</GTML></GLST>', '<GLST><GCOD>G4</GCOD><GTNM>Gate 4</GTNM></GLST>']),
    ...Array.from({ length: 90 }, (_, i) => change(220 + i)),
    flop('REMC', 5003, '<REMC>too late</REMC>'), // SKIPPED: the flight is deleted
    flop('REMC', 5100, '<REMC>new flight</REMC>'),
    ref('AIRL', 'UPD', ['<AIRL><ITOP>CA</ITOP><ICOP>CCA</ICOP><ONAM>Air China Ltd</ONAM><TRML>T3</TRML></AIRL>']),
  ];
  const late = [...Array.from({ length: 30 }, (_, i) => change(400 + i)), ref('GLST', 'DEL', ['<GLST><GCOD>G1</GCOD></GLST>'])];
  return { before, after, late };
}

// ---- stores and their canonical state

let s: TestServices;

async function resetAll() {
  await resetPipeline(s);
  await resetDomain(s);
}

const strip = (v: unknown) => canonicalJson(v);

const rows = async (q: ReturnType<typeof sql<Record<string, unknown>>>) => (await q.execute(s.db)).rows;

async function canonical() {
  return strip({
    proc: await rows(sql`select msg_id, state, reason, kind from proc_state order by msg_id`),
    flights: (await listFlights(s.db, { limit: 10_000, includeDeleted: true }, TZ)).flights,
    refMaster: await rows(sql`select rtype, rkey, record, last_msg_id from ref_master order by rtype, rkey`),
  }) as { proc: unknown[]; flights: { FLID: string; STATE: string }[]; refMaster: unknown[] };
}

/** Every Redis flight key equals Postgres's ACTIVE state, and no other key exists. */
async function redisMatchesPostgres(): Promise<boolean> {
  const flids = (await rows(sql`select flid from flight_schd`)).map((r) => String(r.flid));
  const states = await readFlights(s.db, flids, TZ);
  const keys = (await s.redis.keys('msgx:flight:*')).sort();
  const expected = [...states.values()].filter((f) => f.STATE === 'ACTIVE').map((f) => `msgx:flight:${f.FLID}`);
  if (JSON.stringify(keys) !== JSON.stringify(expected.sort())) return false;
  for (const f of states.values()) {
    if (f.STATE !== 'ACTIVE') continue;
    if ((await s.redis.get(`msgx:flight:${f.FLID}`)) !== JSON.stringify(toJson(f))) return false;
  }
  return true;
}

async function progress() {
  const r = await sql<{ total: number; terminal: number; unbackfilled: number; unsent: number }>`
    select (select count(*)::int from proc_state) total,
           (select count(*)::int from proc_state where state not in ('PENDING','FAILED')) terminal,
           (select count(*)::int from proc_state where backfill_at is null) unbackfilled,
           (select count(*)::int from msg_event where target = 'msg' and state = 'PENDING') unsent`.execute(s.db);
  return r.rows[0];
}
const drained = async (n: number) => {
  const p = await progress();
  return p.total === n && p.terminal === n && p.unbackfilled === 0 && p.unsent === 0;
};

// ---- processes

const topics = { msg: uniqueTopic('restore-msg'), schd: uniqueTopic('restore-schd') };
const env = { MSGX_KAFKA_MSG_TOPIC: topics.msg, MSGX_KAFKA_SCHD_TOPIC: topics.schd };
let procs: Proc[] = [];
const startAll = () => {
  procs = ['intake', 'pump', 'backfill', 'msg-dispatch', 'retention'].map((n) => startWorker(n, env));
  return Object.fromEntries(procs.map((p) => [p.name, p])) as Record<string, Proc>;
};
const health = async (p: Proc) => {
  const r = await fetch(`http://127.0.0.1:${p.port}/healthz`);
  return { status: r.status, body: (await r.json()) as { conditions?: { name: string; reason: string }[] } };
};
const behindGauge = async (p: Proc) => {
  const text = await (await fetch(`http://127.0.0.1:${p.port}/metrics`)).text();
  return Object.fromEntries([...text.matchAll(/^msgx_postgres_behind\{source="(\w+)"\} (\d+)/gm)].map((m) => [m[1], Number(m[2])]));
};
/** The command as docs/operations.md shows it, with this test's services. */
const recoverRestore = (...args: string[]) =>
  run('npm', ['run', '--silent', 'recover-restore', ...(args.length ? ['--', ...args] : [])], { env: { ...process.env, ...testEnv(env, 'warn') }, timeout: 60_000 });

/** The msg topic: one content per (FLID, STATE_VERSION) and per EVENT_ID; every final version of every flight on it. */
async function topicHasOneContentPerPair() {
  const records = (await consumeAll(topics.msg)).map(payloadOf);
  const content = (r: Record<string, unknown>) => JSON.stringify(strip({ ...r, EVENT_ID: undefined }));
  const byPair = new Map<string, Set<string>>();
  const byEvent = new Map<number, Set<string>>();
  for (const r of records) {
    const c = content(r);
    byPair.set(`${r.FLID}|${r.STATE_VERSION}`, (byPair.get(`${r.FLID}|${r.STATE_VERSION}`) ?? new Set()).add(c));
    byEvent.set(r.EVENT_ID, (byEvent.get(r.EVENT_ID) ?? new Set()).add(`${r.FLID}|${r.STATE_VERSION}|${c}`));
  }
  expect([...byPair].filter(([, v]) => v.size > 1).map(([k]) => k)).toEqual([]);
  expect([...byEvent].filter(([, v]) => v.size > 1).map(([k]) => k)).toEqual([]);
  const last = (await rows(sql`select flid, max(state_version)::int v from msg_event where target = 'msg' group by flid`)).map((r) => `${r.flid}|${r.v}`);
  for (const k of last) expect(byPair.has(k)).toBe(true);
}

const dir = mkdtempSync(join(tmpdir(), 'msgx-restore-'));
const dump = join(dir, 'backup.dump');

describe('R7 restore from backup', () => {
  let reference: Awaited<ReturnType<typeof canonical>>;
  let total = 0;

  beforeAll(async () => {
    s = await openServices();
    // the run without restore (in-process: the same input, the same outcome as the processes)
    await resetAll();
    const w = workload();
    for (const xml of [...w.before, ...w.after, ...w.late]) await putInbox(s.inbox, xml);
    await runPipelineUntilSettled(s, testConfig(), new ManualClock('2026-12-01T00:00:00Z'));
    reference = await canonical();
    total = w.before.length + w.after.length + w.late.length;
    await resetAll();
  }, 120_000);

  afterAll(async () => {
    await stopAll(procs);
    await deleteTopics([topics.msg, topics.schd]).catch(() => {});
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the run without restore is a real mixed stream', () => {
    expect(reference.proc).toHaveLength(total);
    expect(reference.flights.filter((f) => f.STATE === 'DELETED').map((f) => f.FLID)).toEqual(['5003']);
    expect(reference.flights.map((f) => f.FLID)).toContain('5100');
    expect((reference.proc as { state: string }[]).filter((p) => p.state === 'SUCCEEDED').length).toBeGreaterThan(total - 5);
  });

  it('backup mid-stream, restore, restart: detected and held; recover-restore brings the state of the run without restore', async () => {
    const w = workload();
    let p = startAll();
    for (const xml of w.before) await putInbox(s.inbox, xml);
    await waitFor('the first ~40 % terminal', async () => (await progress()).terminal === w.before.length, 60_000, 200);
    await run('pg_dump', ['-Fc', '-f', dump, TEST_PG_URL]);
    for (const xml of w.after) await putInbox(s.inbox, xml);
    const fed = w.before.length + w.after.length;
    await waitFor('the stream drained', () => drained(fed), 60_000, 250);
    await stopAll(procs);

    // restore the backup over the same database, then start the processes again
    await s.pool.end();
    await s.sessionClient.end();
    await run('pg_restore', ['--clean', '--if-exists', '--single-transaction', '-d', TEST_PG_URL, dump]);
    await s.close();
    s = await openServices();
    const restored = await progress();
    expect(restored.total).toBe(w.before.length);

    const t0 = Date.now();
    p = startAll();
    // readiness at start: from the first answer on, pump and intake never say 200 before their restore check ran
    const seen: Record<string, number[]> = { pump: [], intake: [] };
    const behindNow = async (q: Proc) => {
      const h = await health(q);
      seen[q.name].push(h.status);
      return h.status === 503 && h.body.conditions?.some((c) => c.name === 'postgres-behind') ? h : false;
    };
    const [held] = await Promise.all([
      waitFor('pump /healthz 503 postgres-behind', () => behindNow(p.pump), 60_000, 25),
      waitFor('intake /healthz 503 postgres-behind', () => behindNow(p.intake), 60_000, 25),
    ]);
    expect(seen.pump.length + seen.intake.length).toBeGreaterThan(2);
    expect([...seen.pump, ...seen.intake]).not.toContain(200);
    const detectedS = (Date.now() - t0) / 1000;
    const reason = held.body.conditions!.find((c) => c.name === 'postgres-behind')!.reason;
    expect(reason).toMatch(/inbox: \d+ inbox row\(s\) in \d+\.\.\d+ are marked processed above intake's watermark/);
    let gauge = {};
    await waitFor(
      'redis and kafka seen too',
      async () => {
        const g = (gauge = await behindGauge(p.pump));
        return g.inbox === 1 && g.redis === 1 && g.kafka === 1;
      },
      30_000,
      250,
    ).catch((e: Error) => {
      const checks = p.pump.logs.filter((l) => l.includes('restore check could not run'));
      throw new Error(`${e.message}; last gauge ${JSON.stringify(gauge)}; the pump's failed checks:\n${checks.slice(-5).join('\n')}`);
    });
    const intake = await waitFor('intake /healthz 503', async () => ((await health(p.intake)).status === 503 ? health(p.intake) : false), 30_000, 200);
    expect(intake.body.conditions!.find((c) => c.name === 'postgres-behind')!.reason).toContain('recover-restore');
    expect(await behindGauge(p.intake)).toMatchObject({ inbox: 1 });
    const retention = await waitFor(
      'retention /healthz 503 postgres-behind',
      async () => {
        const h = await health(p.retention);
        return h.status === 503 && h.body.conditions?.some((c) => c.name === 'postgres-behind') ? h : false;
      },
      30_000,
      200,
    );
    expect(retention.status).toBe(503);
    await waitFor('retention run skipped', () => hasLog(p.retention, 'retention run skipped'), 30_000, 200);
    const errorLines = p.pump.logs.filter((l) => l.includes('"level":50') && l.includes('Postgres is behind'));
    expect(errorLines).toHaveLength(1);
    console.log(`R7: detected ${detectedS.toFixed(1)} s after the processes started: ${reason}`);

    // new messages wait: nothing taken in, nothing applied
    for (const xml of w.late) await putInbox(s.inbox, xml);
    const versions = async () => (await rows(sql`select coalesce(sum(state_version), 0)::int v, (select count(*)::int from proc_state) n from flight_schd`))[0];
    const at = await versions();
    await new Promise((r) => setTimeout(r, 4000));
    expect(await versions()).toEqual(at);
    expect((await progress()).total).toBe(w.before.length);

    // the operator: look, then recover
    const dry = await recoverRestore('--dry-run');
    expect(dry.stdout).toMatch(/inbox: \d+ row\(s\) marked processed above intake's watermark/);
    expect(dry.stdout).toMatch(/redis: \d+ flight\(s\) newer than Postgres/);
    expect(dry.stdout).toMatch(/kafka: msg topic .* holds EVENT_ID \d+, Postgres's sequence is at \d+/);
    expect(dry.stdout).toContain('dry run: nothing changed');
    expect((await progress()).total).toBe(w.before.length);
    const help = await recoverRestore('--help');
    expect(help.stdout).toContain('usage: npm run recover-restore');

    const rec = await recoverRestore();
    console.log(`R7: recover-restore said:\n${rec.stdout}`);
    expect(rec.stdout).toMatch(new RegExp(`took in ${w.after.length} message\\(s\\) again`));
    expect(rec.stdout).toContain('redis re-synced from Postgres');
    expect(rec.stdout).toMatch(/EVENT_ID sequence moved to \d+/);

    await waitFor('everything drained', () => drained(total), 60_000, 250);
    await waitFor(
      'pump, intake and retention ready again',
      async () => (await health(p.pump)).status === 200 && (await health(p.intake)).status === 200 && (await health(p.retention)).status === 200,
      20_000,
      250,
    );
    expect(await behindGauge(p.pump)).toEqual({ inbox: 0, redis: 0, kafka: 0 });
    expect(hasLog(p.pump, 'Postgres is no longer behind')).toBe(true);

    // the state of the run without restore; Redis equal to Postgres
    const final = await canonical();
    expect(final.proc).toEqual(reference.proc);
    expect(final.flights).toEqual(reference.flights);
    expect(final.refMaster).toEqual(reference.refMaster);
    expect(await redisMatchesPostgres()).toBe(true);

    await topicHasOneContentPerPair();
  }, 180_000);

  it('restored under running processes: seen within seconds (the watermark went back), held, recovered to the same state', async () => {
    const [pump, intake] = [procs.find((x) => x.name === 'pump')!, procs.find((x) => x.name === 'intake')!];
    expect((await health(pump)).status).toBe(200);
    const before = await canonical();
    await s.pool.end();
    await s.sessionClient.end();
    const t0 = Date.now();
    await run('pg_restore', ['--clean', '--if-exists', '--single-transaction', '-d', TEST_PG_URL, dump]);
    const restoredMs = Date.now() - t0;
    await s.close();
    s = await openServices();
    // on a time-out, say what each answered last (and what the pump logged) instead of only that it timed out
    const last: Record<string, unknown> = {};
    const held = async (p: Proc) => {
      const h = await health(p);
      last[p.name] = h;
      return h.status === 503;
    };
    await waitFor('pump and intake /healthz 503 while running', async () => (await held(pump)) && (await held(intake)), 45_000, 100).catch((e: Error) => {
      throw new Error(`${e.message}; last answers ${JSON.stringify(last)}; pump's last lines:\n${pump.logs.slice(-15).join('\n')}`);
    });
    const seenS = (Date.now() - t0 - restoredMs) / 1000;
    console.log(`R7: restored under running processes (pg_restore ${(restoredMs / 1000).toFixed(1)} s); held ${seenS.toFixed(1)} s after it ended`);
    expect(hasLog(pump, 'went back')).toBe(true);
    expect((await behindGauge(pump)).inbox).toBe(1);
    const rec = await recoverRestore();
    expect(rec.stdout).toMatch(/took in \d+ message\(s\) again/);
    await waitFor('drained again', () => drained(total), 60_000, 250);
    await waitFor('ready again', async () => (await health(pump)).status === 200 && (await health(intake)).status === 200, 20_000, 250);
    expect(await canonical()).toEqual(before);
    expect(await redisMatchesPostgres()).toBe(true);
    await topicHasOneContentPerPair();
  }, 120_000);
});
