// The derived topics' checks (docs/operations.md "Derived stores: the state topic" and "…: the
// msg topic"; docs/decisions.md "Derived topics"). The state topic is a copy of committed
// Postgres state: state-dispatch rebuilds it on its own. The msg topic is an event history:
// msg-dispatch detects a loss, and an operator decides (scripts/dispatch-resend.ts).
//
// What "lost" means, per topic: the topic is missing, its cleanup.policy is not the gateway's
// (state topic: compact), or a partition's end offset is below the one the outbox recorded
// (per partition, one past the highest offset acknowledged for a SENT row): records the outbox
// saw acknowledged are not there any more (deleted and recreated, truncated). Postgres is read
// BEFORE the topic: every SENT mark it saw was committed after its record was appended, so a
// live topic's end is past it (no false alarm from a send in flight).
//
// Cost: every CHECK_EVERY_MS one indexed query (outbox.state_positions / outbox.msg_topic_check)
// and one admin connection with the offsets request (plus describeConfigs on the state topic);
// never per round. A send that fails because the topic is missing asks for a check at once
// (checkSoon), and costs the events no attempt (lib/dispatch/msg.ts, state.ts).
//
// State topic heal: a missing topic is created with the gateway's settings (ensureTopics), a
// wrong policy is set back (alterConfigs with every setting of topicSettings); then the re-seed
// (outbox.reseed_state) puts every state row back to PENDING, with a new row for every ACTIVE
// flight whose row the dispatch retention deleted, and the normal rounds resend them: each
// flight's current state with its EVENT_ID / STATE_VERSION headers, tombstones for the deleted
// and purged flights whose rows are still kept. Done = none of those rows is PENDING any more
// and none went DEAD. One log line when a re-seed starts, one when it ends; at most one start
// per msgx.dispatch.reseed-gap; a cluster that refuses (creation disabled, ACL, policy) is a condition
// naming the store and the reason, one log line per distinct reason, retried with backoff.
import type { Admin } from 'kafkajs';
import kafkajs from '../db/kafkajs.ts';
import type { Clock } from '../core/clock.ts';
import { DISPATCH_TASK } from '../core/tasks.ts';
import { withTimeout } from '../core/timeout.ts';
import { LOCKS, type Db } from '../db/postgres.ts';
import { pgOne, pgRows } from '../db/statement.ts';
import { wake } from '../sql/jobs.ts';
import { clearCondition, setCondition } from '../runtime/conditions.ts';
import type { Logger } from '../runtime/log.ts';
import { mirrorBehind, mirrorRebuilds, registerMirrorMetrics, type Store } from '../runtime/mirror-metrics.ts';
import * as Locks from '../sql/locks.ts';
import * as Outbox from '../sql/outbox.ts';
import { topicSettings, type KafkaEdge, type TopicSpec } from './kafka.ts';

const { ConfigResourceTypes } = kafkajs;

/** Period of the steady-state check. */
export const CHECK_EVERY_MS = 10_000;
/** Period while a store is behind (re-seed in progress, loss open, rebuild refused). */
export const BEHIND_EVERY_MS = 2_000;
/** Backoff of a refused rebuild: doubles from the first step up to the cap. */
export const REFUSED_BACKOFF_MS = [5_000, 300_000] as const;

// ---- pure logic

export interface TopicView {
  exists: boolean;
  /** End offset (high watermark) per partition. */
  ends: ReadonlyMap<number, bigint>;
  /** cleanup.policy as the cluster reports it (undefined: not asked). */
  policy?: string | null;
}

export interface Recorded {
  partition: number;
  /** One past the highest offset the outbox recorded for a SENT row in that partition. */
  next: bigint;
}

export type Problem = { kind: 'missing' } | { kind: 'policy'; expected: string; actual: string | null } | { kind: 'behind'; partition: number; end: bigint; recorded: bigint };

/**
 * What is wrong with a topic: missing (nothing else is said then); a cleanup.policy other than
 * `policy` (when given); per recorded partition an end offset below the recorded one (a
 * partition the topic lacks has end 0).
 */
