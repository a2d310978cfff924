// The derived topics' detection rules (lib/watches/topics.ts) and the send-failure classes
// (lib/dispatch/send.ts), pure: tables of cases.
import { describe, expect, it } from 'vitest';
import { afterFailure } from '../../../lib/dispatch/plan.ts';
import { isClusterUnavailable, isUnknownTopic } from '../../../lib/dispatch/send.ts';
import { describeProblems, lostPartitions, topicProblems, type Problem, type TopicView } from '../../../lib/watches/topics.ts';

const view = (ends: [number, number][] | null, policy?: string | null): TopicView => ({ exists: ends !== null, ends: new Map((ends ?? []).map(([p, h]) => [p, BigInt(h)])), policy });
const rec = (...r: [number, number][]) => r.map(([partition, next]) => ({ partition, next: BigInt(next) }));
const behind = (partition: number, end: number, recorded: number): Problem => ({ kind: 'behind', partition, end: BigInt(end), recorded: BigInt(recorded) });

describe('topicProblems: missing, wrong policy, end offsets below the recorded ones', () => {
  it.each<[string, TopicView, ReturnType<typeof rec>, string | undefined, Problem[]]>([
    [
      'fine: ends at or past every recorded offset',
      view(
        [
          [0, 10],
          [1, 7],
        ],
        'compact',
      ),
      rec([0, 10], [1, 5]),
      'compact',
      [],
    ],
    [
      'fresh install: nothing recorded, empty topic',
      view(
        [
          [0, 0],
          [1, 0],
        ],
        'compact',
      ),
      [],
      'compact',
      [],
    ],
    ['nothing recorded, topic missing: still missing', view(null), [], 'compact', [{ kind: 'missing' }]],
    ['missing says nothing else', view(null), rec([0, 10]), 'compact', [{ kind: 'missing' }]],
    [
      'recreated empty: every recorded partition behind',
      view(
        [
          [0, 0],
          [1, 0],
        ],
        'compact',
      ),
      rec([0, 10], [1, 4]),
      'compact',
      [behind(0, 0, 10), behind(1, 0, 4)],
    ],
    [
      'one partition truncated',
      view(
        [
          [0, 10],
          [1, 3],
        ],
        'compact',
      ),
      rec([0, 10], [1, 4]),
      'compact',
      [behind(1, 3, 4)],
    ],
    ['new records past the old end: not behind (the recorded offset is what counts)', view([[0, 12]], 'compact'), rec([0, 10]), 'compact', []],
    ['a recorded partition the topic lacks (fewer partitions): end 0', view([[0, 10]], 'compact'), rec([0, 10], [2, 1]), 'compact', [behind(2, 0, 1)]],
    ['cleanup.policy=delete on the state topic', view([[0, 10]], 'delete'), rec([0, 10]), 'compact', [{ kind: 'policy', expected: 'compact', actual: 'delete' }]],
    ['compact,delete is not compact', view([[0, 10]], 'compact,delete'), rec([0, 10]), 'compact', [{ kind: 'policy', expected: 'compact', actual: 'compact,delete' }]],
    ['recreated with delete: policy and offsets', view([[0, 0]], 'delete'), rec([0, 3]), 'compact', [{ kind: 'policy', expected: 'compact', actual: 'delete' }, behind(0, 0, 3)]],
    ['msg topic: the policy is not checked', view([[0, 5]], undefined), rec([0, 5]), undefined, []],
    ['policy not asked (undefined view policy): not judged', view([[0, 5]]), rec([0, 5]), 'compact', []],
  ])('%s', (_name, v, r, policy, expected) => {
    expect(topicProblems(v, r, policy)).toEqual(expected);
  });
});

describe('lostPartitions: where the recorded events are gone from', () => {
  it.each<[string, Problem[], ReturnType<typeof rec>, { partition: number; end: bigint }[]]>([
    [
      'missing topic: every recorded partition from offset 0',
      [{ kind: 'missing' }],
      rec([0, 10], [2, 4]),
      [
        { partition: 0, end: 0n },
        { partition: 2, end: 0n },
      ],
    ],
    ['behind partitions from their end offset', [behind(1, 3, 4)], rec([0, 10], [1, 4]), [{ partition: 1, end: 3n }]],
    ['a policy problem loses nothing by itself', [{ kind: 'policy', expected: 'compact', actual: 'delete' }], rec([0, 10]), []],
    ['nothing wrong', [], rec([0, 10]), []],
  ])('%s', (_name, problems, r, expected) => {
    expect(lostPartitions(problems, r)).toEqual(expected);
  });
});

