import { describe, expect, it } from 'vitest';
import { msgValue, schdRecord } from '../../../lib/contract/kafka.ts';
import { afterFailure, chunkBySize, offsetsOf, releasable, splitSchd, type OutboxEvent } from '../../../lib/dispatch/plan.ts';

const now = new Date('2026-12-01T00:00:00Z');
const later = new Date('2026-12-01T00:00:05Z');
const earlier = new Date('2026-11-30T23:59:55Z');
const ev = (eventId: number, flid: string, state: OutboxEvent['state'] = 'PENDING', nextAttemptAt: Date | null = null): OutboxEvent => ({ eventId, flid, state, nextAttemptAt });

describe('releasable: the msg hold rule (never overtake within a FLID)', () => {
  it.each([
    ['all due: EVENT_ID order', [ev(3, 'A'), ev(1, 'A'), ev(2, 'B')], 10, [1, 2, 3]],
    ['limit takes an EVENT_ID prefix', [ev(1, 'A'), ev(2, 'B'), ev(3, 'A')], 2, [1, 2]],
    ['SENT and SKIPPED earlier events do not hold', [ev(1, 'A', 'SENT'), ev(2, 'A', 'SKIPPED'), ev(3, 'A')], 10, [3]],
    ['a DEAD event holds every later event of its FLID only', [ev(1, 'A', 'DEAD'), ev(2, 'A'), ev(3, 'B'), ev(4, 'A')], 10, [3]],
    ['a backing-off event holds its FLID', [ev(1, 'A', 'PENDING', later), ev(2, 'A'), ev(3, 'B')], 10, [3]],
    ['a retry that is due goes first, then the rest', [ev(1, 'A', 'PENDING', earlier), ev(2, 'A'), ev(3, 'B', 'PENDING', now)], 10, [1, 2, 3]],
    ['a later event not due holds nothing before it', [ev(1, 'A'), ev(2, 'A', 'PENDING', later), ev(3, 'A')], 10, [1]],
    ['a DEAD event after the pending ones holds nothing before it', [ev(1, 'A'), ev(2, 'A', 'DEAD'), ev(3, 'A')], 10, [1]],
    ['nothing pending', [ev(1, 'A', 'SENT'), ev(2, 'B', 'DEAD')], 10, []],
  ] as const)('%s', (_name, events, limit, expected) => {
    expect(releasable(events as unknown as OutboxEvent[], now, limit)).toEqual(expected);
  });
});

describe('afterFailure: backoff ladder, last step repeats, DEAD after max attempts', () => {
  const policy = { ladder: [1000, 5000, 30_000], maxAttempts: 6 };
  it.each([
    [0, { state: 'PENDING', attempts: 1, inMs: 1000 }],
    [1, { state: 'PENDING', attempts: 2, inMs: 5000 }],
    [2, { state: 'PENDING', attempts: 3, inMs: 30_000 }],
    [3, { state: 'PENDING', attempts: 4, inMs: 30_000 }],
    [4, { state: 'PENDING', attempts: 5, inMs: 30_000 }],
    [5, { state: 'DEAD', attempts: 6, inMs: null }],
    [9, { state: 'DEAD', attempts: 10, inMs: null }],
  ] as const)('after %i failed attempts', (attempts, want) => {
    const r = afterFailure(attempts, policy, now);
    expect({ state: r.state, attempts: r.attempts, inMs: r.nextAttemptAt ? r.nextAttemptAt.getTime() - now.getTime() : null }).toEqual(want);
  });
  it('an unreachable broker never makes an event DEAD and counts no attempt: it retries on the ladder', () => {
    const r = afterFailure(20, policy, now, true);
    expect(r.state).toBe('PENDING');
    expect(r.attempts).toBe(20);
    expect(r.nextAttemptAt!.getTime() - now.getTime()).toBe(policy.ladder[policy.ladder.length - 1]);
    expect(afterFailure(0, policy, now, true)).toMatchObject({ state: 'PENDING', attempts: 0 });
  });
  it('max-attempts 1: the first failure is DEAD', () => expect(afterFailure(0, { ladder: [1000], maxAttempts: 1 }, now).state).toBe('DEAD'));
});

describe('offsetsOf: per-record offsets from per-partition base offsets', () => {
  it.each([
    ['one partition', [0, 0, 0], [{ partition: 0, baseOffset: '41' }], ['41', '42', '43']],
    [
      'interleaved partitions keep their own counters',
      [2, 0, 2, 1, 0],
      [
        { partition: 0, baseOffset: '10' },
        { partition: 1, baseOffset: '0' },
        { partition: 2, baseOffset: '7' },
      ],
      ['7', '10', '8', '0', '11'],
    ],
    ['beyond 2^53', [0, 0], [{ partition: 0, baseOffset: '9007199254740993' }], ['9007199254740993', '9007199254740994']],
    ['a partition missing from the answer', [0, 1], [{ partition: 0, baseOffset: '5' }], ['5', null]],
    ['a negative base offset (acks=0 style) is unknown', [0], [{ partition: 0, baseOffset: '-1' }], [null]],
  ] as const)('%s', (_n, parts, acks, want) => {
    expect(offsetsOf(parts, acks)).toEqual(want);
  });
});