export function topicProblems(view: TopicView, recorded: readonly Recorded[], policy?: string): Problem[] {
  if (!view.exists) return [{ kind: 'missing' }];
  const out: Problem[] = [];
  if (policy !== undefined && view.policy !== undefined && view.policy !== policy) out.push({ kind: 'policy', expected: policy, actual: view.policy });
  for (const r of recorded) {
    const end = view.ends.get(r.partition) ?? 0n;
    if (end < r.next) out.push({ kind: 'behind', partition: r.partition, end, recorded: r.next });
  }
  return out;
}

/** One line for the log and /healthz. */
export function describeProblems(topic: string, problems: readonly Problem[]): string {
  return problems
    .map((p) =>
      p.kind === 'missing'
        ? `topic ${topic} does not exist`
        : p.kind === 'policy'
          ? `topic ${topic} has cleanup.policy=${p.actual ?? '(unset)'}, not ${p.expected}`
          : `partition ${p.partition} of ${topic} ends at offset ${p.end}, below the ${p.recorded} the outbox recorded`,
    )
    .join('; ');
}

/**
 * The partitions whose recorded records the topic lost and the end offset from which on they
 * are gone: every recorded partition (from 0) for a missing topic, else the behind ones.
 */
export function lostPartitions(problems: readonly Problem[], recorded: readonly Recorded[]): { partition: number; end: bigint }[] {
  if (problems.some((p) => p.kind === 'missing')) return recorded.map((r) => ({ partition: r.partition, end: 0n }));
  return problems.flatMap((p) => (p.kind === 'behind' ? [{ partition: p.partition, end: p.end }] : []));
}

/** Wait before retrying a refused rebuild, after `failures` refusals in a row (≥ 1). */
export function refusedBackoffMs(failures: number): number {
  const [first, cap] = REFUSED_BACKOFF_MS;
  return Math.min(cap, first * 2 ** Math.max(0, Math.min(failures - 1, 20)));
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

// ---- the Kafka edge of the checks

/** The topic's end offsets (and its cleanup.policy when asked), on one admin connection. */
export async function readTopic(kafka: KafkaEdge, topic: string, withPolicy: boolean, timeoutMs: number): Promise<TopicView> {
  const admin: Admin = kafka.admin();
  try {
    await withTimeout(timeoutMs, 'kafka admin connect', admin.connect());
    let offsets: { partition: number; high: string }[];
    try {
      offsets = await withTimeout(timeoutMs, 'kafka fetchTopicOffsets', admin.fetchTopicOffsets(topic));
    } catch (e) {
      if (isUnknownTopic(e)) return { exists: false, ends: new Map() };
      throw e;
    }
    const ends = new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
    if (!withPolicy) return { exists: true, ends };
    const d = await withTimeout(
      timeoutMs,
      'kafka describeConfigs',
      admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['cleanup.policy'] }], includeSynonyms: false }),
    );
    const policy = d.resources[0]?.configEntries.find((c) => c.configName === 'cleanup.policy')?.configValue ?? null;
    return { exists: true, ends, policy };
  } finally {
    void withTimeout(timeoutMs, 'kafka admin disconnect', admin.disconnect()).catch(() => {});
  }
}

/** Sets every setting of the gateway's compacted topic back on `topic` (alterConfigs replaces the topic's dynamic settings with these). */
async function restoreCompactSettings(kafka: KafkaEdge, topic: string, timeoutMs: number): Promise<Record<string, string>> {
  const admin: Admin = kafka.admin();
  try {
    await withTimeout(timeoutMs, 'kafka admin connect', admin.connect());
    const cluster = await withTimeout(timeoutMs, 'kafka describeCluster', admin.describeCluster());
    const settings = topicSettings(0, Math.min(3, cluster.brokers.length), true);
    await withTimeout(
      timeoutMs,
      'kafka alterConfigs',
      admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: Object.entries(settings).map(([name, value]) => ({ name, value })) }] }),
    );
    return settings;
  } finally {
    void withTimeout(timeoutMs, 'kafka admin disconnect', admin.disconnect()).catch(() => {});
  }
}

const errorText = (e: unknown) => {
  const x = e as { name?: string; type?: string; message?: string };
  return `${x.type ?? x.name ?? 'Error'}: ${x.message ?? String(e)}`;
};

// ---- readiness

const CONDITION: Record<Exclude<Store, 'redis'>, string> = { 'state-topic': 'state-topic', 'msg-topic': 'msg-topic' };

