// R6: frozen connections. Every process (one instance each) reaches Postgres, MariaDB, Redis and
// Kafka through a fault proxy (test/support/fault-proxy.ts); Kafka is a private broker of this
// file advertised through its proxy. For each service in turn the proxy FREEZES the connections
// open at that moment for 12 s — no byte moves on them, while new connections pass (a NAT or
// firewall state loss, a failover behind a virtual IP) — while a feeder keeps writing messages
// into the inbox. For each freeze:
//   - work resumes within 10 s of the freeze's start: a message written after the freeze began
//     is applied, backfilled and on Kafka;
//   - /healthz of every process that needs the service answers 503 naming it within 10 s, and
//     200 again afterwards; msgx_dependency_up{dependency} agrees;
//   - the outage costs a bounded number of log lines: one "went away" and one "back" per
//     process (a second pair at most: the dedicated check's new connection may answer before
//     the work's last pooled call has timed out), no stack trace per failed round.
// The machine's servers are never touched.
import { writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../support/fault-proxy.ts';
import { privateKafka } from '../support/private-kafka.ts';
import { TEST_INBOX_URL, TEST_PG_URL, TEST_REDIS_URL } from '../support/env.ts';
import { openServices, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { bigSnapshot } from '../support/fixtures.ts';

/** This file's own broker (state in .local/kafka/port-<port>/), advertised through the proxy; apart from other runs on the machine. */
const KAFKA_PORT = process.env.TEST_PORT_BASE ? Number(process.env.TEST_PORT_BASE) + 95 : 19492;
// longer than RESUME_LIMIT_MS: the work must resume while the old connections are still frozen
const FREEZE_MS = 12_000;
const RESUME_LIMIT_MS = 10_000;

type Service = 'postgres' | 'mariadb' | 'redis' | 'kafka';
const PROCESSES = ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch', 'state-dispatch', 'retention', 'api'] as const;
/** Which processes need which service (their /healthz must say so). */
const NEEDS: Record<Service, readonly string[]> = {
  postgres: PROCESSES,
  mariadb: ['intake', 'pump', 'backfill', 'retention', 'api'],
  redis: ['pump', 'retention'],
  kafka: ['msg-dispatch', 'schd-dispatch', 'state-dispatch'],
};

let s: TestServices;
const procs: Proc[] = [];
const px = {} as Record<Service, FaultProxy>;
let kafkaStarted = false;
const id = randomUUID().slice(0, 8);
const measured: Record<string, number> = {};

const kafkaService = (cmd: 'kafka-start' | 'kafka-stop') => privateKafka(cmd, KAFKA_PORT, px.kafka.port);

const q = async <T>(text: string, values: unknown[] = []) => (await s.pool.query(text, values)).rows as T[];
const proc = (name: string) => procs.find((p) => p.name === name)!;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Inbox id → when the feeder wrote it. */
const written = new Map<number, number>();
let seqn = 700_000;
let stand = 0;
let feeding = false;
async function feed(): Promise<void> {
  feeding = true;
  while (feeding) {
    stand++;
    const at = Date.now();
    try {
      const inboxId = await putInbox(s.inbox, sisMessage({ type: 'FLOP', styp: 'STND', seqn: seqn++, body: `<FLOP><FLID>${1 + (stand % 50)}</FLID><FFID>x</FFID><STND>F${stand}</STND></FLOP>` }));
      written.set(inboxId, at);
    } catch (e) {
      console.error(`[frozen] feeder: ${(e as Error).message}; going on`); // straight to MariaDB, never through the proxy
    }
    await pause(250);
  }
}

/** When the first message written at or after `from` was applied, backfilled and sent (ms since epoch), if yet. */
async function firstDoneAfter(from: number): Promise<number | undefined> {
  const ids = [...written].filter(([, at]) => at >= from).map(([i]) => i);
  if (ids.length === 0) return undefined;
  const [r] = await q<{ done: number | null }>(
    `select min(greatest(extract(epoch from p.terminal_at), extract(epoch from p.backfill_at), extract(epoch from e.sent_at)) * 1000)::float8 done
       from proc_state p join msg_event e on e.target = 'msg' and (e.payload->>'MSG_ID')::bigint = p.msg_id
      where p.msg_id = any($1::bigint[]) and p.state = 'SUCCEEDED' and p.backfill_at is not null and e.state = 'SENT'`,
    [ids],
  );
  return r.done ?? undefined;
}

async function healthz(p: Proc): Promise<{ status: number; body: { ok: boolean; reason?: string; dependencies?: Record<string, { up: boolean }> } } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${p.port}/healthz`, { signal: AbortSignal.timeout(1000) });
    return { status: res.status, body: (await res.json()) as never };
  } catch {
    return null;
  }
}

async function gauge(p: Proc, dependency: string): Promise<number | undefined> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${p.port}/metrics`, { signal: AbortSignal.timeout(1000) })).text();
    const line = text.split('\n').find((l) => l.startsWith(`msgx_dependency_up{dependency="${dependency}"}`));
    return line ? Number(line.split(' ').pop()) : undefined;
  } catch {
    return undefined;
  }
}

