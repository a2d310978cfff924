import { describe, expect, it } from 'vitest';
import { decide, ownOutcome, probeTarget } from '../../../lib/pipeline/failures.ts';
import { classify, PipelineError } from '../../../lib/core/errors.ts';
import { loadConfig, slices } from '../../../lib/core/config.ts';

const config = loadConfig({}); // backoff 1s,5s,30s,2m; max-attempts 5

describe('failure decisions (failure classes of docs/design.md)', () => {
  it.each([
    ['MALFORMED', 0, 0, { next: 'DEAD', reason: 'MALFORMED: x', reasonClass: 'MALFORMED', countAttempt: false }],
    ['PROTOCOL', 3, 3, { next: 'DEAD', reason: 'PROTOCOL: x', reasonClass: 'PROTOCOL', countAttempt: false }],
    ['CODEC_ERROR', 0, 0, { next: 'FAILED', reasonClass: 'CODEC_ERROR', retryInMs: 1000, countAttempt: true }],
    ['INTERNAL', 1, 1, { next: 'FAILED', reasonClass: 'INTERNAL', retryInMs: 5000, countAttempt: true }],
    ['INTERNAL', 3, 3, { next: 'FAILED', retryInMs: 120_000, countAttempt: true }],
    ['INTERNAL', 4, 4, { next: 'DEAD', reason: 'EXHAUSTED(INTERNAL): x', reasonClass: 'EXHAUSTED', countAttempt: true }],
    ['INFRA', 0, 0, { next: 'FAILED', reasonClass: 'INFRA', retryInMs: 1000, countAttempt: false }],
    ['INFRA', 0, 3, { next: 'FAILED', retryInMs: 120_000, countAttempt: false }],
    ['INFRA', 0, 500, { next: 'FAILED', retryInMs: 120_000, countAttempt: false }],
  ] as const)('%s after %i attempts / %i in a row', (cls, attempts, failuresInRow, expected) => {
    expect(decide({ cls, detail: 'x' }, { attempts, failuresInRow }, slices(config).failures)).toMatchObject(expected);
  });

  it('classifies thrown values', () => {
    expect(classify(new PipelineError('PROTOCOL', 'RECS'), 'handler')).toEqual({ cls: 'PROTOCOL', detail: 'RECS' });
    expect(classify(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3306'), { code: 'ECONNREFUSED' }), 'handler').cls).toBe('INFRA');
    expect(classify(Object.assign(new Error('terminating connection'), { code: '57P01' }), 'handler').cls).toBe('INFRA');
    expect(classify(new TypeError('x is undefined'), 'decode')).toEqual({ cls: 'CODEC_ERROR', detail: 'TypeError: x is undefined' });
    expect(classify(new TypeError('x is undefined'), 'handler').cls).toBe('INTERNAL');
  });

  it.each([
    ['MALFORMED', { state: 'DEAD', reason: 'MALFORMED: x', reasonClass: 'MALFORMED' }],
    ['PROTOCOL', { state: 'DEAD', reason: 'PROTOCOL: x', reasonClass: 'PROTOCOL' }],
    ['INFRA', null],
    ['CODEC_ERROR', null],
    ['INTERNAL', null],
  ] as const)("a %s failure is the message's own outcome: %j (the one place that says so)", (cls, expected) => {
    expect(ownOutcome({ cls, detail: 'x' })).toEqual(expected);
  });

  it('an INFRA failure carries the service of the failing call only when its connection was lost', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const terminated = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    const lockTimeout = Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' });
    const statementTimeout = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    expect(classify(refused, 'handler', 'postgres')).toEqual({ cls: 'INFRA', detail: refused.message, service: 'postgres' });
    expect(classify(terminated, 'handler', 'postgres').service).toBe('postgres');
    expect(classify(new Error('Connection terminated unexpectedly'), 'handler', 'postgres').service).toBe('postgres');
    // a probe cannot tell a lock or statement timeout apart from a live server: no service, the backoff is waited out
    expect(classify(lockTimeout, 'handler', 'postgres')).toEqual({ cls: 'INFRA', detail: lockTimeout.message });
    expect(classify(statementTimeout, 'handler', 'postgres')).toEqual({ cls: 'INFRA', detail: statementTimeout.message });
    expect(classify(refused, 'handler').service).toBeUndefined();
    expect(classify(new TypeError('x is undefined'), 'handler', 'postgres')).toEqual({ cls: 'INTERNAL', detail: 'TypeError: x is undefined' });
  });

  it.each([
    ['INFRA', 'mariadb', 'mariadb'],
    ['INFRA', 'redis', 'redis'],
    ['INFRA', 'postgres', 'postgres'],
    ['INFRA', null, null],
    ['INTERNAL', 'postgres', null],
    [null, null, null],
  ] as const)('a FAILED head of class %s recorded on %s is probed on %s', (cls, service, expected) => {
    expect(probeTarget({ error_class: cls, error_service: service })).toBe(expected);
  });
});
