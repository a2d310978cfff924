// Kafka over SASL_SSL (docs/operations.md "Production settings"): a single-node Kafka 4.4 broker
// started by this test (.local/tls/kafka, its own ports; the jars scripts/services cached) whose
// only client listener is SASL_SSL (SCRAM-SHA-512 and PLAIN, PEM key stores, client certificates
// requested); a CA and certificates made with openssl. With KAFKA_SECURITY_PROTOCOL=SASL_SSL,
// KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD_FILE and KAFKA_TLS_CA:
//   - the real pump (its restore check reads the msg topic), msg-dispatch and state-dispatch
//     (the admin client creates the topics, the producer sends) carry a snapshot to the topics;
//   - kafka:tail prints the records, the reference consumer (examples/consumer) builds its table;
//   - the restore check's consumer (lib/watches/restore-kafka.ts) reads the EVENT_IDs back;
//   - PLAIN instead of SCRAM, and mutual TLS (a client certificate) connect too.
// Each bad configuration: msg-dispatch's /healthz 503 names kafka and the setting, a few log
// lines, the waiting events stay PENDING (never DEAD) and go out once the setting is right.
// The expired certificate is served by a TLS front (test/support/tls.ts tlsFront): Kafka itself
// refuses to start with one.
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, slices } from '../../lib/core/config.ts';
import { resolveKafka } from '../../lib/core/connections.ts';
import { kafkaOptions } from '../../lib/dispatch/kafka.ts';
import { createKafkaRestoreCheck } from '../../lib/watches/restore-kafka.ts';
import { probes } from '../../lib/runtime/probe.ts';
import { TEST_KAFKA, testEnv } from '../support/env.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, putInbox, resetDomain, resetPipeline, silentLog, type TestServices } from '../support/services.ts';
import { freshDir, kafkaAvailable, makePki, secretFile, startKafka, tlsFront, type Pki, type SecureKafka } from '../support/tls.ts';

const PASSWORD = 'kafka-Secret-9e4f2b7c';
const run = randomUUID().slice(0, 8);
const topics = { MSGX_KAFKA_MSG_TOPIC: `tls.${run}.msg`, MSGX_KAFKA_SCHD_TOPIC: `tls.${run}.schd`, MSGX_KAFKA_STATE_TOPIC: `tls.${run}.state`, MSGX_KAFKA_PARTITIONS: '2' };
let pki: Pki;
let broker: SecureKafka;
let s: TestServices;
let env: Record<string, string>;
const procs: Proc[] = [];
/** TLS fronts started by a case (an expired certificate), closed at the end. */
const fronts: { close(): Promise<void> }[] = [];
const ready = kafkaAvailable();
if (!ready) console.warn('SKIPPED(no-kafka-classpath): the Kafka jars of scripts/services are not cached (.local/kafka/classpath.txt); run scripts/services up once');

beforeAll(async () => {
  if (!ready) return;
  pki = makePki(freshDir('pki-kafka'));
  broker = await startKafka(pki, PASSWORD);
  env = {
    ...topics,
    KAFKA_BROKERS: broker.brokers,
    KAFKA_SECURITY_PROTOCOL: 'SASL_SSL',
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: 'msgx',
    KAFKA_SASL_PASSWORD_FILE: secretFile(pki.dir, 'kafka-password', PASSWORD),
    KAFKA_TLS_CA: pki.ca,
  };
  // the broker answers (a SASL_SSL metadata request through the gateway's own probe)
  const target = resolveKafka(broker.brokers, { protocol: 'SASL_SSL', mechanism: 'scram-sha-512', username: 'msgx', password: PASSWORD, tls: { ca: pki.ca } }).target;
  await waitFor(
    'the secured broker',
    async () =>
      (await probes
        .kafka(target, 3000)()
        .then(() => true)) as boolean,
    120_000,
    1000,
  );
  s = await openServices();
  await resetPipeline(s);
  await resetDomain(s);
}, 240_000);

afterAll(async () => {
  await stopAll(procs);
  for (const f of fronts.splice(0)) await f.close();
  await s?.close();
  await broker?.stop();
});

async function healthz(p: Proc) {
  const res = await fetch(`http://127.0.0.1:${p.port}/healthz`, { signal: AbortSignal.timeout(2000) });
  return { status: res.status, body: (await res.json()) as { reason?: string; dependencies: Record<string, { up: boolean; reason: string | null }> } };
}
const errorLines = (p: Proc) => p.logs.filter((l) => /"level":(50|60)/.test(l));
const events = async (state?: string) =>
  (await sql<{ n: number }>`select count(*)::int n from msg_event where target = 'msg' and (${state ?? null}::text is null or state = ${state ?? null})`.execute(s.db)).rows[0].n;

