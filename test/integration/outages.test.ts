// R2: the real services go away one after the other while the real processes run — Redis,
// Kafka, MariaDB for ~10 s each, and a Postgres restart. The head is held (FAILED(INFRA), never
// DEAD), the metrics show it, nothing goes DEAD in the outbox, and once each service is back
// everything is applied exactly once, backfilled and on Kafka.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServices, putInbox, resetDomain, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { metricValue, startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { bigSnapshot } from '../support/fixtures.ts';

const run = promisify(execFile);
/** A private broker for this file, so stopping Kafka never touches the shared one (other files, npm start). */
const KAFKA_PORT = 19292;
const services = (...args: string[]) => run('scripts/services', args, { timeout: 120_000, env: { ...process.env, KAFKA_PORT: String(KAFKA_PORT) } });
const OUTAGE_MS = 10_000;

let s: TestServices;
const procs: Proc[] = [];
const id = randomUUID().slice(0, 8);
const env = {
  KAFKA_BROKERS: `127.0.0.1:${KAFKA_PORT}`,
  MSGX_KAFKA_MSG_TOPIC: `outage.${id}.msg`,
  MSGX_KAFKA_SCHD_TOPIC: `outage.${id}.schd`,
  MSGX_KAFKA_PARTITIONS: '3',
  MSGX_PIPELINE_BACKOFF: '200ms,500ms,1s,2s',
  MSGX_PIPELINE_INFRA_ALERT_AFTER: '3s',
  MSGX_PIPELINE_BACKFILL_BACKOFF: '500ms,1s,2s',
  MSGX_DISPATCH_BACKOFF: '200ms,500ms,1s,2s',
  MSGX_DISPATCH_MAX_ATTEMPTS: '3', // an outage far longer than this ladder must still not make DEAD
  MSGX_IO_TIMEOUT: '2s',
};
let seqn = 900_000;
let stand = 0;
/** n FLOPs, each changing the stand of one of the 50 flights (one msg event each). */
async function flops(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    stand++;
    await putInbox(s.inbox, sisMessage({ type: 'FLOP', styp: 'STND', seqn: seqn++, body: `<FLOP><FLID>${1 + (stand % 50)}</FLID><FFID>x</FFID><STND>S${stand}</STND></FLOP>` }));
  }
}
const q = async <T,>(text: string) => (await s.pool.query(text)).rows as T[];
const pump = () => procs.find((p) => p.name === 'pump')!;

async function settled(expectedMessages: number): Promise<boolean> {
  const [r] = await q<{ total: number; open: number; unbackfilled: number; unsent: number }>(`
    select (select count(*)::int from proc_state) total,
           (select count(*)::int from proc_state where state in ('PENDING','FAILED')) open,
           (select count(*)::int from proc_state where backfill_at is null) unbackfilled,
           (select count(*)::int from msg_event where state <> 'SENT') unsent`);
  return r.total === expectedMessages && r.open === 0 && r.unbackfilled === 0 && r.unsent === 0;
}

