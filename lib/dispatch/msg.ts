// msg topic round (docs/consumers.md "msg topic"): freeze a batch of due PENDING events that nothing
// holds (EVENT_ID order, never overtaking an earlier event of the same FLID), produce them with
// key = FLID and value = the stored payload, and in the same transaction mark exactly the
// acknowledged ones SENT (sent_at, partition, offset). A send that fails or times out while the
// cluster answers a metadata request counts one failed attempt for every event it carried
// (backoff; DEAD after max attempts); with the cluster unreachable it counts none (backoff
// only), nor while the topic is missing (lib/watches/msg-topic.ts creates it again; ./send.ts). Nothing
// of a failed send is marked SENT. The round runs under a transaction-scoped advisory lock, so
// two instances never send the same FLID concurrently.
import type { Clock } from '../core/clock.ts';
import type { Slices } from '../core/config.ts';
import type { Db } from '../db/postgres.ts';
import type { Executor } from '../db/statement.ts';
import type { Logger } from '../runtime/log.ts';
import type { Crash } from '../runtime/crash.ts';
import type { Tracing } from '../runtime/tracing.ts';
import type { KafkaEdge } from './kafka.ts';
import type { KafkaOutage } from './outage.ts';
import { dispatchSent } from './metrics.ts';
import { freezeMsgBatch, nextAttemptAt, tryRoundLock } from './outbox.ts';
import { chunkBySize, type RetryPolicy, type Target } from './plan.ts';
import { TimeBudget } from '../core/budget.ts';
import { sendRound } from './send.ts';

export interface DispatchDeps {
  db: Db;
  kafka: KafkaEdge;
  /** Topics, batch sizes, the record size limit, the retry ladder, the airport's zone. */
  dispatch: Slices['dispatch'];
  clock: Clock;
  log: Logger;
  /** Outage state of a running dispatcher (lib/dispatch/outage.ts): one log line per outage, not per send. */
  outage?: KafkaOutage;
  /** A send found the topic missing: the topic check runs at once (lib/watches/). */
  topicMissing?: () => void;
  /** A span per record and its trace headers (lib/dispatch/trace.ts); undefined: tracing off. */
  tracing?: Tracing;
  /** Crash points of the tests (lib/runtime/crash.ts): killed between a send and its SENT mark. */
  crash?: Crash;
}

export interface RoundResult {
  /** Another instance holds the round lock. */
  busy: boolean;
  picked: number;
  sent: number;
  /** Events whose send failed (backing off or DEAD). */
  failed: number;
  dead: number;
}

export const retryPolicy = (c: Slices['dispatch']): RetryPolicy => ({ ladder: c.backoffMs, maxAttempts: c.maxAttempts });

/** One msg round. */
export async function msgRound(d: DispatchDeps): Promise<RoundResult> {
  const topic = d.dispatch.msgTopic;
  return inRound(d, 'msg', async (tx) => {
    const res: RoundResult = { busy: false, picked: 0, sent: 0, failed: 0, dead: 0 };
    if (!(await tryRoundLock(tx, 'msg'))) return { ...res, busy: true };
    const now = d.clock.now();
    const batch = await freezeMsgBatch(tx, now, d.dispatch.msgBatch);
    res.picked = batch.length;
    if (batch.length === 0) return res;

    // Normally one send; a batch larger than a record limit goes out in consecutive sends,
    // stopping at the first failure (later chunks stay untouched for the next round).
    const chunks = chunkBySize(
      batch.map((e) => Buffer.byteLength(e.value) + Buffer.byteLength(e.flid) + 64),
      d.dispatch.maxRecordBytes,
    ).map((idx) => idx.map((i) => batch[i]));
    const r = await sendRound(
      tx,
      d,
      'msg',
      topic,
      chunks.map((rows) => ({ records: rows.map((e) => ({ key: e.flid, value: e.value })), carries: rows.map((e) => [e]) })),
      retryPolicy(d.dispatch),
    );
    Object.assign(res, { sent: r.sent, failed: r.failed, dead: r.dead });
    return res;
  });
}

/** A round in one transaction; what it sent is counted once the transaction committed. */
export async function inRound<R extends RoundResult>(d: DispatchDeps, target: Target, body: (tx: Executor) => Promise<R>): Promise<R> {
  const result = await d.db.transaction().execute(body);
  if (result.sent) dispatchSent.inc({ target }, result.sent);
  return result;
}

export type DrainNext = 'now' | Date | null;

/**
 * Rounds until nothing is due, a send fails, or the budget is spent. Returns when the task
 * should run again: 'now' (budget spent), the next retry time, or null (idle until woken).
 */
export async function drain(round: (d: DispatchDeps) => Promise<RoundResult>, target: Target, d: DispatchDeps, budgetMs: number, signal?: AbortSignal): Promise<DrainNext> {
  const budget = new TimeBudget(budgetMs);
  for (;;) {
    const r = await round(d);
    if (r.busy) return new Date(d.clock.now().getTime() + 1000); // the other instance drains; look again soon
    if (r.picked > 0 && r.failed === 0 && !signal?.aborted) {
      if (budget.spent()) return 'now';
      continue;
    }
    return nextAttemptAt(d.db, target, d.clock.now());
  }
}

export const msgDrain = (d: DispatchDeps, budgetMs: number, signal?: AbortSignal) => drain(msgRound, 'msg', d, budgetMs, signal);
