// A shadow installation beside the live one, the state diff and the dry run (docs/operations.md
// "Trying a rule change"). Two installations on the real services: the live one on the test's
// databases, the shadow on its own Postgres (msgx_test…2) and Redis (TEST_SHADOW_REDIS_URL, db 10),
// both on the ONE inbox, as in production. The live one marks the inbox (backfill); the shadow is
// read-only and takes every row by ID anyway.
//  1. A read-only installation started after the live one processed messages, stopped while more
//     arrive and restarted, ends with every message the live one applied and the same state
//     (compare: 0 differences); rows retention deleted before it read them are reported.
//  2. A shadow with one rule changed (msgx.test.rule-override: REMC of FLOP/REMC ignored) on the
//     fixtures, the corpus and a generated 20,000-message workload: the diff names exactly the
//     flights and fields that rule touches, with the messages that set them. The same for
//     `npm run dry-run` (with the change; and 0 differences without it), and bad input → exit 2.
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/core/clock.ts';
import { healthNotes } from '../../lib/runtime/conditions.ts';
import { compareInstallations } from '../../lib/shadow/collect.ts';
import type { DiffReport } from '../../lib/shadow/diff.ts';
import { messagesFromFile } from '../../lib/inject/files.ts';
import { corpusKind, corpusMessages, corpusPresent } from '../support/corpus.ts';
import { TEST_INBOX_URL, TEST_PG_URL, testConfig, testEnv } from '../support/env.ts';
import { runPipelineUntilSettled } from '../support/pipeline.ts';
import { openServices, type TestServices } from '../support/services.ts';
import { freshDatabase, generate, insertAll, resetInstallation, siblingUrl } from '../support/shadow-workload.ts';
import { type Proc, startWorker, stopAll, waitFor } from '../support/processes.ts';

const ROOT = join(import.meta.dirname, '../..');
const SHADOW_PG = siblingUrl('2');
const SCRATCH_PG = siblingUrl('3');
const SHADOW_REDIS = process.env.TEST_SHADOW_REDIS_URL ?? 'redis://127.0.0.1:6379/10';
const OVERRIDE = 'ignore REMC in FLOP/REMC';
const TZ = 'Asia/Shanghai';

const liveConfig = testConfig({ 'msgx.pipeline.claim-batch': '5000' });
const shadowSettings = { 'msgx.inbox.read-only': 'true', 'msgx.pipeline.claim-batch': '5000', 'msgx.intake.gap-settle': '0ms', DATABASE_URL: SHADOW_PG, REDIS_URL: SHADOW_REDIS };
const shadowConfig = testConfig(shadowSettings);
const changedShadowConfig = testConfig({ ...shadowSettings, 'msgx.test.rule-override': OVERRIDE });

let live: TestServices;
let shadow: TestServices;

/** One run of an installation's processes until the inbox is settled for it ("started", then "stopped"). */
const runLive = () => runPipelineUntilSettled(live, liveConfig, systemClock, 400);
const runShadow = (config = shadowConfig) => runPipelineUntilSettled(shadow, config, systemClock, 400);
const compare = (waitMs = 0): Promise<DiffReport> => compareInstallations({ name: 'shadow', db: shadow.db }, { name: 'live', db: live.db }, { timeZone: TZ, timeoutMs: 60_000, waitMs });