/** Lines logged at warn or above since log index `from`. */
function loud(p: Proc, from: number): { level: number; msg: string }[] {
  return p.logs
    .slice(from)
    .map((l) => {
      try {
        return JSON.parse(l) as { level: number; msg: string };
      } catch {
        return { level: 50, msg: l };
      }
    })
    .filter((l) => l.level >= 40);
}

describe('frozen connections (R6): every service frozen in turn, one instance per process', () => {
  beforeAll(async () => {
    px.postgres = await FaultProxy.start({ port: Number(new URL(TEST_PG_URL).port || 5432) });
    px.mariadb = await FaultProxy.start({ port: Number(new URL(TEST_INBOX_URL).port || 3306) });
    px.redis = await FaultProxy.start({ port: Number(new URL(TEST_REDIS_URL).port || 6379) });
    px.kafka = await FaultProxy.start({ port: KAFKA_PORT });
    kafkaStarted = true;
    await kafkaService('kafka-start');
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
    const env = {
      DATABASE_URL: px.postgres.url(TEST_PG_URL),
      INBOX_URL: px.mariadb.url(TEST_INBOX_URL),
      REDIS_URL: px.redis.url(TEST_REDIS_URL),
      KAFKA_BROKERS: px.kafka.address,
      MSGX_KAFKA_MSG_TOPIC: `frozen.${id}.msg`,
      MSGX_KAFKA_SCHD_TOPIC: `frozen.${id}.schd`,
      MSGX_KAFKA_STATE_TOPIC: `frozen.${id}.state`,
      MSGX_KAFKA_PARTITIONS: '3',
    };
    for (const name of PROCESSES) procs.push(startWorker(name, env));
    await putInbox(s.inbox, bigSnapshot(50, 1, { seqn: seqn++ }));
    await waitFor('the snapshot applied and sent', async () => (await q<{ n: number }>(`select count(*)::int n from msg_event where state = 'SENT'`))[0].n >= 50, 120_000, 250);
    await waitFor('every /healthz 200', async () => (await Promise.all(procs.map(healthz))).every((h) => h?.status === 200), 60_000, 250);
    void feed();
    await waitFor('the feeder flows', async () => (await firstDoneAfter(Date.now() - 60_000)) !== undefined, 60_000, 250);
  }, 300_000);

  afterAll(async () => {
    feeding = false;
    await stopAll(procs);
    for (const p of Object.values(px)) await p?.set('pass').catch(() => {});
    if (kafkaStarted) {
      const admin = new kafkajs.Kafka({ clientId: 'frozen-test-admin', brokers: [px.kafka.address], logLevel: kafkajs.logLevel.NOTHING }).admin();
      await admin
        .connect()
        .then(() => admin.deleteTopics({ topics: [`frozen.${id}.msg`, `frozen.${id}.schd`, `frozen.${id}.state`] }))
        .catch(() => {})
        .finally(() => admin.disconnect().catch(() => {}));
      await kafkaService('kafka-stop').catch(() => {});
    }
    for (const p of Object.values(px)) await p?.close().catch(() => {});
    await s?.close().catch(() => {});
    console.log(`[frozen] resume after the freeze began (ms): ${JSON.stringify(measured)}`);
  }, 120_000);

  for (const service of ['postgres', 'mariadb', 'redis', 'kafka'] as const) {
    it(`${service} frozen ${FREEZE_MS / 1000} s: work resumes within ${RESUME_LIMIT_MS / 1000} s, /healthz 503 naming it and 200 after, the gauge agrees, few log lines`, async () => {
      const needing = NEEDS[service].map(proc);
      const logFrom = new Map(procs.map((p) => [p.name, p.logs.length]));
      const first503 = new Map<string, { at: number; reason: string }>();
      const gaugeDown = new Set<string>();
      const t0 = Date.now();
      await px[service].set('freeze');
      expect(px[service].counts().frozen).toBeGreaterThan(0);
      let resumedAt: number | undefined;
      try {
        while (Date.now() - t0 < FREEZE_MS) {
          await Promise.all(
            needing.map(async (p) => {
              const h = await healthz(p);
              if (h && h.status === 503 && !first503.has(p.name)) first503.set(p.name, { at: Date.now(), reason: h.body.reason ?? '' });
              if (!gaugeDown.has(p.name) && (await gauge(p, service)) === 0) gaugeDown.add(p.name);
            }),
          );
          resumedAt ??= await firstDoneAfter(t0 + 500);
          await pause(150);
        }
      } finally {
        await px[service].set('pass');
      }
      // FROZEN_LOG_DIR=<dir>: each process's whole log, for a look at a failed run
      const dump = () => {
        if (process.env.FROZEN_LOG_DIR)
          for (const p of procs) writeFileSync(`${process.env.FROZEN_LOG_DIR}/${service}-${p.name}.log`, `t0=${new Date(t0).toISOString()} from line ${logFrom.get(p.name)}\n${p.logs.join('\n')}\n`);
      };
      resumedAt ??= await waitFor('a message written during the freeze done', () => firstDoneAfter(t0 + 500), 60_000, 250).finally(dump);
      dump();
      const resumeMs = resumedAt - t0;
      measured[service] = Math.round(resumeMs);
      console.log(
        `[frozen] ${service}: work resumed ${Math.round(resumeMs)} ms after the freeze began; first 503 (ms): ${JSON.stringify(Object.fromEntries([...first503].map(([n, x]) => [n, x.at - t0])))}`,
      );
      expect(resumeMs).toBeLessThanOrEqual(RESUME_LIMIT_MS);
      for (const p of needing) {
        const seen = first503.get(p.name);
        expect(seen, `${p.name} /healthz 503 during the ${service} freeze`).toBeDefined();
        expect(seen!.at - t0).toBeLessThanOrEqual(RESUME_LIMIT_MS);
        expect(seen!.reason).toContain(service);
        expect(gaugeDown.has(p.name), `${p.name} msgx_dependency_up{dependency="${service}"} = 0 during the freeze`).toBe(true);
      }
      await waitFor(
        'every /healthz 200 again and the gauges 1',
        async () => (await Promise.all(procs.map(async (p) => (await healthz(p))?.status === 200 && (await gauge(p, 'postgres')) === 1))).every(Boolean),
        30_000,
        250,
      );
      for (const p of needing) expect(await gauge(p, service)).toBe(1);
      // the outage in the logs: went away / back (a second pair at most), a handful of lines overall, no stack per round
      for (const p of procs) {
        const lines = loud(p, logFrom.get(p.name)!);
        const away = lines.filter((l) => l.msg.startsWith(`dependency ${service} went away`)).length;
        const back = lines.filter((l) => l.msg.startsWith(`dependency ${service} back after`)).length;
        if (NEEDS[service].includes(p.name)) {
          expect(away, `${p.name}: "went away" lines`).toBeGreaterThanOrEqual(1);
          expect(back, `${p.name}: "back" lines`).toBe(away);
        }
        expect(away, `${p.name}: "went away" lines`).toBeLessThanOrEqual(2);
        if (lines.length > 12)
          console.error(
            p.name,
            lines.map((l) => l.msg),
          );
        expect(lines.length, `${p.name}: warn/error lines during the ${service} freeze`).toBeLessThanOrEqual(12);
      }
    }, 150_000);
  }
});
