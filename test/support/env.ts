// Test settings: the same local services as scripts/services, the test databases of this
// worker's slot (test/support/slots.ts), and Kafka topics of this test process's own.
import { randomUUID } from 'node:crypto';
import { envName, loadConfig, type Config } from '../../lib/core/config.ts';
import { OPENABLE_READS } from '../../lib/access/routes.ts';
import { currentSlot, slotUrls } from './slots.ts';

const slot = slotUrls(currentSlot());
export const TEST_PG_URL = slot.pg;
export const TEST_INBOX_URL = slot.inbox;
export const TEST_REDIS_URL = slot.redis;
export const TEST_KAFKA = process.env.TEST_KAFKA_BROKERS ?? '127.0.0.1:9092';

/**
 * The msg, schd and state topics of every process and config this test file makes, unless it names
 * its own: never an installation's defaults (msgx.flight.*) on the machine's broker, which `npm
 * start` and the README's sample fill (a pump reading that msg topic finds EVENT_IDs its test
 * database never handed out, and holds as "Postgres is behind"). The pump only reads its msg topic
 * (the restore check; Kafka's admin never creates a topic on a read): nothing is left on the broker.
 */
const RUN = randomUUID().slice(0, 8);
export const TEST_TOPICS = { MSGX_KAFKA_MSG_TOPIC: `msgx-test.${RUN}.msg`, MSGX_KAFKA_SCHD_TOPIC: `msgx-test.${RUN}.schd`, MSGX_KAFKA_STATE_TOPIC: `msgx-test.${RUN}.state` } as const;

/** The environment of a test process or config: test services; overrides by spec key or env name. */
export function testEnv(overrides: Record<string, string> = {}, logLevel = process.env.MSGX_LOG_LEVEL ?? 'silent'): Record<string, string> {
  const env: Record<string, string> = {
    DATABASE_URL: TEST_PG_URL,
    INBOX_URL: TEST_INBOX_URL,
    REDIS_URL: TEST_REDIS_URL,
    KAFKA_BROKERS: TEST_KAFKA,
    MSGX_API_TOKEN: 'test-token',
    // The short test token needs development mode (it is never the default);
    // test/integration/api-security.test.ts runs the api as in production.
    MSGX_DEV_MODE: 'true',
    // Tests of other concerns read (and scrape /metrics, and read /healthz's reasons) without a
    // credential: every read route is opened with the documented setting. The access tests
    // (test/integration/access-*.test.ts, api-security.test.ts) set their own.
    MSGX_HTTP_ANONYMOUS_READS: OPENABLE_READS.join(','),
    MSGX_REQUESTS_DAILY_SCHEDULE_AT: '',
    MSGX_LOG_LEVEL: logLevel,
    ...TEST_TOPICS,
  };
  for (const [k, v] of Object.entries(overrides)) env[k.startsWith('msgx.') ? envName(k) : k] = v;
  return env;
}

/** A validated Config for tests; overrides use spec keys, e.g. { 'msgx.pipeline.backoff': '10ms,10ms,10ms,10ms' }. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig(testEnv(overrides));
}
