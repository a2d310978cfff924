// A test's private Kafka broker through scripts/services (its own port, its state in
// .local/kafka/port-<port>/), so that an outage test never stops the broker every other file uses.
// It starts with the client compiler only (KAFKA_JVM_OPTS), as the TLS tests' brokers and the
// console tools do: about a third less CPU and a second less to start, for a broker that only
// carries a test's few hundred records.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { endWithThisProcess } from './processes.ts';

const run = promisify(execFile);

/** The shared broker's port (scripts/services' default): never stopped or started by a test. */
const SHARED_PORT = 9092;

/**
 * `scripts/services kafka-start|kafka-stop` for the private broker on `port`; `advertisedPort`: a
 * fault proxy's; `controllerPort`: its controller's (default port + 1).
 */
export async function privateKafka(cmd: 'kafka-start' | 'kafka-stop', port: number, advertisedPort?: number, controllerPort?: number): Promise<void> {
  if (port === SHARED_PORT) throw new Error(`privateKafka: port ${SHARED_PORT} is the shared broker's; a test starts its own`);
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_JVM_OPTS: '-XX:TieredStopAtLevel=1',
    ...(advertisedPort ? { KAFKA_ADVERTISED_PORT: String(advertisedPort) } : {}),
    ...(controllerPort ? { KAFKA_CONTROLLER_PORT: String(controllerPort) } : {}),
  };
  await run('scripts/services', [cmd], { timeout: 120_000, env });
  if (cmd === 'kafka-start') endWithThisProcess(`.local/kafka/port-${port}/kafka.pid`); // the broker's own session (setsid)
}