describe('outages of the real services (R2)', () => {
  beforeAll(async () => {
    await services('kafka-start');
    s = await openServices();
    await resetPipeline(s);
    await resetDomain(s);
    for (const name of ['intake', 'pump', 'backfill', 'msg-dispatch', 'schd-dispatch']) procs.push(startWorker(name, env));
    await putInbox(s.inbox, bigSnapshot(50, 1, { seqn: seqn++ }));
    await waitFor('the 50 flights exist', () => settled(1), 60_000, 200);
  }, 180_000);
  afterAll(async () => {
    // whatever happened, every service is up again for the next test file
    await services('outage-start', 'postgres').catch(() => {});
    await services('outage-start', 'mariadb').catch(() => {});
    await services('outage-start', 'redis').catch(() => {});
    await stopAll(procs);
    await services('kafka-stop').catch(() => {}); // the private broker
    await s?.close().catch(() => {});
  });

  it('Redis down: the head is held as FAILED(INFRA), head_blocked = 1, nothing DEAD; back: all applied once', async () => {
    await services('outage-stop', 'redis');
    const started = Date.now();
    try {
      await flops(10);
      const head = await waitFor('the head fails on Redis', async () => (await q<{ reason: string }>(`select reason from proc_state where state = 'FAILED'`))[0], 20_000, 100);
      expect(head.reason).toMatch(/^INFRA: redis mirror failed after business commit/);
      await waitFor('head_blocked = 1', async () => (await metricValue(pump(), 'msgx_pipeline_head_blocked')) === 1, 20_000, 250);
      expect(await q(`select 1 from proc_state where state = 'DEAD'`)).toEqual([]);
      expect((await q<{ n: number }>(`select count(*)::int n from proc_state where state = 'SUCCEEDED'`))[0].n).toBe(1); // FIFO: nothing overtook
    } finally {
      await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - started))));
      await services('outage-start', 'redis');
    }
    await waitFor('all applied after Redis is back', () => settled(11), 60_000, 250);
    expect(await metricValue(pump(), 'msgx_pipeline_head_blocked')).toBe(0);
    const touched = await q<{ flid: string }>(`select distinct flid from msg_event where target = 'msg' and payload->>'TYPE' = 'FLOP'`);
    for (const { flid } of touched) expect(await s.redis.exists(`msgx:flight:${flid}`)).toBe(1); // rewritten by the re-applied messages
  }, 120_000);

  it('Kafka down: the pipeline goes on, events wait PENDING (never DEAD past max-attempts); back: all sent', async () => {
    await services('kafka-stop');
    const started = Date.now();
    try {
      await flops(10);
      await waitFor('the messages are applied without Kafka', async () => (await q<{ n: number }>(`select count(*)::int n from proc_state where state = 'SUCCEEDED'`))[0].n === 21, 30_000, 200);
      await waitFor('sends were tried and failed', async () => (await q<{ n: number }>(`select count(*)::int n from msg_event where state = 'PENDING' and attempts >= 3`))[0].n > 0, 30_000, 250);
      expect(await q(`select 1 from msg_event where state = 'DEAD'`)).toEqual([]);
    } finally {
      await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - started))));
      await services('kafka-start');
    }
    await waitFor('all sent after Kafka is back', () => settled(21), 90_000, 250);
  }, 150_000);

  it('MariaDB down: intake reports errors and marks nothing; backfill waits; back: new messages flow', async () => {
    await flops(5);
    await services('outage-stop', 'mariadb');
    const started = Date.now();
    const intake = procs.find((p) => p.name === 'intake')!;
    const errors0 = (await metricValue(intake, 'msgx_intake_errors_total')) ?? 0;
    try {
      await waitFor('intake counts failed rounds', async () => ((await metricValue(intake, 'msgx_intake_errors_total')) ?? 0) > errors0, 20_000, 250);
      expect(await q(`select 1 from proc_state where state = 'DEAD'`)).toEqual([]);
    } finally {
      await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - started))));
      await services('outage-start', 'mariadb');
    }
    await flops(5);
    await waitFor('all applied and backfilled after MariaDB is back', () => settled(31), 90_000, 250);
  }, 150_000);

  it('Postgres restarted mid-run: every process reconnects; nothing lost, nothing applied twice', async () => {
    expect(await settled(31)).toBe(true); // the three outages before left everything settled
    await flops(20);
    await services('outage-stop', 'postgres');
    await new Promise((r) => setTimeout(r, 2000));
    await services('outage-start', 'postgres');
    await flops(10);
    await waitFor('all applied, backfilled and sent after the restart', () => settled(61), 150_000, 500).catch(async (e) => {
      console.error(await q(`select state, reason, count(*)::int n from proc_state group by 1, 2`), await q(`select state, count(*)::int n from msg_event group by 1`));
      for (const p of procs) console.error(p.name, p.child.exitCode, p.logs.slice(p.name === 'pump' ? -40 : -3).map((l) => l.slice(0, 400)).join('\n'));
      throw e;
    });
    // exactly once: one msg event per FLOP (each changed its flight), none DEAD anywhere
    const [c] = await q<{ flops: number; events: number; dupes: number; dead: number }>(`
      select (select count(*)::int from proc_state where kind = 'FLOP/STND' and state = 'SUCCEEDED') flops,
             (select count(*)::int from msg_event where target = 'msg' and payload->>'TYPE' = 'FLOP') events,
             (select count(*)::int from (select payload->>'MSG_ID' from msg_event where target = 'msg' group by 1, flid having count(*) > 1) d) dupes,
             (select count(*)::int from proc_state where state = 'DEAD') + (select count(*)::int from msg_event where state = 'DEAD') dead`);
    expect(c).toEqual({ flops: 60, events: 60, dupes: 0, dead: 0 });
    const [inbox] = await s.inbox.query<import('mysql2').RowDataPacket[]>('SELECT COUNT(*) n, SUM(CMINMSGS_DATE_PROCESSED IS NULL) open FROM cminmsgs');
    expect([Number(inbox[0].n), Number(inbox[0].open)]).toEqual([61, 0]);
  }, 180_000);
});
