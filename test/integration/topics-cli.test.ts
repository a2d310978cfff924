// `npm run topics`, the gateway's own way to create its topics (docs/operations.md "Derived stores:
// the state topic": for a cluster where the gateway's principal may not create them), run as an
// operator runs it against the machine's broker, on topics of this file's own: a missing state
// topic is created compacted with the gateway's settings, a second run finds it as it should be,
// a topic someone created otherwise is reported (exit 1) and left as it is.
import { afterAll, describe, expect, it } from 'vitest';
import { topicSettings } from '../../lib/dispatch/kafka.ts';
import { slices } from '../../lib/core/config.ts';
import { testConfig, testEnv } from '../support/env.ts';
import { runCli } from '../support/processes.ts';
import { createdTopics, deleteTopics, describeTopic, topicWith, uniqueTopic } from './dispatch-support.ts';

afterAll(async () => deleteTopics(createdTopics()));

const topics = (env: Record<string, string>, ...flags: string[]) => runCli('npm', ['run', '--silent', 'topics', '--', ...flags], { ...process.env, ...testEnv(env) });

describe('npm run topics', () => {
  it('creates a missing state topic with the gateway settings; a second run finds it so', async () => {
    const state = uniqueTopic('topics-cli.state');
    const first = await topics({ MSGX_KAFKA_STATE_TOPIC: state }, '--state');
    expect([first.code, first.out, first.err]).toEqual([0, `${state}: created\n`, '']);
    const t = await describeTopic(state);
    expect(t.partitions).toBe(slices(testConfig()).kafka.partitions);
    expect(t.explicit).toEqual(topicSettings(0, 1, true)); // one broker here: replication factor 1, min.insync.replicas 1
    const again = await topics({ MSGX_KAFKA_STATE_TOPIC: state }, '--state');
    expect([again.code, again.out]).toEqual([0, `${state}: exists\n`]);
  }, 60_000);

  it('a topic created with other settings is reported, exit 1, and not changed', async () => {
    const msg = await topicWith('topics-cli.msg', { 'cleanup.policy': 'compact' });
    const r = await topics({ MSGX_KAFKA_MSG_TOPIC: msg }, '--msg');
    expect(r.code).toBe(1);
    expect(r.out).toContain(`${msg}: exists\n`);
    expect(r.out).toContain(`${msg}: cleanup.policy is compact, the gateway's is delete\n`);
    expect((await describeTopic(msg)).explicit['cleanup.policy']).toBe('compact');
  }, 60_000);
});