/** Before the HTTP server answers: not ready until the first check of `store` ran. */
export function holdUntilChecked(store: Exclude<Store, 'redis'>): void {
  registerMirrorMetrics([store]);
  setCondition(CONDITION[store], 'not checked yet (start-up)');
}

export interface WatchDeps {
  kafka: KafkaEdge;
  db: Db;
  log: Logger;
  clock: Clock;
  spec: TopicSpec;
  timeoutMs: number;
  /** Check periods (tests); default CHECK_EVERY_MS / BEHIND_EVERY_MS. */
  everyMs?: number;
  behindEveryMs?: number;
}

/** The loop both watches share: one check at a time, the next one after `next()` ms, or at once on checkSoon. */
abstract class Watch {
  protected readonly d: WatchDeps;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private stopped = false;
  private again = false;
  private lastSoon = 0;

  constructor(d: WatchDeps) {
    this.d = d;
  }

  /** The readiness condition this watch sets. */
  protected abstract readonly store: Exclude<Store, 'redis'>;
  /** A check has reached a verdict since start (until then a failed check names its error). */
  private verdict = false;

  protected abstract checkOnce(): Promise<void>;
  /** True while the store is behind (the short period). */
  protected abstract behind(): boolean;

  /** The first check (bounded: a Kafka that does not answer leaves the start-up condition set), then the loop. */
  async start(): Promise<void> {
    let t: NodeJS.Timeout | undefined;
    await Promise.race([this.check(), new Promise<void>((r) => (t = setTimeout(r, this.d.timeoutMs * 4)))]);
    clearTimeout(t);
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** A send found the topic missing: check now (concurrent asks share one check; at most one per BEHIND_EVERY_MS). */
  checkSoon(): void {
    if (this.stopped) return;
    const now = Date.now();
    if (now - this.lastSoon < (this.d.behindEveryMs ?? BEHIND_EVERY_MS)) return;
    this.lastSoon = now;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    void this.check().finally(() => this.schedule());
  }

  check(): Promise<void> {
    this.running ??= this.checkOnce()
      .then(() => {
        this.verdict = true;
      })
      .catch((e) => {
        this.d.log.debug({ err: e }, 'topic check could not run; kept its last verdict');
        // no verdict yet: /healthz says why, not only "not checked yet"
        if (!this.verdict) setCondition(CONDITION[this.store], `not checked yet: the check could not run (${errorText(e)}); retried every ${this.d.everyMs ?? CHECK_EVERY_MS} ms`, this.d.clock.now());
      })
      .finally(() => (this.running = null));
    return this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    const every = this.again ? 0 : this.behind() ? (this.d.behindEveryMs ?? BEHIND_EVERY_MS) : (this.d.everyMs ?? CHECK_EVERY_MS);
    this.again = false;
    this.timer = setTimeout(() => void this.check().finally(() => this.schedule()), every);
    this.timer.unref();
  }
}

// ---- the state topic (state-dispatch)

interface Reseed {
  high: number;
  rows: number;
  deadBefore: number;
  startedAt: number;
  reasons: string;
}

export class StateTopicWatch extends Watch {
  protected readonly store = 'state-topic';
  /** At most one re-seed starts per this interval (msgx.dispatch.reseed-gap). */
  private readonly reseedGapMs: number;
  private reseed: Reseed | null = null;
  /** Problems found by the last check (empty: fine). */
  private problems: Problem[] = [];
  private refused: { reason: string; failures: number; retryAt: number } | null = null;
  private lastStart = 0;
  private deadLeft: string | null = null;

  constructor(d: WatchDeps & { reseedGapMs: number }) {
    super(d);
    this.reseedGapMs = d.reseedGapMs;
  }

  protected behind(): boolean {
    return this.reseed !== null || this.problems.length > 0 || this.refused !== null;
  }

  protected async checkOnce(): Promise<void> {
    const topic = this.d.spec.topic;
    if (this.reseed) await this.progress();
    const recorded = (await pgRows(this.d.db, Outbox.statePositions)).map((r) => ({ partition: r.partition, next: BigInt(r.offset) }));
    const view = await readTopic(this.d.kafka, topic, true, this.d.timeoutMs);
    this.problems = topicProblems(view, recorded, 'compact');
    if (this.problems.length > 0) await this.heal(describeProblems(topic, this.problems));
    this.publish();
  }

