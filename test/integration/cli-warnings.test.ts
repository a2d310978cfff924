// No warning of a dependency reaches a CLI's output. kafkajs 2.2.4's request queue arms a timer
// with a negative delay on every connection (Node ≥ 24 prints a TimeoutNegativeWarning for it);
// lib/db/kafkajs.ts fixes the queue, and every import of kafkajs goes through it (npm run
// check:deps, rule kafkajs-through-its-fix). The CLIs that connect to Kafka, run as an operator runs
// them against the machine's broker: their whole output is free of "Warning".
import { afterAll, describe, expect, it } from 'vitest';
import { testEnv } from '../support/env.ts';
import { runCli } from '../support/processes.ts';
import { createdTopics, deleteTopics, topicWith } from './dispatch-support.ts';

const env = { ...process.env, ...testEnv() };
/** Lines that carry a warning of Node or of a dependency (`(node:1234) XxxWarning: …`). */
const warnings = (r: { out: string; err: string }) => `${r.out}\n${r.err}`.split('\n').filter((l) => /Warning\b/.test(l));

afterAll(async () => deleteTopics(createdTopics()));

describe('CLIs that connect to Kafka print no dependency warning', () => {
  it('scripts/kafka/check.mjs --ping (scripts/services asks the broker with it)', async () => {
    const r = await runCli(process.execPath, ['scripts/kafka/check.mjs', '--ping'], env);
    expect(r.code).toBe(0);
    expect(warnings(r)).toEqual([]);
  }, 60_000);

  it('npm run kafka:tail', async () => {
    const topic = await topicWith('warnings', {});
    const r = await runCli('npm', ['run', '--silent', 'kafka:tail', '--', '--topic', topic, '--from-beginning', '--idle', '2'], env);
    expect(r.code).toBe(0);
    expect(r.err).toContain(`kafka:tail: reading ${topic}`);
    expect(warnings(r)).toEqual([]);
  }, 60_000);
});
