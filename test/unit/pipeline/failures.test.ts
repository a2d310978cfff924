import { describe, expect, it } from 'vitest';
import { decide } from '../../../lib/pipeline/failures.ts';
import { classify, PipelineError } from '../../../lib/core/errors.ts';
import { loadConfig, slices } from '../../../lib/core/config.ts';

const config = loadConfig({}); // backoff 1s,5s,30s,2m; max-attempts 5

describe('failure decisions (failure classes of docs/design.md)', () => {
  it.each([
    ['MALFORMED', 0, 0, { next: 'DEAD', reason: 'MALFORMED: x', countAttempt: false }],
    ['PROTOCOL', 3, 3, { next: 'DEAD', reason: 'PROTOCOL: x', countAttempt: false }],
    ['CODEC_ERROR', 0, 0, { next: 'FAILED', retryInMs: 1000, countAttempt: true }],
    ['INTERNAL', 1, 1, { next: 'FAILED', retryInMs: 5000, countAttempt: true }],
    ['INTERNAL', 3, 3, { next: 'FAILED', retryInMs: 120_000, countAttempt: true }],
    ['INTERNAL', 4, 4, { next: 'DEAD', reason: 'EXHAUSTED(INTERNAL): x', countAttempt: true }],
    ['INFRA', 0, 0, { next: 'FAILED', retryInMs: 1000, countAttempt: false }],
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
});
