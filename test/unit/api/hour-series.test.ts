// The console's last-hour series (lib/api/console-data.ts hourSeries), pure: minute buckets,
// backlog and dispatch pending counted back from now, outcomes and latency per terminal minute.
import { describe, expect, it } from 'vitest';
import { hourSeries, type EventTimes, type ProcTimes } from '../../../lib/api/console-data.ts';

const NOW = new Date('2026-12-01T10:30:20Z'); // minute 59 = 10:30, minute 0 = 09:31
const ago = (min: number, sec = 0) => new Date(NOW.getTime() - min * 60_000 - sec * 1000);
const proc = (state: string, enq: Date, term: Date | null = null, received: Date | null = null): ProcTimes => ({ state, enqueued_at: enq, terminal_at: term, received });
const ev = (state: string, created: Date, sent: Date | null = null): EventTimes => ({ state, created_at: created, sent_at: sent });

describe('hourSeries', () => {
  it('60 minutes ending with the current one', () => {
    const h = hourSeries([], [], NOW);
    expect(h.start.toISOString()).toBe('2026-12-01T09:31:00.000Z');
    expect(h.backlog).toHaveLength(60);
    expect(h.latencySeconds.p50.every((x) => x === null)).toBe(true);
  });

  it('backlog at each minute end: open now, minus later arrivals, plus later departures', () => {
    const h = hourSeries(
      [
        proc('PENDING', ago(90)), // open for the whole hour
        proc('FAILED', ago(10)), // arrived 10 min ago
        proc('SUCCEEDED', ago(40), ago(20)), // open from 40 to 20 min ago
      ],
      [],
      NOW,
    );
    expect(h.backlog[0]).toBe(1);
    expect(h.backlog[59 - 40]).toBe(2); // the minute it arrived
    expect(h.backlog[59 - 21]).toBe(2);
    expect(h.backlog[59 - 20]).toBe(1); // the minute it left
    expect(h.backlog[59 - 10]).toBe(2);
    expect(h.backlog[59]).toBe(2);
  });

  it('outcomes per terminal minute; latency from the inbox received time, else from enqueue', () => {
    const h = hourSeries(
      [
        proc('SUCCEEDED', ago(5, 30), ago(5), ago(5, 40)), // 40 s after receipt
        proc('DEAD', ago(5, 20), ago(5)), // 20 s after enqueue
        proc('SKIPPED', ago(3), ago(3)),
        proc('SUCCEEDED', ago(120), ago(61)), // before the hour: not counted
      ],
      [],
      NOW,
    );
    const m = 59 - 5;
    expect([h.applied.SUCCEEDED[m], h.applied.DEAD[m], h.applied.SKIPPED[59 - 3]]).toEqual([1, 1, 1]);
    expect(h.applied.SUCCEEDED.reduce((a, b) => a + b)).toBe(1);
    expect([h.latencySeconds.p50[m], h.latencySeconds.max[m]]).toEqual([20, 40]);
  });

  it('dispatch pending counted back: created after a minute is not pending in it; sent after it was', () => {
    const h = hourSeries([], [ev('PENDING', ago(100)), ev('PENDING', ago(10)), ev('SENT', ago(30), ago(15))], NOW);
    expect(h.dispatchPending[0]).toBe(1);
    expect(h.dispatchPending[59 - 30]).toBe(2);
    expect(h.dispatchPending[59 - 15]).toBe(1);
    expect(h.dispatchPending[59 - 10]).toBe(2);
    expect(h.dispatchPending[59]).toBe(2);
  });
});