describe('chunkBySize', () => {
  it.each([
    [[10, 10, 10], 25, [[0, 1], [2]]],
    [[10, 10, 10], 30, [[0, 1, 2]]],
    [[40, 10, 10], 25, [[0], [1, 2]]],
    [[], 10, []],
  ])('%j under %i', (sizes, max, want) => expect(chunkBySize(sizes, max)).toEqual(want));
});

describe('splitSchd: SCHD/FLTR records under max-record-bytes', () => {
  const state = (flid: string, pad = 0) => JSON.stringify({ FLID: flid, STATE_VERSION: 1, X: 'x'.repeat(pad) });

  it('one record holds everything that fits, RECS = count, FLTR in order', () => {
    const states = ['1', '2', '3'].map((f) => state(f));
    const { records, oversize } = splitSchd(states, 10_000);
    expect(oversize).toEqual([]);
    expect(records).toHaveLength(1);
    expect(JSON.parse(records[0].value)).toEqual({ SCHD: { RECS: 3, FLTR: states.map((s) => JSON.parse(s)) } });
    expect(records[0].members).toEqual([0, 1, 2]);
  });

  it('the record shape is exactly {"SCHD":{"RECS":n,"FLTR":[…]}}', () => {
    expect(schdRecord(['{"FLID":"1"}'])).toBe('{"SCHD":{"RECS":1,"FLTR":[{"FLID":"1"}]}}');
    expect(schdRecord([])).toBe('{"SCHD":{"RECS":0,"FLTR":[]}}');
  });

  it.each([50, 120, 200, 333, 1000, 4096])('every record ≤ %i bytes, nothing lost, order kept', (max) => {
    const states = Array.from({ length: 60 }, (_, i) => state(String(i + 1), (i * 7) % 40));
    const { records, oversize } = splitSchd(states, max);
    for (const r of records) expect(Buffer.byteLength(r.value)).toBeLessThanOrEqual(max);
    const members = records.flatMap((r) => r.members);
    expect([...members, ...oversize].sort((a, b) => a - b)).toEqual(states.map((_, i) => i));
    expect(members).toEqual([...members].sort((a, b) => a - b));
    for (const r of records) {
      const v = JSON.parse(r.value);
      expect(v.SCHD.RECS).toBe(r.members.length);
      expect(v.SCHD.FLTR.map((f: { FLID: string }) => f.FLID)).toEqual(r.members.map((i) => String(i + 1)));
    }
    // greedy: a record plus the next state would not have fitted
    records.slice(0, -1).forEach((r, k) => {
      const nextIdx = records[k + 1].members[0];
      const grown = schdRecord([...r.members, nextIdx].map((i) => states[i]));
      expect(Buffer.byteLength(grown)).toBeGreaterThan(max);
    });
  });

  it('a limit that fits exactly', () => {
    const states = [state('1'), state('2')];
    const exact = Buffer.byteLength(schdRecord(states));
    expect(splitSchd(states, exact).records).toHaveLength(1);
    expect(splitSchd(states, exact - 1).records).toHaveLength(2);
  });

  it('a state larger than a record alone is reported, not sent', () => {
    const states = [state('1'), state('2', 500), state('3')];
    const { records, oversize } = splitSchd(states, 200);
    expect(oversize).toEqual([1]);
    expect(records.flatMap((r) => r.members)).toEqual([0, 2]);
  });

  it('counts UTF-8 bytes, not characters', () => {
    const s = JSON.stringify({ FLID: '1', T: '机场'.repeat(30) }); // 3 bytes per character
    const size = Buffer.byteLength(schdRecord([s]));
    expect(splitSchd([s], size).oversize).toEqual([]);
    expect(splitSchd([s], s.length + 40).oversize).toEqual([0]);
  });
});

describe('msgValue: one JSON style on both topics', () => {
  it('compact JSON, contract key order, whatever order the payload came in', () => {
    // as Postgres jsonb hands it back: shorter keys first
    const upsert = { OP: 'UPSERT', FLID: '15', STYP: 'STND', TYPE: 'FLOP', MSG_ID: 4711, CHANGED: ['STND'], EVENT_ID: 3, UPDATED_AT: '2026-12-01T08:00:03+08:00', STATE_VERSION: 4 };
    expect(msgValue(upsert)).toBe('{"EVENT_ID":3,"FLID":"15","STATE_VERSION":4,"UPDATED_AT":"2026-12-01T08:00:03+08:00","OP":"UPSERT","MSG_ID":4711,"TYPE":"FLOP","STYP":"STND","CHANGED":["STND"]}');
    const purge = { FLID: '9', PURGED: true, DELETED: true, EVENT_ID: 8, UPDATED_AT: '2026-12-01T08:00:03+08:00', STATE_VERSION: 2 };
    expect(msgValue(purge)).toBe('{"EVENT_ID":8,"FLID":"9","STATE_VERSION":2,"UPDATED_AT":"2026-12-01T08:00:03+08:00","DELETED":true,"PURGED":true}');
    // a key the contract does not know yet is kept, after the known ones, sorted
    expect(msgValue({ Z: 1, A: 2, FLID: '1' })).toBe('{"FLID":"1","A":2,"Z":1}');
    expect(JSON.parse(msgValue(upsert))).toEqual(upsert);
  });
});
