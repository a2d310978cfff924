// Every process a test starts uses topics of the test's own (test/support/env.ts TEST_TOPICS), the
// pump included. The order a new user follows — `npm start`, the README's sample, then `npm test`
// — left the sample's events on the installation's default msg topic, where the test's pump found
// EVENT_IDs its database never handed out and held as "Postgres is behind (restored from a
// backup?)": the restore check was right, the test was not isolated.
//
// That order is replayed here without `npm start` on the default ports and without touching the
// machine's broker, whose default topic another installation on the machine may be using (events
// with foreign EVENT_IDs published there would hold ITS pump): a broker of this file's own gets the
// default-named topic, filled the way the sample's msg-dispatch fills it (the dispatchers' Kafka
// edge, the contract's record value, EVENT_IDs above the test database's sequence). Then a test
// installation — an intake round and the real pump process, started as every test starts them,
// pointed at that broker — takes a message in and applies it.
import { rmSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { describeConfig, slices } from '../../lib/core/config.ts';
import { msgUpsert, msgValue } from '../../lib/contract/kafka.ts';
import { createKafkaEdge, kafkaOptions, type KafkaEdge } from '../../lib/dispatch/kafka.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import * as Restore from '../../lib/sql/restore.ts';
import { createKafkaRestoreCheck } from '../../lib/watches/restore-kafka.ts';
import { TEST_TOPICS, testConfig } from '../support/env.ts';
import { freePort } from '../support/ports.ts';
import { privateKafka } from '../support/private-kafka.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { bigSnapshot } from '../support/fixtures.ts';
import { openServices, putInbox, resetDomain, resetPipeline, silentLog, type TestServices } from '../support/services.ts';

/**
 * This file's own broker on ports the kernel has free at the start: a fixed one in the ephemeral
 * range (TEST_PORT_BASE 37000 + n) was once taken by a client connection's local port, and the
 * broker could not bind. Its state (.local/kafka/port-<port>/) is removed at the end.
 */
const ports = { broker: 0, controller: 0 };
const brokers = () => `127.0.0.1:${ports.broker}`;
const DEFAULT_MSG_TOPIC = describeConfig().find((c) => c.key === 'msgx.kafka.msg-topic')!.default;
/** The installation the sample ran in: its settings, but this file's broker. */
const installation = () => testConfig({ KAFKA_BROKERS: brokers(), 'msgx.kafka.msg-topic': DEFAULT_MSG_TOPIC, 'msgx.kafka.partitions': '3' });

let s: TestServices;
let edge: KafkaEdge | undefined;
const procs: Proc[] = [];

beforeAll(async () => {
  s = await openServices();
  ports.broker = await freePort();
  ports.controller = await freePort();
  await privateKafka('kafka-start', ports.broker, undefined, ports.controller);
}, 180_000);

afterAll(async () => {
  await stopAll(procs);
  await edge?.close();
  if (ports.broker) {
    await privateKafka('kafka-stop', ports.broker, undefined, ports.controller);
    rmSync(path.join(import.meta.dirname, `../../.local/kafka/port-${ports.broker}`), { recursive: true, force: true });
  }
  await s?.close();
}, 60_000);

describe('test isolation: the README sample on the default msg topic, then a test installation', () => {
  it('the test pump reads a msg topic of its own and applies what it took in; the default topic would have held it', async () => {
    expect(DEFAULT_MSG_TOPIC).toBe('msgx.flight.msg');
    expect(TEST_TOPICS.MSGX_KAFKA_MSG_TOPIC).not.toBe(DEFAULT_MSG_TOPIC);
    await resetPipeline(s);
    await resetDomain(s);

    // 1. the sample, as its installation's msg-dispatch sent it: seven events on the default topic,
    //    with EVENT_IDs the test database has never handed out
    const high = (await Restore.readEventIdHigh(s.db))?.high ?? 0;
    edge = createKafkaEdge(kafkaOptions(slices(installation()).kafka, silentLog));
    await edge.ensureTopics([{ topic: DEFAULT_MSG_TOPIC }]);
    const sample = Array.from({ length: 7 }, (_, i) => ({
      key: String(9000 + i),
      value: msgValue({
        EVENT_ID: high + 1 + i,
        ...msgUpsert({ flid: String(9000 + i), stateVersion: 1, updatedAt: '2099-12-01T08:00:00+08:00', msgId: i + 1, type: 'FLOP', styp: 'STND', changed: ['STND'] }),
      }),
    }));
    expect(await edge.send(DEFAULT_MSG_TOPIC, sample)).toHaveLength(7);

    // the restore check is right: a pump reading the default topic against this database is held
    // (a fresh broker's group coordinator is still loading at first: the check cannot run, it is asked again)
    const check = createKafkaRestoreCheck(kafkaOptions(slices(installation()).kafka, silentLog), DEFAULT_MSG_TOPIC, s.db);
    const onDefault = await waitFor('the restore check on the default topic', () => check.check(), 60_000, 500);
    expect(onDefault).toEqual({ source: 'kafka', detail: expect.stringContaining(`holds EVENT_ID ${high + 7}, above the highest Postgres handed out`) });

    // 2. the test installation: a message taken in (the restore check's Kafka source runs once
    //    intake took a row), then the real pump, started as every test starts it, on that broker
    const id = await putInbox(s.inbox, bigSnapshot(3, 1, { seqn: 1 }));
    await intakeRound({ db: s.db, inbox: s.inbox, clock: new ManualClock(), intake: slices(testConfig()).intake, log: silentLog });
    const pump = startWorker('pump', { KAFKA_BROKERS: brokers() });
    procs.push(pump);
    await waitFor('the message terminal', async () => (await sql<{ state: string }>`select state from proc_state where msg_id = ${id}`.execute(s.db)).rows[0]?.state !== 'PENDING', 60_000, 100).catch(
      (e) => {
        throw new Error(`${(e as Error).message}\n${pump.logs.slice(-15).join('\n')}`);
      },
    );
    expect((await sql<{ state: string }>`select state from proc_state where msg_id = ${id}`.execute(s.db)).rows[0].state).toBe('SUCCEEDED');
    expect(pump.logs.filter((l) => l.includes('Postgres is behind'))).toEqual([]);
    const health = (await (await fetch(`http://127.0.0.1:${pump.port}/healthz`)).json()) as { ok: boolean; conditions?: { name: string }[] };
    expect(health.conditions?.map((c) => c.name) ?? []).not.toContain('postgres-behind');
  }, 120_000);

  it('a process pointed at an installation topic on the machine broker is refused before it starts', () => {
    expect(() => startWorker('pump', { MSGX_KAFKA_MSG_TOPIC: DEFAULT_MSG_TOPIC })).toThrow(`startWorker: pump would use the installation's topic ${DEFAULT_MSG_TOPIC}`);
  });
});
