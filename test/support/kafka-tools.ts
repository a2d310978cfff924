// Kafka's own command-line tools for tests (what kafka-console-consumer.sh runs): the jars of
// scripts/kafka/tools-pom.xml resolved once with Maven (as scripts/services resolves the
// broker's) into .local/kafka-tools/classpath.txt, reused while the pom is unchanged and every
// jar is still there.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

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
 * on `topic` until `maxMessages` records were read or nothing came for `idleMs`.
 */
export async function consoleConsume(topic: string, brokers: string, o: { maxMessages?: number; idleMs?: number } = {}): Promise<ConsoleRecord[]> {
  const cp = await classpath();
  const args = [
    '-Xmx256m',
    '-cp',
    cp,
    'org.apache.kafka.tools.consumer.ConsoleConsumer',
    '--bootstrap-server',
    brokers,
    '--topic',
    topic,
    '--from-beginning',
    '--timeout-ms',
    String(o.idleMs ?? 10_000),
    '--formatter-property',
    'print.key=true',
    '--formatter-property',
    'print.headers=true',
    '--formatter-property',
    'key.separator=\t',
    '--formatter-property',
    'headers.separator=,',
    ...(o.maxMessages ? ['--max-messages', String(o.maxMessages)] : []),
  ];
  const { stdout } = await run(JAVA, args, { timeout: 180_000, maxBuffer: 256 * 1024 * 1024 });
  return stdout
    .split('\n')
    .filter((l) => l.length > 0)
    .map((line) => {
      // headers \t key \t value (the default formatter's order; the value is the rest of the line)
      const [h, key, ...rest] = line.split('\t');
      const value = rest.join('\t');
      const headers = h === 'NO_HEADERS' ? {} : Object.fromEntries(h.split(',').map((kv) => kv.split(':') as [string, string]));
      return { headers, key, value: value === 'null' ? null : value };
    });
}