  private async heal(reasons: string): Promise<void> {
    const now = this.d.clock.now().getTime();
    if (this.refused && now < this.refused.retryAt) return;
    if (now - this.lastStart < this.reseedGapMs) return;
    const topic = this.d.spec.topic;
    try {
      if (this.problems.some((p) => p.kind === 'missing')) await this.d.kafka.ensureTopics([this.d.spec]);
      if (this.problems.some((p) => p.kind === 'policy')) {
        const settings = await restoreCompactSettings(this.d.kafka, topic, this.d.timeoutMs);
        this.d.log.warn({ topic, settings }, 'state topic settings set back to the gateway\'s (docs/decisions.md "Derived topics")');
      }
    } catch (e) {
      const reason = `cannot rebuild the state topic ${topic}: ${errorText(e)}`;
      const failures = (this.refused?.failures ?? 0) + 1;
      if (this.refused?.reason !== reason) this.d.log.error({ store: 'state-topic', topic, found: reasons, err: errorText(e) }, `${reason}; retried with backoff`);
      this.refused = { reason, failures, retryAt: now + refusedBackoffMs(failures) };
      return;
    }
    this.refused = null;
    const r = await this.d.db.transaction().execute(async (tx) => {
      // no state round in flight: none can mark a row SENT with an offset of the lost topic after this
      await pgRows(tx, Locks.xactLock, LOCKS.STATE_DISPATCH_ROUND);
      const x = await pgOne(tx, Outbox.reseedState, this.d.clock.now());
      await wake(tx, DISPATCH_TASK.state);
      return x!;
    });
    this.lastStart = now;
    const rows = r.inserted + r.requeued;
    this.d.log.warn({ store: 'state-topic', topic, found: reasons, rows, newRows: r.inserted }, `state topic re-seed started: ${rows} flight state(s) to send again`);
    const prev = this.reseed;
    this.reseed = { high: Math.max(r.high ?? 0, prev?.high ?? 0), rows: rows + (prev?.rows ?? 0), deadBefore: prev?.deadBefore ?? r.dead, startedAt: prev?.startedAt ?? now, reasons };
    this.problems = [];
  }

  private async progress(): Promise<void> {
    const r = this.reseed!;
    const p = (await pgOne(this.d.db, Outbox.reseedProgress, r.high))!;
    if (p.pending > 0) return;
    this.reseed = null;
    const seconds = Math.round((this.d.clock.now().getTime() - r.startedAt) / 100) / 10;
    if (p.dead > r.deadBefore) {
      this.deadLeft = `the state topic re-seed ended with ${p.dead - r.deadBefore} state row(s) DEAD: GET /ops/dispatch/dead?target=state, then npm run dispatch-replay -- --all --target state`;
      this.d.log.error({ store: 'state-topic', topic: this.d.spec.topic, rows: r.rows, dead: p.dead - r.deadBefore, seconds }, this.deadLeft);
      return;
    }
    this.deadLeft = null;
    mirrorRebuilds.inc({ store: 'state-topic' });
    this.d.log.info({ store: 'state-topic', topic: this.d.spec.topic, rows: r.rows, seconds }, `state topic re-seed done: ${r.rows} flight state(s) sent again`);
  }

  private publish(): void {
    const topic = this.d.spec.topic;
    const reason = this.refused
      ? this.refused.reason
      : this.problems.length
        ? `${describeProblems(topic, this.problems)} (re-seed due)`
        : this.reseed
          ? `re-seed in progress (${this.reseed.reasons})`
          : this.deadLeft;
    mirrorBehind.set({ store: 'state-topic' }, reason ? 1 : 0);
    if (reason) setCondition(CONDITION['state-topic'], reason, this.d.clock.now());
    else clearCondition(CONDITION['state-topic']);
  }
}

// ---- the msg topic (msg-dispatch)

export class MsgTopicWatch extends Watch {
  protected readonly store = 'msg-topic';
  private open: { id: number; partitions: number[]; events: number; first: number; last: number }[] = [];
  private refused: { reason: string; failures: number; retryAt: number } | null = null;

  protected behind(): boolean {
    return this.open.length > 0 || this.refused !== null;
  }

