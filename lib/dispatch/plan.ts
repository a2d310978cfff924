// The pure decisions of the three dispatchers, msg, schd and state (docs/consumers.md "The consumer rules"), no I/O:
//   - which msg events a round may send (the hold rule: never overtake within a FLID),
//   - what a failed send does to an event (backoff ladder, DEAD after max attempts),
//   - per-record offsets from Kafka's per-partition base offsets,
//   - how msg records are chunked and how schd states are packed into SCHD/FLTR records.
// The hold rule runs in SQL at runtime (lib/dispatch/msg.ts: it must not load held events to
// find the free ones); `releasable` below is its executable definition, and the integration
// tests compare the SQL against it.
// The values themselves (msg payloads, schd records) are built in lib/contract/kafka.ts.
import { schdRecord } from '../contract/kafka.ts';

/** The outbox targets: the msg topic (one change per event), the schd topic (batches of complete states) and the state topic (compacted: the complete state per FLID). */
export type Target = 'msg' | 'schd' | 'state';

export type EventState = 'PENDING' | 'SENT' | 'DEAD' | 'SKIPPED';

export interface OutboxEvent {
  eventId: number;
  flid: string;
  state: EventState;
  /** null = due at once. */
  nextAttemptAt: Date | null;
}

export const isDue = (e: OutboxEvent, now: Date) => e.state === 'PENDING' && (e.nextAttemptAt === null || e.nextAttemptAt.getTime() <= now.getTime());

/**
 * The events a msg round freezes: PENDING and due, in EVENT_ID order, at most `limit`, and only
 * those whose FLID has no earlier event that is DEAD or PENDING-but-not-due (SENT and SKIPPED
 * earlier events do not hold). Because the rule is prefix-closed per FLID, any EVENT_ID-ordered
 * prefix of the result keeps every FLID's order.
 */
export function releasable(events: readonly OutboxEvent[], now: Date, limit: number): number[] {
  const sorted = [...events].sort((a, b) => a.eventId - b.eventId);
  const held = new Set<string>();
  const out: number[] = [];
  for (const e of sorted) {
    if (out.length >= limit) break;
    if (e.state === 'SENT' || e.state === 'SKIPPED') continue;
    if (held.has(e.flid)) continue;
    if (!isDue(e, now)) {
      held.add(e.flid); // DEAD, or PENDING backing off: everything later of this FLID waits
      continue;
    }
    out.push(e.eventId);
  }
  return out;
}

export interface RetryPolicy {
  /** msgx.dispatch.backoff; the last step repeats. */
  ladder: readonly number[];
  /** msgx.dispatch.max-attempts. */
  maxAttempts: number;
}

export type AfterFailure = { state: 'PENDING'; attempts: number; nextAttemptAt: Date } | { state: 'DEAD'; attempts: number; nextAttemptAt: null };

/**
 * A failed send of an event that had `attempts` failed sends before this one. `unavailable`
 * means the cluster did not answer a metadata request right after the failure
 * (KafkaEdge.reachable, never the error's text): not the event's fault, it keeps its attempt
 * count and never turns into a dead letter. Any failure while the broker answers (an error
 * answer, a send that hangs on a live broker, …) counts an attempt and goes DEAD at max attempts.
 */
export function afterFailure(attempts: number, p: RetryPolicy, now: Date, unavailable = false): AfterFailure {
  // Kafka not reachable (no metadata answer): the record was never offered to a broker, so no
  // attempt is counted and the event never goes DEAD for it; it retries on the ladder's step.
  if (unavailable) return { state: 'PENDING', attempts, nextAttemptAt: new Date(now.getTime() + p.ladder[Math.min(attempts, p.ladder.length - 1)]) };
  const n = attempts + 1;
  if (n >= p.maxAttempts) return { state: 'DEAD', attempts: n, nextAttemptAt: null };
  const step = p.ladder[Math.min(n - 1, p.ladder.length - 1)];
  return { state: 'PENDING', attempts: n, nextAttemptAt: new Date(now.getTime() + step) };
}

export interface PartitionAck {
  partition: number;
  /** Offset of the first record of this send in that partition (Kafka's RecordMetadata.baseOffset). */
  baseOffset: string;
}

/**
 * Offsets of the records of one acknowledged send. `partitions[i]` is the partition record i
 * was sent to; within a partition the records keep their order and take consecutive offsets
 * from the partition's base offset. A partition without an ack yields offset null.
 */
export function offsetsOf(partitions: readonly number[], acks: readonly PartitionAck[]): (string | null)[] {
  const base = new Map(acks.map((a) => [a.partition, BigInt(a.baseOffset)]));
  const seen = new Map<number, bigint>();
  return partitions.map((p) => {
    const b = base.get(p);
    if (b === undefined || b < 0n) return null;
    const i = seen.get(p) ?? 0n;
    seen.set(p, i + 1n);
    return (b + i).toString();
  });
}

/** Consecutive groups of indexes whose sizes sum to at most `max` (an item larger than max is alone). */
export function chunkBySize(sizes: readonly number[], max: number): number[][] {
  const out: number[][] = [];
  let cur: number[] = [];
  let total = 0;
  sizes.forEach((s, i) => {
    if (cur.length > 0 && total + s > max) {
      out.push(cur);
      cur = [];
      total = 0;
    }
    cur.push(i);
    total += s;
  });
  if (cur.length > 0) out.push(cur);
  return out;
}

export interface SchdSplit {
  /** Records in input order; `members` are indexes into the input. */
  records: { value: string; members: number[] }[];
  /** Indexes of states that do not fit in a record of max bytes even alone. */
  oversize: number[];
}

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/** Pack serialised states, in order, greedily into records of at most `maxBytes` (UTF-8). */
export function splitSchd(states: readonly string[], maxBytes: number): SchdSplit {
  const records: SchdSplit['records'] = [];
  const oversize: number[] = [];
  // envelope without states: `{"SCHD":{"RECS":` + digits + `,"FLTR":[` + `]}}`; commas between states
  const envelope = (n: number) => bytes(schdRecord([])) - 1 + String(n).length;
  let cur: number[] = [];
  let payload = 0; // sum of state bytes + commas
  const flush = () => {
    if (cur.length) records.push({ value: schdRecord(cur.map((i) => states[i])), members: cur });
    cur = [];
    payload = 0;
  };
  states.forEach((s, i) => {
    const b = bytes(s);
    if (envelope(1) + b > maxBytes) {
      oversize.push(i);
      return;
    }
    const next = payload + (cur.length ? 1 : 0) + b;
    if (cur.length && envelope(cur.length + 1) + next > maxBytes) {
      flush();
      payload = b;
    } else payload = next;
    cur.push(i);
  });
  flush();
  return { records, oversize };
}
