// Opened (lib/runtime/opened.ts): what a duty's start opened, closed last first, bounded, never
// rejecting, once. The process closes it when the duty stops and when a start fails halfway
// (test/integration/start-refusal.test.ts shows the second through the pump's entry point).
import { describe, expect, it } from 'vitest';
import { Opened } from '../../../lib/runtime/opened.ts';

const never = () => new Promise<void>(() => {});

describe('Opened', () => {
  it('add returns what it was given; close runs every closer with it, the last added first', async () => {
    const opened = new Opened();
    const order: string[] = [];
    const pool = opened.add({ name: 'pool' }, (p) => order.push(p.name));
    const watch = opened.add({ name: 'watch' }, (w) => order.push(w.name));
    expect(pool.name).toBe('pool');
    expect(watch.name).toBe('watch');
    expect(opened.size).toBe(2);
    await opened.close(1000, () => {});
    expect(order).toEqual(['watch', 'pool']);
    expect(opened.size).toBe(0);
  });

  it('every closer starts before any is awaited: one that waits does not hold back those added before it', async () => {
    const opened = new Opened();
    const started: string[] = [];
    opened.add('pool', () => started.push('pool'));
    opened.add('client', () => {
      started.push('client');
      return new Promise<void>((r) => setTimeout(r, 50));
    });
    await opened.close(1000, () => {});
    expect(started).toEqual(['client', 'pool']);
  });

  const cases: [string, () => unknown, RegExp][] = [
    [
      'throws',
      () => {
        throw new Error('end failed');
      },
      /end failed/,
    ],
    ['rejects', () => Promise.reject(new Error('disconnect failed')), /disconnect failed/],
    ['never ends (a frozen connection)', never, /did not answer within 50 ms/],
  ];
  it.each(cases)('a closer that %s is reported, the others still run, close resolves (at its bound at the latest)', async (_what, bad, reason) => {
    const opened = new Opened();
    const closed: string[] = [];
    opened.add('first', () => closed.push('first'));
    opened.add('bad', bad);
    opened.add('last', () => closed.push('last'));
    const failures: unknown[] = [];
    await opened.close(50, (e) => failures.push(e));
    expect(closed).toEqual(['last', 'first']);
    expect(failures.map((e) => (e as Error).message)).toEqual([expect.stringMatching(reason)]);
  });

  it('a second close closes nothing again', async () => {
    const opened = new Opened();
    let n = 0;
    opened.add('pool', () => n++);
    await opened.close(1000, () => {});
    await opened.close(1000, () => {});
    expect(n).toBe(1);
  });
});
