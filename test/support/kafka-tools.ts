// Kafka's own command-line tools for tests (what kafka-console-consumer.sh runs): the jars of
// scripts/kafka/tools-pom.xml resolved once with Maven (as scripts/services resolves the
// broker's) into .local/kafka-tools/classpath.txt, reused while the pom is unchanged and every
// jar is still there.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import kafkajs from 'kafkajs';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const POM = join(ROOT, 'scripts/kafka/tools-pom.xml');
const DIR = join(ROOT, '.local/kafka-tools');
const JAVA = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin/java') : 'java';

async function classpath(): Promise<string> {
  const key = createHash('sha256').update(readFileSync(POM)).digest('hex');
  const file = join(DIR, 'classpath.txt');
  const keyFile = join(DIR, 'classpath.sha256');
  if (existsSync(file) && existsSync(keyFile) && readFileSync(keyFile, 'utf8').trim() === key) {
    const cp = readFileSync(file, 'utf8').trim();
    if (cp.split(':').every((j) => existsSync(j))) return cp;
  }
  mkdirSync(DIR, { recursive: true });
  await run('mvn', ['-B', '-q', '-f', POM, 'dependency:build-classpath', `-Dmdep.outputFile=${file}`], { timeout: 300_000 });
  writeFileSync(keyFile, key);
  return readFileSync(file, 'utf8').trim();
}

export interface ConsoleRecord {
  headers: Record<string, string>;
  key: string;
  /** null: a tombstone (the console consumer prints "null"). */
  value: string | null;
}

/**
 * `kafka-console-consumer --from-beginning --property print.key=true --property print.headers=true`
 * on `topic` until `maxMessages` records were read or nothing came for `idleMs`. Without
 * `maxMessages` the read must reach the end offsets the topic had before it began (each
 * partition's last record is never compacted away): on a loaded machine the consumer's first poll
 * (group join, metadata) can outlast `idleMs` and end the tool with nothing read, so a read that
 * stopped short is done again with a longer idle time, up to three tries.
 */
export async function consoleConsume(topic: string, brokers: string, o: { maxMessages?: number; idleMs?: number } = {}): Promise<ConsoleRecord[]> {
  if (o.maxMessages) return (await consoleRead(topic, brokers, o.idleMs ?? 10_000, o.maxMessages)).map((r) => r.record);
  const ends = await endOffsets(topic, brokers);
  let idleMs = o.idleMs ?? 10_000;
  for (let attempt = 1; ; attempt++) {
    const read = await consoleRead(topic, brokers, idleMs, undefined, ends);
    const last = new Map<number, number>();
    for (const r of read) last.set(r.partition, Math.max(last.get(r.partition) ?? -1, r.offset));
    const short = [...ends].filter(([p, end]) => end > 0 && (last.get(p) ?? -1) < end - 1);
    if (short.length === 0) return read.map((r) => r.record);
    if (attempt === 3)
      throw new Error(
        `console consumer on ${topic}: partitions ${short.map(([p, end]) => `${p} (end ${end}, read to ${last.get(p) ?? 'nothing'})`).join(', ')} not read to their end after ${attempt} tries`,
      );
    idleMs *= 3;
  }
}

/** Each partition's end offset now (kafkajs admin: the high watermark). */
async function endOffsets(topic: string, brokers: string): Promise<Map<number, number>> {
  const admin = new kafkajs.Kafka({ clientId: 'console-consume-ends', brokers: brokers.split(','), logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    return new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.high)]));
  } finally {
    await admin.disconnect();
  }
}

/**
 * The console consumer's output (complete lines). With `ends`, it is stopped as soon as every
 * partition was read to the end offset it had before (the tool flushes each record as it prints
 * it), instead of waiting out its idle time; without, or if it never gets there, it ends by itself.
 */
function readUntil(args: string[], ends?: Map<number, number>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(JAVA, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });
    const want = new Map([...(ends ?? [])].filter(([, end]) => end > 0));
    let out = '';
    let err = '';
    let scanned = 0;
    let stopped = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (!ends || want.size === 0 || stopped) return;
      const complete = out.lastIndexOf('\n') + 1;
      for (const line of out.slice(scanned, complete).split('\n')) {
        const m = /^Partition:(\d+)\tOffset:(\d+)\t/.exec(line);
        if (m && Number(m[2]) >= (want.get(Number(m[1])) ?? Number.POSITIVE_INFINITY) - 1) want.delete(Number(m[1]));
      }
      scanned = complete;
      if (want.size === 0) {
        stopped = true;
        child.kill('SIGTERM');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0 || (stopped && (signal === 'SIGTERM' || code === 143))) resolve(out.slice(0, out.lastIndexOf('\n') + 1));
      else reject(new Error(`console consumer on ${args.join(' ').slice(-200)} ended with ${code ?? signal}: ${err.slice(-2000)}`));
    });
  });
}

async function consoleRead(topic: string, brokers: string, idleMs: number, maxMessages?: number, ends?: Map<number, number>): Promise<{ partition: number; offset: number; record: ConsoleRecord }[]> {
  const cp = await classpath();
  const args = [
    '-Xmx256m',
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    '-cp',
    cp,
    'org.apache.kafka.tools.consumer.ConsoleConsumer',
    '--bootstrap-server',
    brokers,
    '--topic',
    topic,
    '--from-beginning',
    '--timeout-ms',
    String(idleMs),
    '--formatter-property',
    'print.partition=true',
    '--formatter-property',
    'print.offset=true',
    '--formatter-property',
    'print.key=true',
    '--formatter-property',
    'print.headers=true',
    '--formatter-property',
    'key.separator=\t',
    '--formatter-property',
    'headers.separator=,',
    ...(maxMessages ? ['--max-messages', String(maxMessages)] : []),
  ];
  const stdout = await readUntil(args, ends);
  return stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map((line) => {
      // Partition:p \t Offset:o \t headers \t key \t value (the default formatter's order; the value is the rest of the line)
      const [p, off, h, key, ...rest] = line.split('\t');
      const value = rest.join('\t');
      const headers = h === 'NO_HEADERS' ? {} : Object.fromEntries(h.split(',').map((kv) => kv.split(':') as [string, string]));
      return { partition: Number(p.replace('Partition:', '')), offset: Number(off.replace('Offset:', '')), record: { headers, key, value: value === 'null' ? null : value } };
    });
}
