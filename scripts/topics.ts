// npm run topics -- [--msg] [--schd] [--state]   (--help: usage)
// The gateway's topics created the gateway's way (docs/consumers.md "Topic settings"): what each
// dispatcher does at its start (lib/dispatch/kafka.ts ensureTopics) — a missing topic created with
// its partitions, replication factor min(3, brokers), min.insync.replicas and cleanup.policy /
// retention; an existing one's settings checked and the differences printed, never changed. For a
// cluster where the gateway's own principal may not create topics: run it with an admin's
// KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD (docs/operations.md "Derived stores: the state topic").
import { cliArgs } from './args.ts';

const args = cliArgs({
  name: 'topics',
  flags: ['--msg', '--schd', '--state'],
  positional: 'none',
  usage: `usage: npm run topics -- [--msg] [--schd] [--state]
  Creates the gateway's topics that do not exist with its settings (as each dispatcher does at
  start) and checks the settings of those that exist (differences printed, never changed).
  --msg, --schd, --state   only these (default: all three: msgx.kafka.msg-topic, schd-topic, state-topic)
Reads KAFKA_BROKERS and its security settings. Exit 0 when every topic exists with the gateway's
settings, 1 when one differs, 2 when the cluster refuses or cannot be reached.`,
});

const { loadConfig, slices } = await import('../lib/core/config.ts');
const { createKafkaEdge, kafkaOptions, TopicCreationError } = await import('../lib/dispatch/kafka.ts');
const { createLogger } = await import('../lib/runtime/log.ts');
const { explained } = await import('../lib/db/tls.ts');

const kafka = slices(loadConfig()).kafka;
// the dispatchers' specs (workers/*-dispatch.ts): the schd topic has one partition, the state topic is compacted
const all = {
  '--msg': { topic: kafka.msgTopic },
  '--schd': { topic: kafka.schdTopic, partitions: 1 },
  '--state': { topic: kafka.stateTopic, compacted: true },
};
const chosen = Object.entries(all)
  .filter(([flag]) => args.flags.size === 0 || args.flags.has(flag))
  .map(([, spec]) => spec);
const edge = createKafkaEdge(kafkaOptions(kafka, createLogger('topics', 'silent')));
try {
  const r = await edge.ensureTopics(chosen);
  for (const t of chosen) process.stdout.write(`${t.topic}: ${r.created.includes(t.topic) ? 'created' : 'exists'}\n`);
  for (const m of r.mismatched) process.stdout.write(`${m.topic}: ${m.setting} is ${m.actual ?? '(unset)'}, the gateway's is ${m.expected}\n`);
  process.exitCode = r.mismatched.length ? 1 : 0;
} catch (e) {
  process.stderr.write(`topics: ${e instanceof TopicCreationError ? e.message : explained('kafka', e).message}\n`);
  process.exitCode = 2;
} finally {
  await edge.close();
}
