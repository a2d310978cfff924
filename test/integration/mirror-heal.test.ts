// Redis heals itself (docs/operations.md "Derived stores: Redis"): every write is by version
// (lib/flight/mirror.ts writeMirror), and the pump process notices a Redis that lost data and
// rebuilds it from Postgres (lib/watches/redis.ts) — all against the real Redis, the
// real processes, messages flowing. A Redis that is restarted or refuses writes is one this
// file starts itself (its own port and directory); the machine's Redis is only flushed in the
// test database.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedis, type Redis } from '../../lib/db/redis.ts';
import { flightKey, mirrorVersions, prepareMirrorValues, removedKey, writeMirror } from '../../lib/flight/mirror.ts';
import { readFlights } from '../../lib/flight/read.ts';
import { type FlightState, toJson } from '../../lib/flight/state.ts';
import { GENERATION_KEY } from '../../lib/watches/redis.ts';
import { TEST_REDIS_URL } from '../support/env.ts';
import { FaultProxy } from '../support/fault-proxy.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { metricValue, type Proc, startWorker, stopAll, waitFor } from '../support/processes.ts';
import { openServices, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';

const TZ = 'Asia/Shanghai';
const ROOT = join(import.meta.dirname, '../..');
let s: TestServices;
const procs: Proc[] = [];
const run = randomUUID().slice(0, 8);
const topics = { MSGX_KAFKA_MSG_TOPIC: `heal.${run}.msg`, MSGX_KAFKA_SCHD_TOPIC: `heal.${run}.schd`, MSGX_KAFKA_STATE_TOPIC: `heal.${run}.state` };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function state(flid: string, version: number, stateName: 'ACTIVE' | 'DELETED' = 'ACTIVE'): FlightState {
  return { FLID: flid, STATE: stateName, STATE_VERSION: version, OPERATION_DAY: '2026-12-01', UPDATED_AT: '2026-12-01T08:00:00+08:00', LAST_MSG_ID: version, data: { STND: `S${version}` }, MAFL: [] };
}
const versionIn = (json: string | null) => (json === null ? 0 : Number(/"STATE_VERSION":(\d+)/.exec(json)?.[1]));

let seqn = 810_000;
const flop = (f: number, stnd: string) => sisMessage({ type: 'FLOP', styp: 'STND', seqn: ++seqn, body: `<FLOP><FLID>${f}</FLID><FFID>X</FFID><STND>${stnd}</STND></FLOP>` });

/** A snapshot of `flights` flights from 5000, then FLOPs fed over time (messages flowing while a fault happens). */
async function feed(flights: number, flops: number, perTick: number, tickMs: number): Promise<void> {
  for (let i = 0; i < flops; i += perTick) {
    for (let j = i; j < Math.min(flops, i + perTick); j++) await putInbox(s.inbox, flop(5000 + (j % flights), `F${j}`));
    await sleep(tickMs);
  }
}

async function drained(): Promise<boolean> {
  const [rows] = await s.inbox.query<import('mysql2').RowDataPacket[]>('SELECT COUNT(*) n FROM cminmsgs');
  const r = await s.pool.query("select count(*)::int n, count(*) filter (where state not in ('SUCCEEDED','SKIPPED','DEAD'))::int open from proc_state");
  return r.rows[0].open === 0 && r.rows[0].n === Number(rows[0].n);
}

/** Redis = Postgres for every flight: the JSON of each ACTIVE one, no key for the others, no key Postgres lacks. */
async function differences(redis: Redis): Promise<string[]> {
  const flids = (await s.pool.query('select flid from flight_schd order by flid')).rows.map((r) => r.flid as string);
  const states = await readFlights(s.db, flids, TZ);
  const values = flids.length ? await redis.mget(...flids.map(flightKey)) : [];
  const out: string[] = [];
  flids.forEach((f, i) => {
    const st = states.get(f)!;
    const want = st.STATE === 'ACTIVE' ? JSON.stringify(toJson(st)) : null;
    if (values[i] !== want) out.push(`${f}: Redis v${versionIn(values[i])}, Postgres v${st.STATE_VERSION} ${st.STATE}`);
  });
  const keys = await redis.keys('msgx:flight:*');
  const known = new Set(flids.map(flightKey));
  for (const k of keys) if (!known.has(k)) out.push(`${k}: not in Postgres`);
  return out;
}

const logged = (p: Proc, text: string) => p.logs.filter((l) => l.includes(text)).length;

/** A redis-server of this test's own: port, directory, no persistence; extra arguments (e.g. --replicaof). */
class OwnRedis {
  child: ChildProcess | null = null;
  readonly dir: string;
  readonly port: number;
  readonly extra: string[];
  constructor(port: number, extra: string[] = []) {
    this.port = port;
    this.extra = extra;
    this.dir = join(ROOT, '.local', 'test-redis', String(port));
  }
  get url(): string {
    return `redis://127.0.0.1:${this.port}/0`;
  }
  async start(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.dir, ...this.extra], { stdio: 'ignore' });
    const probe = createRedis(this.url, 1000);
    try {
      await waitFor(`redis-server on ${this.port}`, () => probe.ping().then((x) => x === 'PONG'), 10_000, 100);
    } finally {
      probe.disconnect();
    }
  }
  async kill(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await gone;
  }
  async close(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

beforeAll(async () => {
  s = await openServices();
  await waitFor('redis ready', () => s.redis.status === 'ready');
});
afterAll(async () => {
  await stopAll(procs);
  await s?.close();
});

describe('Redis written by version (real Redis)', () => {
  let r: Redis;
  beforeAll(() => {
    r = s.redis;
  });

  it('an older state never overwrites a newer one; the same version writes again; a removal keeps its version', async () => {
    await r.flushdb();
    expect(await writeMirror(r, [{ flid: 'V1', state: state('V1', 3) }])).toBe(0);
    expect(await writeMirror(r, [{ flid: 'V1', state: state('V1', 2) }])).toBe(1); // older: refused
    expect(versionIn(await r.get(flightKey('V1')))).toBe(3);
    await r.del(flightKey('V1')); // evicted: the same version is written again
    expect(await writeMirror(r, [{ flid: 'V1', state: state('V1', 3) }])).toBe(0);
    expect(versionIn(await r.get(flightKey('V1')))).toBe(3);
    // DELETED at v5: the key goes, its version stays (with a TTL)
    expect(await writeMirror(r, [{ flid: 'V1', state: state('V1', 5, 'DELETED') }])).toBe(0);
    expect(await r.get(flightKey('V1'))).toBeNull();
    expect(await r.get(removedKey('V1'))).toBe('5');
    expect(await r.ttl(removedKey('V1'))).toBeGreaterThan(3600);
    // a late write of v4 does not bring it back; a revival at v6 does, and forgets the removal
    expect(await writeMirror(r, [{ flid: 'V1', state: state('V1', 4) }])).toBe(1);
    expect(await r.get(flightKey('V1'))).toBeNull();
    expect(await writeMirror(r, [{ flid: 'V1', state: state('V1', 6) }])).toBe(0);
    expect(versionIn(await r.get(flightKey('V1')))).toBe(6);
    expect(await r.get(removedKey('V1'))).toBeNull();
    // a flight Postgres does not know (version 0) never removes a key that holds a version
    expect(await writeMirror(r, [{ flid: 'V1', state: null }])).toBe(1);
    expect(versionIn(await r.get(flightKey('V1')))).toBe(6);
    // forced (recover-restore: Redis ahead of a restored Postgres): written whatever Redis holds
    expect(await writeMirror(r, [{ flid: 'V1', state: state('V1', 2) }], { force: true })).toBe(0);
    expect(versionIn(await r.get(flightKey('V1')))).toBe(2);
    expect(await mirrorVersions(r, ['V1', 'NOPE'])).toEqual([2, 0]);
  });

  it('values serialized ahead (prepareMirrorValues) are the values written, for that state object only, and are not kept after the write', async () => {
    await r.flushdb();
    const a = state('P1', 1);
    const b = { ...state('P1', 2), data: { STND: 'B2' } };
    prepareMirrorValues([a, b, state('P2', 1, 'DELETED')]);
    await writeMirror(r, [{ flid: 'P1', state: a }]);
    expect(await r.get(flightKey('P1'))).toBe(JSON.stringify(toJson(a)));
    // another state of the same flight is written as itself, not as a value prepared for another object
    const c = { ...state('P1', 3), data: { STND: 'C3' } };
    await writeMirror(r, [{ flid: 'P1', state: c }]);
    expect(JSON.parse((await r.get(flightKey('P1')))!)).toEqual(toJson(c));
    // every prepared value is dropped by the first write after it (the one of a above): b's is not used
    // later (b changed in place here only to see which value is written; states are never changed)
    (b.data as Record<string, unknown>).STND = 'changed after';
    await writeMirror(r, [{ flid: 'P1', state: b }], { force: true });
    expect(JSON.parse((await r.get(flightKey('P1')))!).STND).toBe('changed after');
  });

  it('many flights in one call: each one by its own version (2,500 flights, 3 calls)', async () => {
    await r.flushdb();
    const flids = Array.from({ length: 2500 }, (_, i) => `M${i}`);
    await writeMirror(
      r,
      flids.map((f) => ({ flid: f, state: state(f, 10) })),
    );
    // half of them older, half newer
    const refused = await writeMirror(
      r,
      flids.map((f, i) => ({ flid: f, state: state(f, i % 2 ? 9 : 11) })),
    );
    expect(refused).toBe(1250);
    expect(await mirrorVersions(r, flids)).toEqual(flids.map((_, i) => (i % 2 ? 10 : 11)));
  });

  it('a write sent down a frozen connection and delivered after the freeze is refused (a plain SET would have landed)', async () => {
    await r.flushdb();
    const px = await FaultProxy.start({ port: Number(new URL(TEST_REDIS_URL).port || 6379) });
    px.deliverLate(true);
    const c = createRedis(px.url(TEST_REDIS_URL), 500);
    try {
      await waitFor('proxied client ready', () => c.status === 'ready');
      await writeMirror(c, [{ flid: 'L1', state: state('L1', 1) }]);
      await c.set('msgx:test:plain', 'v1');
      await px.set('freeze');
      // both writes time out on the frozen connection (the edge throws that socket away)
      const versioned = writeMirror(c, [{ flid: 'L1', state: state('L1', 2) }]);
      const plain = c.set('msgx:test:plain', 'v2-late');
      await expect(versioned).rejects.toThrow(/timed out/);
      await expect(plain).rejects.toThrow(/timed out/);
      // newer writes go through on a new connection meanwhile
      await waitFor('a new connection', () => writeMirror(c, [{ flid: 'L1', state: state('L1', 3) }]).then(() => true), 10_000, 200);
      await c.set('msgx:test:plain', 'v3');
      await px.set('pass'); // the frozen connection moves again: its held bytes arrive now
      await waitFor('the late plain SET landed (the proxy delivers late)', async () => (await r.get('msgx:test:plain')) === 'v2-late', 5_000, 50);
      expect(versionIn(await r.get(flightKey('L1')))).toBe(3);
    } finally {
      c.disconnect();
      await px.close();
    }
  });
});

describe('the pump process heals Redis (messages flowing)', () => {
  const own: OwnRedis[] = [];
  afterEach(async () => {
    await stopAll(procs.splice(0));
    for (const o of own.splice(0)) await o.close();
  });

  async function startPipeline(env: Record<string, string> = {}): Promise<{ pump: Proc; intake: Proc }> {
    await resetPipeline(s);
    await resetDomain(s);
    await putInbox(s.inbox, bigSnapshot(400, 5000, { seqn: ++seqn }));
    const intake = startWorker('intake', { ...topics, ...env });
    const pump = startWorker('pump', { ...topics, ...env });
    procs.push(intake, pump);
    await waitFor('the snapshot applied', async () => Number((await s.pool.query("select count(*)::int n from flight_schd where state = 'ACTIVE'")).rows[0].n) === 400, 60_000, 200);
    return { pump, intake };
  }

  it('FLUSHDB while messages flow: detected and rebuilt within seconds, Redis = Postgres after, counted once', async () => {
    const { pump } = await startPipeline();
    await waitFor('the first re-sync wrote the marker', async () => (await s.redis.get(GENERATION_KEY)) !== null, 20_000);
    const rebuildsBefore = (await metricValue(pump, 'msgx_mirror_rebuilds_total')) ?? 0;
    const flowing = feed(400, 1200, 40, 100);
    await sleep(1000);
    const t0 = Date.now();
    await s.redis.flushdb();
    const behindAt = await waitFor('the heal noticed', () => (logged(pump, 'Redis is behind Postgres') > 1 ? Date.now() : false), 30_000, 50);
    await flowing;
    await waitFor('the inbox drained', drained, 60_000, 200);
    const healedAt = await waitFor('Redis = Postgres', async () => ((await differences(s.redis)).length === 0 ? Date.now() : false), 60_000, 200);
    console.log(`[mirror-heal] FLUSHDB: detected in ${((behindAt - t0) / 1000).toFixed(1)} s; Redis = Postgres ${((healedAt - t0) / 1000).toFixed(1)} s after the flush (1,200 FLOPs flowing)`);
    expect(behindAt - t0).toBeLessThan(30_000);
    expect(await differences(s.redis)).toEqual([]);
    expect(await metricValue(pump, 'msgx_mirror_rebuilds_total')).toBe(rebuildsBefore + 1);
    expect(await metricValue(pump, 'msgx_mirror_behind')).toBe(0);
    expect(logged(pump, 'Redis rebuilt from Postgres')).toBe(2); // the first start, the flush
    const health = await fetch(`http://127.0.0.1:${pump.port}/healthz`);
    expect(health.status).toBe(200);
  }, 180_000);

  it('Redis frozen while messages flow, its held writes delivered late: no flight ends older in Redis, without a heal', async () => {
    const px = await FaultProxy.start({ port: Number(new URL(TEST_REDIS_URL).port || 6379) });
    px.deliverLate(true);
    try {
      const { pump } = await startPipeline({ REDIS_URL: px.url(TEST_REDIS_URL), MSGX_IO_TIMEOUT: '1s' });
      await waitFor('the first re-sync wrote the marker', async () => (await s.redis.get(GENERATION_KEY)) !== null, 20_000);
      const flowing = feed(60, 1200, 60, 100);
      await sleep(1500);
      await px.set('freeze');
      await sleep(6000);
      await px.set('pass');
      await flowing;
      await waitFor('the inbox drained', drained, 90_000, 200);
      await sleep(2000); // anything still held has arrived
      expect(await differences(s.redis)).toEqual([]);
      // versioned writes did it: no compare found a flight behind
      expect(logged(pump, 'flight(s) missing or older in Redis')).toBe(0);
    } finally {
      await px.close();
    }
  }, 180_000);

  it('a redis-server restarted without persistence (its own instance): rebuilt by itself', async () => {
    const r2 = new OwnRedis(16_390 + Math.floor(Math.random() * 100));
    own.push(r2);
    await r2.start();
    const { pump } = await startPipeline({ REDIS_URL: r2.url });
    const c = createRedis(r2.url, 2000);
    try {
      await waitFor('Redis = Postgres at first', async () => (await differences(c)).length === 0, 30_000, 200);
      // the start's re-sync done first (its marker written), so that the restart below meets a
      // finished first rebuild: killed during it, that one fails and only one rebuild is logged
      await waitFor('the first re-sync wrote the marker', async () => (await c.get(GENERATION_KEY)) !== null, 20_000);
      const flowing = feed(400, 600, 40, 100);
      await sleep(500);
      await r2.kill();
      await sleep(1000);
      const t0 = Date.now();
      await r2.start();
      await flowing;
      await waitFor('the inbox drained', drained, 90_000, 200);
      const healedAt = await waitFor('Redis = Postgres again', async () => ((await differences(c)).length === 0 ? Date.now() : false), 60_000, 200);
      console.log(`[mirror-heal] redis-server restarted empty: Redis = Postgres ${((healedAt - t0) / 1000).toFixed(1)} s after it answered again`);
      // rebuilt by the heal (the first start's re-sync is one; the marker or the compare finds the empty server)
      await waitFor('a second rebuild logged', () => logged(pump, 'Redis rebuilt from Postgres') >= 2, 30_000, 200);
    } finally {
      c.disconnect();
    }
  }, 180_000);

  it('a Redis that refuses the rebuild (a read-only replica): /healthz 503 names it, one ERROR line, no crash, nothing DEAD', async () => {
    const primary = new OwnRedis(16_500 + Math.floor(Math.random() * 100));
    own.push(primary);
    await primary.start();
    const replica = new OwnRedis(primary.port + 100, ['--replicaof', '127.0.0.1', String(primary.port)]);
    own.push(replica);
    await replica.start();
    const { pump } = await startPipeline({ REDIS_URL: replica.url });
    const body = await waitFor(
      'healthz names the refusal',
      async () => {
        const res = await fetch(`http://127.0.0.1:${pump.port}/healthz`);
        const text = await res.text();
        return res.status === 503 && text.includes('mirror-redis') ? text : false;
      },
      30_000,
      200,
    );
    expect(body).toMatch(/READONLY/);
    await sleep(8000); // retried with backoff meanwhile
    expect(logged(pump, 'Redis refused the check or the rebuild')).toBe(1);
    expect(pump.child.exitCode).toBeNull();
    expect(Number((await s.pool.query("select count(*)::int n from proc_state where state = 'DEAD'")).rows[0].n)).toBe(0);
  }, 120_000);
});
