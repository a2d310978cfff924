// The watches' one loop (lib/runtime/watch.ts): the backoff read as data, a stop that ends a
// delay at once, the start race (a first check that hangs does not keep the process from
// starting), ticks that never overlap, and the verdict in /healthz's conditions. Time is a
// ManualClock where the behaviour is about time; the delays are real only where a stop or a
// start race must end them.
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../../lib/core/clock.ts';
import { WATCH } from '../../../lib/core/tuning.ts';
import { clearCondition, conditions } from '../../../lib/runtime/conditions.ts';
import { backoffMs, Loop, mirrorBehind, mirrorRebuilds, Refused, Watch } from '../../../lib/runtime/watch.ts';

const log = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const condition = (name: string) => conditions().find((c) => c.name === name)?.reason;
/** A loop on the system clock with a fixed period. */
const loopOf = (everyMs: number, tick: () => Promise<void>) => new Loop({ clock: systemClock, every: () => everyMs, tick });

afterEach(() => {
  for (const c of conditions()) clearCondition(c.name);
});

describe('backoffMs: one rule, its data in lib/core/tuning.ts', () => {
  it.each([
    [1, 5_000],
    [2, 10_000],
    [3, 20_000],
    [4, 40_000],
    [5, 60_000],
    [50, 60_000],
  ])('a refused repair, after %i refusal(s) in a row: %i ms', (n, ms) => expect(backoffMs(WATCH.refusedBackoff, n)).toBe(ms));

  it.each([1, 2, 9])('the pool watch, server unreachable %i time(s) in a row: 5 s every time', (n) => expect(backoffMs(WATCH.pool.unreachableBackoff, n)).toBe(5_000));

  it('does not overflow after a very long streak', () => expect(backoffMs({ firstMs: 1, capMs: 7 }, 10_000)).toBe(7));
});

describe('Loop', () => {
  it('stop during a delay ends it at once and resolves after the running tick', async () => {
    let ticks = 0;
    const loop = loopOf(60_000, async () => void ticks++);
    await loop.start();
    expect(ticks).toBe(1);
    const t0 = Date.now();
    await loop.stop(); // the loop sits in its 60 s delay
    expect(Date.now() - t0).toBeLessThan(100);
    await sleep(20);
    expect(ticks).toBe(1);
    expect(await loop.tickNow()).toBeUndefined(); // stopped: no tick runs
    expect(ticks).toBe(1);
  });

  it('stop while a tick runs waits for that tick, and no tick starts after it', async () => {
    let release = () => {};
    let ticks = 0;
    const loop = loopOf(0, () => (ticks++, new Promise<void>((r) => (release = r))));
    void loop.start();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await sleep(20);
    expect(stopped).toBe(false);
    release();
    await stopping;
    await sleep(20);
    expect(ticks).toBe(1);
  });

  it('ticks never overlap: callers during a tick share the one right after it', async () => {
    let running = 0;
    let most = 0;
    let ticks = 0;
    const loop = loopOf(60_000, async () => {
      ticks++;
      most = Math.max(most, ++running);
      await sleep(30);
      running--;
    });
    const first = loop.tickNow();
    const asked = [loop.tickNow(), loop.tickNow(), loop.tickNow()];
    await Promise.all([first, ...asked]);
    expect([ticks, most]).toEqual([2, 1]);
    await loop.stop();
  });

  it('a tick asked for during the delay runs at once and the period starts again from it', async () => {
    const at: number[] = [];
    const loop = loopOf(300, async () => void at.push(Date.now()));
    await loop.start();
    await sleep(50);
    await loop.tickNow();
    await sleep(200); // 250 ms after the first tick, 200 after the asked one: no scheduled tick yet
    expect(at).toHaveLength(2);
    await sleep(200);
    expect(at).toHaveLength(3);
    await loop.stop();
  });

  it('a failed tick does not stop the loop', async () => {
    let ticks = 0;
    const loop = loopOf(10, async () => {
      ticks++;
      throw new Error('boom');
    });
    await loop.start();
    await sleep(100);
    await loop.stop();
    expect(ticks).toBeGreaterThan(2);
  });
});