function cli(script: string, args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts', script), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...testEnv(env) },
    encoding: 'utf8',
    timeout: 240_000,
    maxBuffer: 512 * 1024 * 1024,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

async function terminalIds(s: TestServices): Promise<number[]> {
  const r = await sql<{ id: string }>`select msg_id as id from proc_state where state in ('SUCCEEDED', 'SKIPPED', 'DEAD') order by msg_id`.execute(s.db);
  return r.rows.map((x) => Number(x.id));
}

beforeAll(async () => {
  await freshDatabase(SHADOW_PG);
  live = await openServices();
  shadow = await openServices({ pgUrl: SHADOW_PG, redisUrl: SHADOW_REDIS });
});
afterAll(async () => {
  await live?.close();
  await shadow?.close();
});

async function resetAll() {
  await resetInstallation(live);
  await resetInstallation(shadow);
  await live.inbox.query('TRUNCATE TABLE cminmsgs');
  await live.inbox.query('TRUNCATE TABLE coutmsgs');
}

describe('a read-only installation as a shadow', () => {
  it('started after the live one, stopped and restarted: every message the live one applied, the same state; retention losses reported', async () => {
    await resetAll();
    const g = generate({ days: 4, flights: 40, flops: 150, firstFlid: 700_000, seqn: 700_000 });
    const day = (d: number) => g.messages.slice(g.dayStart[d], g.dayStart[d + 1] ?? g.messages.length);
    const ids: number[] = [];
    ids.push(...(await insertAll(live.inbox, day(0))));
    await runLive(); // the live one applies and marks day 1
    const [marked] = await live.inbox.query<import('mysql2').RowDataPacket[]>('SELECT COUNT(*) n FROM cminmsgs WHERE CMINMSGS_DATE_PROCESSED IS NOT NULL');
    expect(Number(marked[0].n)).toBe(ids.length);

    await runShadow(); // the shadow starts: it reads the rows the live one processed
    expect(await terminalIds(shadow)).toEqual(await terminalIds(live));
    // stopped: day 2 arrives and the live one applies it
    ids.push(...(await insertAll(live.inbox, day(1))));
    await runLive();
    // restarted (new registry, decoder and pump: runPipelineUntilSettled builds them): it catches up
    await runShadow();
    ids.push(...(await insertAll(live.inbox, day(2))));
    await runLive();
    await runShadow();

    const liveIds = await terminalIds(live);
    expect(liveIds).toEqual(ids);
    expect(await terminalIds(shadow)).toEqual(liveIds);
    const r = await compare();
    expect(r.position).toBe(ids[ids.length - 1]);
    expect(r.flights.compared).toBe(120);
    expect(r.flights.notComparable).toBe(0);
    expect(r.outcomes.compared).toBe(ids.length);
    expect(r.equal).toBe(true);
    expect([r.flights.different, r.outcomes.different, r.reference.recordsDifferent]).toEqual([0, 0, 0]);
    expect(healthNotes().shadow).toEqual({ startedAfter: 0, lostToRetention: { count: 0, ranges: [] } });

    // stopped again; day 4 arrives, the live one applies it, and retention deletes the oldest
    // processed rows, 25 of day 4 among them, before the shadow reads them
    const day4 = await insertAll(live.inbox, day(3));
    await runLive();
    const cut = day4[24];
    await live.inbox.query('DELETE FROM cminmsgs WHERE CMINMSGS_ID <= ?', [cut]);
    await runShadow();
    const lost = { count: 25, ranges: [`${day4[0]}-${cut}`] };
    expect(healthNotes().shadow).toEqual({ startedAfter: 0, lostToRetention: lost });
    const after = await compare();
    expect(after.lost.here).toEqual(lost);
    // never skipped silently: each lost message is an outcome this side does not have
    expect(after.outcomeDiffs.filter((d) => d.here === null).map((d) => d.msgId)).toEqual(day4.slice(0, 25));
    expect(after.equal).toBe(false);

    // a dry run of a range retention already deleted: exit 2, nothing written
    await freshDatabase(SCRATCH_PG, { empty: true });
    const beyond = cli('dry-run.ts', ['--from', String(ids[0]), '--database', SCRATCH_PG]);
    expect(beyond.code, beyond.err).toBe(2);
    expect(beyond.err).toMatch(/beyond the inbox's retention: its oldest retained row is/);
  }, 240_000);
});

describe('the shadow as real worker processes', () => {
  const procs: Proc[] = [];
  afterAll(async () => stopAll(procs));
  /** The shadow's intake and pump, as the Procfile runs them, on its own Postgres, Redis and topic names. */
  const startShadow = () => {
    const env = {
      DATABASE_URL: SHADOW_PG,
      REDIS_URL: SHADOW_REDIS,
      MSGX_INBOX_READ_ONLY: 'true',
      MSGX_KAFKA_MSG_TOPIC: 'shadowtest.msgx.flight.msg',
      MSGX_KAFKA_SCHD_TOPIC: 'shadowtest.msgx.flight.schd',
      MSGX_KAFKA_STATE_TOPIC: 'shadowtest.msgx.flight.state',
    };
    const started = [startWorker('intake', env), startWorker('pump', env)];
    procs.push(...started);
    return started;
  };
  const shadowDone = (n: number) => async () => (await terminalIds(shadow)).length === n;

  it('started after the live one, stopped (SIGTERM) while more arrive, restarted: catches up, the same state', async () => {
    await resetAll();
    const g = generate({ days: 2, flights: 30, flops: 120, firstFlid: 800_000, seqn: 800_000 });
    const first = await insertAll(live.inbox, g.messages.slice(0, g.dayStart[1]));
    await runLive();
    let running = startShadow();
    await waitFor('the shadow took in and applied day 1', shadowDone(first.length), 60_000, 250);
    const health = (await (await fetch(`http://127.0.0.1:${running[0].port}/healthz`)).json()) as { shadow?: unknown };
    expect(health.shadow).toEqual({ startedAfter: 0, lostToRetention: { count: 0, ranges: [] } });
    await stopAll(running);
    const second = await insertAll(live.inbox, g.messages.slice(g.dayStart[1]));
    await runLive();
    running = startShadow();
    await waitFor('the restarted shadow caught up', shadowDone(first.length + second.length), 60_000, 250);
    await stopAll(running);
    expect(await terminalIds(shadow)).toEqual(await terminalIds(live));
    const r = await compare();
    expect([r.equal, r.flights.compared, r.flights.notComparable, r.outcomes.compared]).toEqual([true, 60, 0, first.length + second.length]);
    // nothing written to the AODB by the shadow
    const [out] = await live.inbox.query<import('mysql2').RowDataPacket[]>('SELECT COUNT(*) n FROM coutmsgs');
    expect(Number(out[0].n)).toBe(0);
  }, 180_000);
});

describe('a rule change tried on real traffic', () => {
  const gen = generate({ days: 10, flights: 1000, flops: 1999, firstFlid: 500_000, seqn: 500_000 });
  let ids: number[] = [];
  let genIds: number[] = [];
  let report: DiffReport;

  /** Flights whose live REMC was last changed by a FLOP/REMC (the ones the changed rule touches), from the live's change records. */
  async function touchedOnLive(afterMsg: number): Promise<Map<string, number>> {
    const r = await sql<{ flid: string; msg_id: string; kind: string }>`
      select distinct on (flid) flid, msg_id, kind from flight_change where changes::jsonb ? 'REMC' order by flid, state_version desc`.execute(live.db);
    const first = await sql<{ flid: string; m: string }>`select flid, min(msg_id) m from flight_change group by flid`.execute(live.db);
    const began = new Map(first.rows.map((x) => [x.flid, Number(x.m)]));
    return new Map(r.rows.filter((x) => x.kind === 'FLOP/REMC' && (began.get(x.flid) ?? 0) > afterMsg).map((x) => [x.flid, Number(x.msg_id)]));
  }

  beforeAll(async () => {
    await resetAll();
    // fixtures (the README's flights for the corpus), the corpus (schedules first), then the generated workload
    const fixtures = messagesFromFile(join(ROOT, 'examples/corpus-flights.xml'));
    const corpus = corpusMessages().map((m) => m.xml);
    const schedules = corpus.filter((x) => corpusKind(x).startsWith('SCHD/'));
    const rest = corpus.filter((x) => !corpusKind(x).startsWith('SCHD/'));
    ids = await insertAll(live.inbox, [...fixtures, ...schedules, ...rest]);
    genIds = await insertAll(live.inbox, gen.messages);
    ids.push(...genIds);
    const t0 = Date.now();
    await runLive();
    const t1 = Date.now();
    await runShadow(changedShadowConfig);
    console.log(`shadow test: ${ids.length} messages (${gen.messages.length} generated); live ${((t1 - t0) / 1000).toFixed(1)} s, shadow ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    const c0 = Date.now();
    report = await compare(5_000);
    console.log(`shadow test: diff of ${report.flights.compared + report.flights.notComparable} flights in ${((Date.now() - c0) / 1000).toFixed(1)} s`);
  }, 600_000);

  it('the workload is what the test means: 20,000 generated messages, 10,000 flights, the corpus', async () => {
    expect(gen.messages.length).toBe(20_000);
    expect(report.flights.compared).toBeGreaterThanOrEqual(10_000);
    expect(report.position).toBe(ids[ids.length - 1]);
  });

  it('the diff names exactly the flights and fields the changed rule touches, with the messages that set them', async () => {
    const touched = await touchedOnLive(0);
    // the generated part, known independently of the installations: the last FLOP/REMC of each flight
    for (const [flid, k] of gen.lastRemc) expect(touched.get(flid), flid).toBe(genIds[k]);
    expect(report.flightDiffs.map((f) => f.flid).sort()).toEqual([...touched.keys()].sort());
    expect(report.flights.different).toBe(touched.size);
    expect(report.flights.notComparable).toBe(0);
    for (const f of report.flightDiffs) {
      // REMC, and the version bookkeeping the ignored messages no longer advanced
      expect(f.fields.map((x) => x.field).filter((x) => x !== 'STATE_VERSION' && x !== 'LAST_MSG_ID')).toEqual(['REMC']);
      const remc = f.fields.find((x) => x.field === 'REMC')!;
      expect(remc.setOther).toEqual({ msgId: touched.get(f.flid), kind: 'FLOP/REMC' });
      if (gen.lastRemc.has(f.flid)) {
        expect(remc.here).toBeNull(); // the generated flights get REMC from FLOP/REMC only
        expect(remc.setHere).toBeNull();
      }
    }
    // the ignored messages still succeed: same outcomes, same reference data
    expect(report.outcomes.different).toBe(0);
    expect(report.outcomes.compared).toBe(ids.length);
    expect(report.reference.recordsDifferent).toBe(0);
    // the reference data of the workload comes from the corpus (the generated part is flights only)
    if (corpusPresent) expect(report.reference.tables).toBeGreaterThan(0);
    else console.warn('SKIPPED(corpus-absent): the shadow diff of reference data (the corpus brings it)');
  });

  it('npm run compare prints the same (text and --json), exit 1; bad input exit 2', { timeout: 180_000 }, async () => {
    await freshDatabase(SCRATCH_PG);
    const scratch = new pg.Client({ connectionString: SCRATCH_PG });
    await scratch.connect();
    await scratch.query(`delete from pgmigrations where name = '0900_shadow'`);
    await scratch.end();
    const env = { DATABASE_URL: SHADOW_PG, REDIS_URL: SHADOW_REDIS };
    const json = cli('compare.ts', ['--other', TEST_PG_URL, '--json'], env);
    expect(json.code, json.err).toBe(1);
    const parsed = JSON.parse(json.out) as DiffReport;
    expect(parsed.flightDiffs.map((f) => f.flid)).toEqual(report.flightDiffs.map((f) => f.flid));
    const text = cli('compare.ts', ['--other', TEST_PG_URL], env);
    expect(text.code).toBe(1);
    expect(text.out).toMatch(new RegExp(`flights: ${report.flights.compared} compared, ${report.flights.equal} equal, ${report.flights.different} different, 0 not comparable`));
    const first = report.flightDiffs[0];
    const setBy = first.fields.find((x) => x.field === 'REMC')!.setOther!;
    expect(text.out).toContain(`flight ${first.flid}:`);
    expect(text.out).toContain(`(set by ${setBy.msgId} FLOP/REMC)`);
    // the same database on both sides; not a msgexchange database; a schema version that differs
    const same = cli('compare.ts', ['--other', SHADOW_PG], env);
    expect([same.code, same.err]).toEqual([2, expect.stringMatching(/are the same database/)]);
    const foreign = cli('compare.ts', ['--other', TEST_PG_URL.replace(/\/[^/]+$/, '/postgres')], env);
    expect([foreign.code, foreign.err]).toEqual([2, expect.stringMatching(/is not a msgexchange database/)]);
    const usage = cli('compare.ts', [], env);
    expect(usage.code).toBe(2);
    // a schema version that differs: a database one migration behind
    const behind = cli('compare.ts', ['--other', SCRATCH_PG], env);
    const newest = readdirSync(join(import.meta.dirname, '../../sql/migrations'))
      .filter((f) => f.endsWith('.sql'))
      .sort()
      .at(-1)!
      .replace(/\.sql$/, '');
    expect([behind.code, behind.err]).toEqual([2, expect.stringMatching(new RegExp(`schema versions differ: here at ${newest} \\(\\d+ migrations\\), other at \\d{4}_\\w+`))]);
  });

  it('npm run dry-run: the same diff from a retained range into a scratch database; 0 differences without the change', async () => {
    const from = genIds[gen.dayStart[5]]; // flights of days 6–10 began after it; days 1–5 and the corpus's before
    await freshDatabase(SCRATCH_PG, { empty: true });
    const changed = cli('dry-run.ts', ['--from', String(from), '--database', SCRATCH_PG, '--json'], { 'msgx.test.rule-override': OVERRIDE });
    expect(changed.code, changed.err).toBe(1);
    const r = JSON.parse(changed.out) as DiffReport;
    const touched = await touchedOnLive(from - 1);
    expect(r.flightDiffs.map((f) => f.flid).sort()).toEqual([...touched.keys()].sort());
    expect([...touched.keys()].every((f) => (gen.dayOf.get(f) ?? 0) >= 5)).toBe(true);
    for (const f of r.flightDiffs) {
      expect(f.fields.map((x) => x.field).filter((x) => x !== 'STATE_VERSION' && x !== 'LAST_MSG_ID')).toEqual(['REMC']);
      expect(f.fields.find((x) => x.field === 'REMC')!.setOther).toEqual({ msgId: touched.get(f.flid), kind: 'FLOP/REMC' });
    }
    expect(r.flights.compared).toBe(5_000);
    expect(r.flights.notComparableBy['history-before-start']).toBeGreaterThanOrEqual(5_000);
    expect(r.outcomes.different).toBe(0);

    // the scratch database is used once; the live one as scratch is refused
    const again = cli('dry-run.ts', ['--from', String(from), '--database', SCRATCH_PG]);
    expect([again.code, again.err]).toEqual([2, expect.stringMatching(/already holds/)]);
    const liveAsScratch = cli('dry-run.ts', ['--from', String(from), '--database', TEST_PG_URL]);
    expect([liveAsScratch.code, liveAsScratch.err]).toEqual([2, expect.stringMatching(/is the live database/)]);

    await freshDatabase(SCRATCH_PG, { empty: true });
    const unchanged = cli('dry-run.ts', ['--from', String(from), '--database', SCRATCH_PG]);
    expect(unchanged.code, unchanged.out + unchanged.err).toBe(0);
    expect(unchanged.out).toMatch(/flights: 5000 compared, 5000 equal, 0 different/);
    expect(unchanged.out).toMatch(/message outcomes: \d+ compared, 0 different/);
  }, 300_000);
});

// the inbox URL is shared by both installations (never a second inbox)
it('both installations read one inbox', () => {
  expect(shadowConfig.INBOX_URL).toBe(TEST_INBOX_URL);
  expect(shadowConfig.DATABASE_URL).not.toBe(liveConfig.DATABASE_URL);
});
