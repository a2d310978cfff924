// How a dispatcher's round sends (one place for the three dispatchers, lib/dispatch/msg.ts,
// schd.ts, state.ts; docs/decisions.md "Dispatch"): its sends in order, stopping at the first
// failure; in the round's transaction, the rows Kafka acknowledged marked SENT and the failed
// send's rows backing off. A failure is classified by the Kafka error codes and classes it
// carries, never by its message text.
import type { Clock } from '../core/clock.ts';
import type { Executor } from '../db/statement.ts';
import type { Crash } from '../runtime/crash.ts';
import type { Logger } from '../runtime/log.ts';
import type { StoredContext, Tracing } from '../runtime/tracing.ts';
import type { KafkaEdge, KafkaRecord } from './kafka.ts';
import type { KafkaOutage } from './outage.ts';
import { type Acked, markFailed, markSent } from './outbox.ts';
import { afterFailure, type RetryPolicy, type Target } from './plan.ts';
import { recordSpans, withTrace } from './trace.ts';

/** An outbox row a record carries: the version it sends, its attempts so far, the trace it continues. */
export interface Carried {
  eventId: number;
  stateVersion: number;
  attempts: number;
  flid: string;
  /** The trace context stored with the row (./trace.ts). */
  trace: StoredContext;
}

/** One send of a round: its records, and for each record the rows it acknowledges. */
export interface Sending {
  records: KafkaRecord[];
  carries: Carried[][];
}

export interface RoundSends {
  /** Rows marked SENT; rows acknowledged but rewritten meanwhile (left PENDING). */
  sent: number;
  overtaken: number;
  /** Rows of the failed send (backing off or DEAD), and those DEAD. */
  failed: number;
  dead: number;
  /** Sends acknowledged, from the first. */
  done: number;
}

/** The round's sends in order, stopping at the first failure (later sends stay for the next round); then SENT and the failure marked in `tx`. */
export async function sendRound(
  tx: Executor,
  d: SendFailureDeps & { kafka: KafkaEdge; clock: Clock; tracing?: Tracing; crash?: Crash },
  target: Target,
  topic: string,
  sends: readonly Sending[],
  policy: RetryPolicy,
): Promise<RoundSends> {
  const acked: Acked[] = [];
  let failed: { rows: Carried[]; error: Error } | null = null;
  let done = 0;
  for (const s of sends) {
    // a span per record, continuing its rows' trace, named in the record's headers (nothing without tracing)
    const spans = recordSpans(d.tracing, target, topic, s.carries);
    try {
      const placed = await d.kafka.send(
        topic,
        s.records.map((r, i) => withTrace(r, spans, i)),
      );
      spans.sent(placed);
      d.crash?.('dispatch.after-send');
      s.carries.forEach((rows, i) => {
        for (const r of rows) acked.push({ eventId: r.eventId, stateVersion: r.stateVersion, partition: placed[i].partition, offset: placed[i].offset });
      });
      done++;
    } catch (e) {
      spans.failed(e);
      failed = { rows: s.carries.flat(), error: e as Error };
      break;
    }
  }
  const at = d.clock.now();
  const marked = await markSent(tx, acked, at);
  const out: RoundSends = { sent: marked.length, overtaken: acked.length - marked.length, failed: 0, dead: 0, done };
  if (failed) Object.assign(out, await markSendFailed(tx, d, { target, topic, rows: failed.rows, error: failed.error }, policy, at));
  return out;
}

/** Does this error, or one it wraps, carry one of these Kafka error codes (kafkajs's `type`) or error classes (its `name`)? Never the message text. */
function hasKafkaCode(e: unknown, codes: ReadonlySet<string>, names: ReadonlySet<string> = new Set()): boolean {
  for (let x = e as { type?: string; name?: string; cause?: unknown; originalError?: unknown } | undefined, n = 0; x && n < 5; n++) {
    if ((x.type !== undefined && codes.has(x.type)) || (x.name !== undefined && names.has(x.name))) return true;
    x = (x.cause ?? x.originalError) as typeof x;
  }
  return false;
}