describe('Watch', () => {
  it('start race: a first check that hangs keeps "not checked yet" and the process starts after WATCH.startWaitTimeouts I/O deadlines', async () => {
    let answer = () => {};
    const w = new Watch<never>({
      condition: 'unit-hang',
      pendingCondition: 'unit-hang',
      clock: systemClock,
      log,
      timeoutMs: 25,
      everyMs: 60_000,
      check: () => new Promise((r) => (answer = () => r(null))),
      status: () => ({ problem: null, behind: 0 }),
    });
    const t0 = Date.now();
    await w.start();
    const waited = Date.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(25 * WATCH.startWaitTimeouts - 5);
    expect(waited).toBeLessThan(25 * WATCH.startWaitTimeouts + 400);
    expect(condition('unit-hang')).toBe('not checked yet (start-up)');
    answer(); // the check answers late: its verdict still counts
    await sleep(10);
    expect(condition('unit-hang')).toBeUndefined();
    await w.stop();
  });

  it('a refused repair: one ERROR line per reason, retried after the backoff (on the injected clock), the condition names it; healed once accepted', async () => {
    const clock = new ManualClock('2026-12-01T00:00:00Z');
    const lines: string[] = [];
    const logged = pino({ level: 'info' }, { write: (s: string) => void lines.push((JSON.parse(s) as { msg: string }).msg) });
    let refuse = true;
    let repairs = 0;
    let behind = 1;
    const w = new Watch<string>({
      condition: 'unit-store',
      store: 'redis',
      clock,
      log: logged,
      timeoutMs: 100,
      everyMs: 60_000,
      check: async () => (behind ? 'lost' : null),
      repair: async () => {
        repairs++;
        if (refuse) throw new Refused('the store refused: READONLY');
        behind = 0;
        w.rebuilt();
      },
      status: () => ({ problem: null, behind }),
    });
    const rebuildsBefore = (await mirrorRebuilds.get()).values.find((v) => v.labels.store === 'redis')?.value ?? 0;
    await w.check();
    expect(repairs).toBe(1);
    expect(condition('unit-store')).toBe('the store refused: READONLY (tried again in 5 s)');
    await w.check(); // within the backoff: no repair
    expect(repairs).toBe(1);
    clock.advance(5_000);
    await w.check(); // second refusal: 10 s now, same reason, no new line
    expect(repairs).toBe(2);
    expect(condition('unit-store')).toBe('the store refused: READONLY (tried again in 10 s)');
    clock.advance(9_999);
    await w.check();
    expect(repairs).toBe(2);
    refuse = false;
    clock.advance(1);
    await w.check();
    expect(repairs).toBe(3);
    expect(condition('unit-store')).toBeUndefined();
    expect(lines.filter((l) => l.includes('READONLY'))).toEqual(['the store refused: READONLY; retried with backoff']);
    expect(lines).toContain('redis: the repair works again');
    expect((await mirrorBehind.get()).values.find((v) => v.labels.store === 'redis')?.value).toBe(0);
    expect((await mirrorRebuilds.get()).values.find((v) => v.labels.store === 'redis')?.value).toBe(rebuildsBefore + 1);
    await w.stop();
  });

  it('a check that cannot run before any verdict names its error; after a verdict it keeps the verdict', async () => {
    let fail = true;
    const w = new Watch<never>({
      condition: 'unit-first',
      pendingCondition: 'unit-first',
      clock: systemClock,
      log,
      timeoutMs: 100,
      everyMs: 10_000,
      behindEveryMs: 2_000,
      check: async () => {
        if (fail) throw Object.assign(new Error('connect ECONNREFUSED'), { name: 'KafkaJSConnectionError' });
        return null;
      },
      status: () => ({ problem: null, behind: 0 }),
    });
    await w.check();
    expect(condition('unit-first')).toBe('not checked yet: the check could not run (KafkaJSConnectionError: connect ECONNREFUSED); retried every 2000 ms');
    fail = false;
    await w.check();
    expect(condition('unit-first')).toBeUndefined();
    fail = true;
    await w.check();
    expect(condition('unit-first')).toBeUndefined();
    await w.stop();
  });

  it('stop clears its conditions and gauge at once, before the running check ends', async () => {
    let answer = () => {};
    const w = new Watch<never>({
      condition: 'unit-stop',
      pendingCondition: 'unit-stop',
      store: 'msg-topic',
      clock: systemClock,
      log,
      timeoutMs: 100,
      everyMs: 60_000,
      check: () => new Promise((r) => (answer = () => r(null))),
      status: () => ({ problem: 'lost', behind: 3 }),
    });
    void w.check();
    const stopping = w.stop();
    expect(condition('unit-stop')).toBeUndefined();
    expect((await mirrorBehind.get()).values.find((v) => v.labels.store === 'msg-topic')?.value).toBe(0);
    answer();
    await stopping;
    expect(condition('unit-stop')).toBeUndefined(); // the late verdict is not published
  });
});