describe('describeProblems names the topic and what was found', () => {
  it('one line per finding, joined', () => {
    expect(describeProblems('t', [{ kind: 'policy', expected: 'compact', actual: 'delete' }, behind(0, 0, 3)])).toBe(
      'topic t has cleanup.policy=delete, not compact; partition 0 of t ends at offset 0, below the 3 the outbox recorded',
    );
    expect(describeProblems('t', [{ kind: 'missing' }])).toBe('topic t does not exist');
  });
});

describe('isUnknownTopic: the send error of a vanished topic, however kafkajs wraps it', () => {
  it.each<[string, unknown, boolean]>([
    ['protocol error', { name: 'KafkaJSProtocolError', type: 'UNKNOWN_TOPIC_OR_PARTITION' }, true],
    ['retries exceeded wrapping it (what a send answers)', { name: 'KafkaJSNumberOfRetriesExceeded', cause: { type: 'UNKNOWN_TOPIC_OR_PARTITION' } }, true],
    ['originalError', { name: 'KafkaJSNonRetriableError', originalError: { type: 'UNKNOWN_TOPIC_ID' } }, true],
    ['a timeout', { name: 'KafkaTimeoutError', message: 'did not answer' }, false],
    ['an authorization error', { name: 'KafkaJSProtocolError', type: 'TOPIC_AUTHORIZATION_FAILED' }, false],
    ['not an object', 'boom', false],
  ])('%s → %s', (_name, e, expected) => expect(isUnknownTopic(e)).toBe(expected));

  it('such a failure costs no attempt (afterFailure as when Kafka is unreachable)', () => {
    const now = new Date('2026-12-01T00:00:00Z');
    expect(afterFailure(4, { ladder: [1000, 5000], maxAttempts: 5 }, now, true)).toEqual({ state: 'PENDING', attempts: 4, nextAttemptAt: new Date(now.getTime() + 5000) });
  });
});

describe('isClusterUnavailable: a refusal that says the cluster cannot take any record now (no attempt counted)', () => {
  it.each<[string, unknown, boolean]>([
    ['below min ISR (retries exceeded wrapping it)', { name: 'KafkaJSNumberOfRetriesExceeded', cause: { type: 'NOT_ENOUGH_REPLICAS' } }, true],
    ['below min ISR after the append', { name: 'KafkaJSProtocolError', type: 'NOT_ENOUGH_REPLICAS_AFTER_APPEND' }, true],
    ['no leader (an election)', { name: 'KafkaJSNonRetriableError', originalError: { type: 'LEADER_NOT_AVAILABLE' } }, true],
    ['the leader moved', { name: 'KafkaJSProtocolError', type: 'NOT_LEADER_OR_FOLLOWER' }, true],
    ['no connection to the leader (a broker down while another answers metadata)', { name: 'KafkaJSNumberOfRetriesExceeded', cause: { name: 'KafkaJSConnectionError' } }, true],
    ['the connection closed under the send', { name: 'KafkaJSConnectionClosedError' }, true],
    ['a request that timed out on an open connection (counts an attempt)', { name: 'KafkaJSNumberOfRetriesExceeded', cause: { name: 'KafkaJSRequestTimeoutError' } }, false],
    ["the record's own fault: too large", { name: 'KafkaJSProtocolError', type: 'MESSAGE_TOO_LARGE' }, false],
    ['an authorization error', { name: 'KafkaJSProtocolError', type: 'TOPIC_AUTHORIZATION_FAILED' }, false],
    ['a timeout', { name: 'KafkaTimeoutError', message: 'NOT_ENOUGH_REPLICAS in the text only' }, false],
  ])('%s → %s', (_name, e, expected) => expect(isClusterUnavailable(e)).toBe(expected));
});
