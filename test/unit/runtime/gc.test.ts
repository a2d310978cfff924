// lib/runtime/gc.ts: releaseMemory collects this thread's garbage at once and gives the heap
// back, in a process started without --expose-gc (as vitest starts this one).
import { describe, expect, it } from 'vitest';
import { collectGarbage, releaseMemory, releaseWhileIdle } from '../../../lib/runtime/gc.ts';

describe('releaseMemory', () => {
  it('collects garbage that V8 would have left in the heap, without --expose-gc on the command line', () => {
    expect(process.execArgv).not.toContain('--expose-gc');
    releaseMemory();
    const base = process.memoryUsage().heapUsed;
    // ~80 MB of objects that outlive the young generation, then let go
    let kept: { i: number; s: string }[] | null = Array.from({ length: 800_000 }, (_, i) => ({ i, s: `flight-${i}-${'x'.repeat(40)}` }));
    const held = process.memoryUsage();
    expect(held.heapUsed - base).toBeGreaterThan(50 * 2 ** 20);
    expect(kept.length).toBe(800_000);
    kept = null;
    releaseMemory();
    const after = process.memoryUsage();
    expect(after.heapUsed - base).toBeLessThan(10 * 2 ** 20);
    expect(after.heapTotal).toBeLessThan(held.heapTotal - 40 * 2 ** 20); // the heap shrank, not only its use
    releaseMemory(); // again: the same function, no new flag
  });
});

describe('collectGarbage', () => {
  it('frees what a large message left (the heap in use falls back) in one collection; giving the heap back is left to releaseMemory', () => {
    releaseMemory();
    const base = process.memoryUsage().heapUsed;
    let kept: { i: number; s: string }[] | null = Array.from({ length: 800_000 }, (_, i) => ({ i, s: `flight-${i}-${'x'.repeat(40)}` }));
    expect(process.memoryUsage().heapUsed - base).toBeGreaterThan(50 * 2 ** 20);
    expect(kept.length).toBe(800_000);
    kept = null;
    collectGarbage();
    expect(process.memoryUsage().heapUsed - base).toBeLessThan(10 * 2 ** 20);
    releaseMemory(); // what the idle minute does after it
  });
});

describe('releaseWhileIdle', () => {
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  it('releases at every tick of an idle period, none while the event loop was busy', async () => {
    let released = 0;
    const stop = releaseWhileIdle(100, 0.05, () => released++);
    try {
      // busy: the loop blocked ~90 % of each period for ~5 periods
      const until = Date.now() + 500;
      while (Date.now() < until) {
        const slice = Date.now() + 45;
        while (Date.now() < slice) {
          /* work */
        }
        await pause(5);
      }
      expect(released).toBe(0);
      await pause(120); // the tick covering the end of the busy stretch
      released = 0;
      await pause(600); // idle: about six ticks (fewer if the machine delays timers)
      expect(released).toBeGreaterThanOrEqual(2);
    } finally {
      stop();
    }
    const after = released;
    await pause(250);
    expect(released).toBe(after); // stopped
  });
});