describe.skipIf(!ready)('Kafka with SASL_SSL', () => {
  it('pump, msg-dispatch and state-dispatch carry a snapshot to the secured topics; kafka:tail and the reference consumer read them', async () => {
    await putInbox(s.inbox, bigSnapshot(3, 9001));
    const ps = ['intake', 'pump', 'msg-dispatch', 'state-dispatch'].map((n) => startWorker(n, env));
    procs.push(...ps);
    await waitFor('3 msg events SENT', async () => (await events('SENT')) === 3, 90_000, 250);
    for (const p of ps) {
      // a dependency check that timed out on this loaded machine may still say 503 for one interval
      let last: Awaited<ReturnType<typeof healthz>> | undefined;
      await waitFor(`${p.name} /healthz 200`, async () => (last = await healthz(p)).status === 200, 15_000, 250).catch(() => {
        throw new Error(`${p.name} /healthz ${last?.status}: ${JSON.stringify(last?.body)}`);
      });
      expect(p.logs.find((l) => l.includes(`${p.name} starting`))).toContain('"kafka":"SASL_SSL"');
      expect(p.logs.join('\n')).not.toContain(PASSWORD);
    }
    // kafka:tail with the same settings
    const tail = spawnSync(process.execPath, ['scripts/kafka-tail.ts', '--topic', topics.MSGX_KAFKA_MSG_TOPIC, '--from-beginning', '--idle', '4'], {
      env: { ...process.env, ...testEnv(env) },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(tail.status).toBe(0);
    for (const flid of ['9001', '9002', '9003']) expect(tail.stdout).toContain(`key=${flid} `);
    expect(tail.stdout + tail.stderr).not.toContain(PASSWORD);
    // the reference consumer (standalone: kafkajs and Node only) with the gateway's setting names
    const tableFile = join(pki.dir, 'state-table.json');
    const consumer = spawn(process.execPath, ['examples/consumer/consumer.ts'], {
      env: { ...process.env, ...env, STATE_TOPIC: topics.MSGX_KAFKA_STATE_TOPIC, TABLE_FILE: tableFile, GROUP_ID: `tls-${run}` },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    consumer.stdout!.on('data', (b: Buffer) => (out += b.toString()));
    consumer.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    try {
      await waitFor(
        'the consumer table holds the 3 flights',
        () => existsSync(tableFile) && ['9001', '9002', '9003'].every((f) => (JSON.parse(readFileSync(tableFile, 'utf8')) as { flights: Record<string, unknown> }).flights[f]),
        60_000,
        250,
      );
    } finally {
      consumer.kill('SIGTERM');
    }
    expect(out).not.toContain(PASSWORD);
  }, 180_000);

  it("the restore check's consumer reads the EVENT_IDs of the secured msg topic", async () => {
    const config = loadConfig(testEnv({ ...env, KAFKA_SASL_PASSWORD_FILE: '', KAFKA_SASL_PASSWORD: PASSWORD }));
    const check = createKafkaRestoreCheck(kafkaOptions(slices(config).kafka, silentLog), topics.MSGX_KAFKA_MSG_TOPIC, s.db);
    // the outbox forgets where its events landed: the check reads them all from the topic (its consumer)
    await sql`update msg_event set kafka_offset = null where target = 'msg'`.execute(s.db);
    const ids = await check.eventIds();
    expect(ids.records).toBe(3);
    expect(ids.topicHigh).toBeGreaterThan(0);
    expect(ids.topicHigh).toBeLessThanOrEqual(ids.postgresHigh);
    expect(await check.check()).toBeNull();
  }, 60_000);

  it('PLAIN instead of SCRAM, and a client certificate (mutual TLS), connect too', async () => {
    const base = { protocol: 'SASL_SSL', username: 'msgx', password: PASSWORD };
    await probes.kafka(resolveKafka(broker.brokers, { ...base, mechanism: 'plain', tls: { ca: pki.ca } }).target, 5000)();
    const mtls = resolveKafka(broker.brokers, { ...base, mechanism: 'scram-sha-512', tls: { ca: pki.ca, cert: pki.client.cert, key: pki.client.key } });
    expect(mtls.problems).toEqual([]);
    await probes.kafka(mtls.target, 5000)();
  }, 30_000);

  const BAD: [string, () => Promise<Record<string, string>> | Record<string, string>, RegExp][] = [
    ['a wrong CA', () => ({ KAFKA_TLS_CA: pki.otherCa }), /kafka: the server's certificate is not signed by a CA this gateway trusts .*KAFKA_TLS_CA/],
    ['a certificate for another host name', () => ({ KAFKA_BROKERS: `localhost:${broker.port}` }), /kafka: the server's certificate is for another host name .*KAFKA_BROKERS/],
    [
      'a wrong password',
      () => ({ KAFKA_SASL_PASSWORD_FILE: secretFile(pki.dir, 'wrong-password', 'not-the-password') }),
      /kafka: the broker refused the SASL user name or password: check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD_FILE/,
    ],
    [
      'plain text to a SASL_SSL listener',
      () => ({ KAFKA_SECURITY_PROTOCOL: '', KAFKA_SASL_MECHANISM: '', KAFKA_SASL_USERNAME: '', KAFKA_SASL_PASSWORD_FILE: '', KAFKA_TLS_CA: '' }),
      /kafka: the broker closed the connection at once: the listener may require TLS and\/or SASL \(check KAFKA_SECURITY_PROTOCOL/,
    ],
    ['TLS to a broker that does not speak it', () => ({ KAFKA_BROKERS: TEST_KAFKA }), /kafka: the TLS handshake was cut off: the listener may not speak TLS/],
    [
      'an expired server certificate',
      async () => {
        const front = await tlsFront(pki.expired, broker.port);
        fronts.push(front);
        return { KAFKA_BROKERS: `127.0.0.1:${front.port}` };
      },
      /kafka: the server's certificate has expired/,
    ],
  ];

  let sent = 0;
  it('with msg-dispatch stopped, a new snapshot waits as PENDING events', async () => {
    await stopAll(procs.filter((p) => p.name === 'msg-dispatch'));
    sent = await events('SENT');
    await putInbox(s.inbox, bigSnapshot(1, 9100));
    // the pump (good settings, still running) turns it into a PENDING event
    await waitFor('a new PENDING msg event', async () => (await events('PENDING')) >= 1, 30_000, 250);
  }, 60_000);

  // These cases run side by side: each msg-dispatch's dependency check has a connection of its own,
  // none can send, and each watches its own log lines.
  it.concurrent.each(BAD)(
    '%s: msg-dispatch /healthz 503 names kafka and the setting; the waiting events stay PENDING, never DEAD',
    async (_what, bad, reason) => {
      const p = startWorker('msg-dispatch', { ...env, ...(await bad()) });
      procs.push(p);
      try {
        const h = await waitFor('/healthz 503', async () => {
          const x = await healthz(p).catch(() => null);
          return x?.status === 503 && x.body.dependencies.kafka?.up === false && x;
        });
        expect(h.body.dependencies.kafka.reason).toMatch(reason);
        const lines = errorLines(p).length;
        await new Promise((r) => setTimeout(r, 8000));
        expect(p.child.exitCode).toBeNull();
        expect(errorLines(p).length - lines).toBeLessThanOrEqual(2);
        expect(await events('DEAD')).toBe(0);
        expect(await events('SENT')).toBe(sent);
        expect(p.logs.join('\n')).not.toContain(PASSWORD);
      } finally {
        await stopAll([p]);
      }
    },
    90_000,
  );

  it('with the right settings again, every held event goes out; none is DEAD', async () => {
    const p = startWorker('msg-dispatch', env);
    procs.push(p);
    await waitFor('every msg event SENT', async () => (await events('PENDING')) === 0 && (await events('SENT')) === (await events()), 60_000, 250);
    expect(await events('DEAD')).toBe(0);
  }, 90_000);

  it.each([
    [
      'SASL over a plain-text protocol',
      { KAFKA_SECURITY_PROTOCOL: 'PLAINTEXT' },
      /KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD ask\(s\) for SASL but the Kafka protocol is PLAINTEXT/,
    ],
    ['a CA without TLS', { KAFKA_SECURITY_PROTOCOL: 'SASL_PLAINTEXT' }, /KAFKA_TLS_CA ask\(s\) for TLS but the Kafka protocol is SASL_PLAINTEXT/],
    ['the brokers say another protocol', { KAFKA_BROKERS: 'PLAINTEXT://127.0.0.1:1' }, /KAFKA_SECURITY_PROTOCOL=SASL_SSL contradicts KAFKA_BROKERS, which says PLAINTEXT:\/\//],
    ['no mechanism', { KAFKA_SASL_MECHANISM: '' }, /KAFKA_SECURITY_PROTOCOL=SASL_SSL needs KAFKA_SASL_MECHANISM/],
  ] as [string, Record<string, string>, RegExp][])('refused at start: %s', (_what, bad, message) => {
    const r = spawnSync(process.execPath, ['workers/msg-dispatch.ts'], { env: { ...process.env, ...testEnv({ ...env, ...bad }) }, encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).not.toContain(PASSWORD);
  });
});