const UNKNOWN_TOPIC = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'UNKNOWN_TOPIC_ID']);
/** Does this error (or one it wraps) say the topic does not exist? */
export const isUnknownTopic = (e: unknown): boolean => hasKafkaCode(e, UNKNOWN_TOPIC);

/**
 * The cluster cannot take the record now, whatever the record: fewer in-sync replicas than
 * min.insync.replicas (brokers down), no leader for its partition (an election under way), or
 * no connection to the broker that leads it (refused, closed: a broker down while others answer
 * metadata). A send that failed so is not the event's fault: no attempt is counted
 * (docs/decisions.md "Dispatch"), as when no broker answers at all. A request that timed out on
 * a connection that was open still counts one.
 */
const CLUSTER_UNAVAILABLE = new Set(['NOT_ENOUGH_REPLICAS', 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', 'LEADER_NOT_AVAILABLE', 'NOT_LEADER_FOR_PARTITION', 'NOT_LEADER_OR_FOLLOWER']);
const NO_CONNECTION = new Set(['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSBrokerNotFound']);
export const isClusterUnavailable = (e: unknown): boolean => hasKafkaCode(e, CLUSTER_UNAVAILABLE, NO_CONNECTION);

/** The rows of the record(s) a failed send carried, and what it failed with. */
export interface FailedSend {
  target: Target;
  topic: string;
  rows: readonly { eventId: number; attempts: number }[];
  error: Error;
}

export interface SendFailureDeps {
  kafka: Pick<KafkaEdge, 'reachable'>;
  log: Logger;
  /** Outage state of a running dispatcher (./outage.ts): one log line per outage, not per send. */
  outage?: KafkaOutage;
  /** The topic check of this target (msg, state): a send that found the topic missing asks it to run at once. */
  topicMissing?: () => void;
}

/**
 * Marks the rows of a failed send in the round's transaction: backoff, DEAD after max attempts.
 * No cluster answer at all: the outage mode (probing), no attempt counted. The cluster answers but
 * cannot take any record now (below min ISR, no leader, the leader down): no attempt counted, the
 * ladder's backoff. The topic vanished where a topic check creates it again (msg, state): no
 * attempt counted either, and the check runs at once. Otherwise one attempt for every row.
 */
export async function markSendFailed(tx: Executor, d: SendFailureDeps, f: FailedSend, policy: RetryPolicy, at: Date): Promise<{ failed: number; dead: number }> {
  const unavailable = !(await d.kafka.reachable());
  const refused = !unavailable && isClusterUnavailable(f.error);
  const gone = !unavailable && !refused && d.topicMissing !== undefined && isUnknownTopic(f.error);
  if (gone) d.topicMissing?.();
  const error = `${unavailable ? 'broker unreachable: ' : refused ? 'cluster unavailable: ' : gone ? 'topic missing: ' : ''}${f.error.name}: ${f.error.message}`;
  const dead = await markFailed(
    tx,
    f.rows.map((r) => ({ eventId: r.eventId, attemptsBefore: r.attempts, next: afterFailure(r.attempts, policy, at, unavailable || refused || gone) })),
    error,
  );
  const ids = f.rows.map((r) => r.eventId);
  const what = `${f.target} dispatch`;
  if (d.outage && unavailable) d.outage.sendFailed(error, ids);
  else if (gone) d.log.debug({ topic: f.topic, err: error }, `${what}: topic missing, backing off until the topic check creates it`);
  else d.log.warn({ topic: f.topic, rows: ids.length, firstEventId: ids[0], dead: dead.length, err: error }, `${what}: send failed, backing off`);
  if (dead.length) d.log.error({ topic: f.topic, eventIds: dead, err: error }, `${what}: rows DEAD after max attempts${f.target === 'msg' ? ' (their FLIDs are held)' : ''}`);
  return { failed: ids.length, dead: dead.length };
}
