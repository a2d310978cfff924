// lib/runtime/gc.ts: releaseMemory collects this thread's garbage at once and gives the heap
// back, in a process started without --expose-gc (as vitest starts this one).
import { describe, expect, it } from 'vitest';
import { releaseMemory } from '../../../lib/runtime/gc.ts';

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
