// npm run kafka:tail -- [--topic T …] [--from-beginning] [--idle S]   (--help: usage)
// What reached Kafka: one line per record (topic, partition, offset, key, value), from a
// consumer of its own (a fresh group id: no committed offsets, nothing shared with consumers).
import { randomUUID } from 'node:crypto';
import { cliArgs, cliConfig, reach, usageExit, type CliSpec } from './args.ts';

const spec: CliSpec = {
  name: 'kafka:tail',
  positional: 'none',
  valued: ['--topic', '--idle'],
  flags: ['--from-beginning'],
  usage: `usage: npm run kafka:tail -- [--topic T] [--from-beginning] [--idle S]
  Prints every record that reaches the topic, one line each:
    <topic> <partition>@<offset> key=<key> <value>      (a tombstone: value (tombstone))
  --topic T          the topic (default: the msg topic, msgx.kafka.msg-topic; the schd topic is
                     msgx.kafka.schd-topic, msgx.flight.schd by default)
  --from-beginning   every record still kept, not only the ones arriving from now on
  --idle S           stop after S seconds without a record (default 10; 0: never, Ctrl-C stops)
Reads KAFKA_BROKERS. Exit 0 after the idle time or Ctrl-C, 1 when Kafka refused or did not
answer (one line naming the setting to check), 2 on a bad setting.`,
};
const a = cliArgs(spec);
const idleS = a.options['--idle'] === undefined ? 10 : Number(a.options['--idle']);
if (!Number.isFinite(idleS) || idleS < 0) usageExit(spec, `--idle must be a number of seconds (0 or more), not ${a.options['--idle']}`);

const { slices } = await import('../lib/core/config.ts');
const { Kafka, logLevel } = (await import('../lib/db/kafkajs.ts')).default;
const { kafkaClientConfig, kafkaOptions } = await import('../lib/dispatch/kafka.ts');
const { createLogger } = await import('../lib/runtime/log.ts');
const { explained } = await import('../lib/db/tls.ts');
const config = await cliConfig(spec.name);
await reach(spec.name, config, ['kafka']);
const topic = a.options['--topic'] ?? config['msgx.kafka.msg-topic'];
const timeoutMs = config['msgx.io.timeout'];
const kafka = new Kafka({
  clientId: 'msgx-kafka-tail',
  // brokers, TLS and SASL as every Kafka client of the gateway (KAFKA_SECURITY_PROTOCOL and co.)
  ...kafkaClientConfig(kafkaOptions(slices(config).kafka, createLogger('kafka:tail', 'silent'))),
  connectionTimeout: Math.min(timeoutMs, 3000),
  requestTimeout: timeoutMs,
  retry: { retries: 2 },
  logLevel: logLevel.NOTHING,
});
const consumer = kafka.consumer({ groupId: `msgx-kafka-tail-${randomUUID()}`, sessionTimeout: 10_000, heartbeatInterval: 1000 });
let timer: NodeJS.Timeout | undefined;
let stopping = false;
async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  clearTimeout(timer);
  await Promise.race([consumer.disconnect().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
  // Exit once stdout (a pipe is written asynchronously) has taken every line.
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
}
const armIdle = () => {
  if (idleS === 0) return;
  clearTimeout(timer);
  timer = setTimeout(() => {
    process.stderr.write(`kafka:tail: no record for ${idleS} s; done\n`);
    void stop(0);
  }, idleS * 1000);
};
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
try {
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: a.flags.has('--from-beginning') });
  consumer.on(consumer.events.GROUP_JOIN, () => {
    process.stderr.write(`kafka:tail: reading ${topic}${a.flags.has('--from-beginning') ? ' from the beginning' : ' (new records only)'}\n`);
    armIdle();
  });
  await consumer.run({
    eachMessage: async ({ topic: t, partition, message }) => {
      const key = message.key === null ? '(none)' : message.key.toString();
      const value = message.value === null ? '(tombstone)' : message.value.toString();
      process.stdout.write(`${t} ${partition}@${message.offset} key=${key} ${value}\n`);
      armIdle();
    },
  });
} catch (e) {
  process.stderr.write(`kafka:tail: ${explained('kafka', e).message}\n`);
  await stop(1);
}