  protected async checkOnce(): Promise<void> {
    const topic = this.d.spec.topic;
    const rows = await pgRows(this.d.db, Outbox.msgTopicCheck, topic);
    const recorded = rows.filter((r) => r.partition !== null).map((r) => ({ partition: r.partition!, next: BigInt(r.offset!) }));
    this.open = rows.filter((r) => r.loss_id !== null).map((r) => ({ id: r.loss_id!, partitions: r.loss_partitions ?? [], events: r.loss_events ?? 0, first: r.loss_first!, last: r.loss_last! }));
    const view = await readTopic(this.d.kafka, topic, false, this.d.timeoutMs);
    const problems = topicProblems(view, recorded);
    if (problems.length) await this.record(problems, lostPartitions(problems, recorded));
    if (!view.exists) await this.recreate();
    this.publish();
  }

  /** The lost events lose their recorded offset and one open loss names their range. */
  private async record(problems: Problem[], lost: { partition: number; end: bigint }[]): Promise<void> {
    if (lost.length === 0) return;
    const topic = this.d.spec.topic;
    const detail = describeProblems(topic, problems);
    const loss = await this.d.db.transaction().execute(async (tx) => {
      // no msg round in flight: none marks a record of the lost topic SENT after this
      await pgRows(tx, Locks.xactLock, LOCKS.MSG_DISPATCH_ROUND);
      return pgOne(
        tx,
        Outbox.recordMsgLoss,
        topic,
        this.d.clock.now(),
        detail,
        lost.map((l) => l.partition),
        lost.map((l) => String(l.end)),
      );
    });
    if (!loss) return;
    mirrorRebuilds.inc({ store: 'msg-topic' });
    this.open.push({ id: loss.id, partitions: loss.partitions, events: loss.events, first: loss.first_event_id, last: loss.last_event_id });
    this.d.log.error(
      { store: 'msg-topic', topic, found: detail, events: loss.events, firstEventId: loss.first_event_id, lastEventId: loss.last_event_id, partitions: loss.partitions },
      `msg topic lost ${loss.events} event(s) the outbox had sent (EVENT_ID ${loss.first_event_id}..${loss.last_event_id}): the operator decides — npm run dispatch-resend -- --from ${loss.first_event_id}, or --acknowledge (docs/operations.md "Derived stores: the msg topic")`,
    );
  }

  /** A missing msg topic is created again with the gateway's settings so that new events flow. */
  private async recreate(): Promise<void> {
    const now = this.d.clock.now().getTime();
    if (this.refused && now < this.refused.retryAt) return;
    try {
      await this.d.kafka.ensureTopics([this.d.spec]);
      if (this.refused) this.d.log.warn({ store: 'msg-topic', topic: this.d.spec.topic }, 'msg topic created again');
      this.refused = null;
    } catch (e) {
      const reason = `msg topic ${this.d.spec.topic} is missing and cannot be created again: ${errorText(e)}`;
      const failures = (this.refused?.failures ?? 0) + 1;
      if (this.refused?.reason !== reason) this.d.log.error({ store: 'msg-topic', topic: this.d.spec.topic, err: errorText(e) }, `${reason}; retried with backoff`);
      this.refused = { reason, failures, retryAt: now + refusedBackoffMs(failures) };
    }
  }

  private publish(): void {
    const partitions = new Set(this.open.flatMap((l) => l.partitions));
    mirrorBehind.set({ store: 'msg-topic' }, this.open.length ? Math.max(1, partitions.size) : this.refused ? 1 : 0);
    const parts: string[] = [];
    if (this.refused) parts.push(this.refused.reason);
    if (this.open.length) {
      const events = this.open.reduce((n, l) => n + l.events, 0);
      const first = Math.min(...this.open.map((l) => l.first));
      const last = Math.max(...this.open.map((l) => l.last));
      parts.push(
        `the msg topic ${this.d.spec.topic} lost ${events} sent event(s), EVENT_ID ${first}..${last} (partitions ${[...partitions].sort((a, b) => a - b).join(',')}); resend: npm run dispatch-resend -- --from ${first}, or accept the loss: npm run dispatch-resend -- --acknowledge`,
      );
    }
    if (parts.length) setCondition(CONDITION['msg-topic'], parts.join('; '), this.d.clock.now());
    else clearCondition(CONDITION['msg-topic']);
  }
}
