// The state topic's watch (state-dispatch; docs/operations.md "Derived stores: the state topic").
// The state topic is a copy of committed Postgres state, rebuilt from it on its own:
//   check   the outbox's recorded positions (Postgres first), then the topic: missing, not
//           compacted, or ending below them (./topics.ts); and the progress of a re-seed.
//   repair  a missing topic is created with the gateway's settings (ensureTopics), a wrong policy
//           is set back (alterConfigs with every setting of topicSettings); then the re-seed
//           (outbox.reseed_state) puts every state row back to PENDING, with a new row for every
//           ACTIVE flight whose row the dispatch retention deleted, and the normal rounds resend
//           them: each flight's current state with its EVENT_ID / STATE_VERSION headers,
//           tombstones for the deleted and purged flights whose rows are still kept.
// Done = none of those rows is PENDING any more and none went DEAD. One log line when a re-seed
// starts, one when it ends; at most one start per msgx.dispatch.reseed-gap; a cluster that refuses
// (creation disabled, ACL, policy) is the watch's refusal: the condition names the store and the
// reason, one log line per distinct reason, retried with the watches' backoff.
import { DISPATCH_TASK } from '../core/tasks.ts';
import { LOCKS } from '../db/postgres.ts';
import { errorText, Refused, type Watch, Watched } from '../runtime/watch.ts';
import { wake } from '../sql/jobs.ts';
import * as Locks from '../sql/locks.ts';
import * as Outbox from '../sql/outbox/positions.ts';
import { describeProblems, type Problem, restoreCompactSettings, readTopic, topicProblems, topicWatch, type TopicWatchDeps } from './topics.ts';

/** A re-seed under way: rows to send up to `high`, DEAD rows before it, when it started, what it repairs. */
interface Reseed {
  high: number;
  rows: number;
  deadBefore: number;
  startedAt: number;
  reasons: string;
}

export class StateTopicWatch extends Watched<Problem[]> {
  private readonly d: TopicWatchDeps;
  protected readonly watch: Watch<Problem[]>;
  /** At most one re-seed starts per this interval (msgx.dispatch.reseed-gap). */
  private readonly reseedGapMs: number;
  private reseed: Reseed | null = null;
  /** Problems found by the last check (empty: fine, or a re-seed repairs them). */
  private problems: Problem[] = [];
  private lastStart = Number.NEGATIVE_INFINITY;
  private deadLeft: string | null = null;

  constructor(d: TopicWatchDeps & { reseedGapMs: number }) {
    super();
    this.d = d;
    this.reseedGapMs = d.reseedGapMs;
    this.watch = topicWatch<Problem[]>(d, 'state-topic', {
      check: () => this.look(),
      repair: (problems) => this.repair(problems),
      status: () => ({ problem: this.problem(), behind: this.problem() ? 1 : 0 }),
    });
  }

  private async look(): Promise<Problem[] | null> {
    const topic = this.d.spec.topic;
    if (this.reseed) await this.progress();
    const recorded = (await Outbox.readStatePositions(this.d.db)).map((r) => ({ partition: r.partition, next: BigInt(r.offset) }));
    const view = await readTopic(this.d.kafka, topic, true, this.d.timeoutMs);
    this.problems = topicProblems(view, recorded, 'compact');
    return this.problems.length ? this.problems : null;
  }

  private async repair(problems: Problem[]): Promise<void> {
    const now = this.d.clock.now().getTime();
    if (now - this.lastStart < this.reseedGapMs) return;
    const topic = this.d.spec.topic;
    const reasons = describeProblems(topic, problems);
    try {
      if (problems.some((p) => p.kind === 'missing')) await this.d.kafka.ensureTopics([this.d.spec]);
      if (problems.some((p) => p.kind === 'policy')) {
        const settings = await restoreCompactSettings(this.d.kafka, topic, this.d.timeoutMs);
        this.d.log.warn({ topic, settings }, 'state topic settings set back to the gateway\'s (docs/decisions.md "Derived topics")');
      }
    } catch (e) {
      throw new Refused(`cannot rebuild the state topic ${topic}: ${errorText(e)}`);
    }
    const r = await this.d.db.transaction().execute(async (tx) => {
      // no state round in flight: none can mark a row SENT with an offset of the lost topic after this
      await Locks.xactLock(tx, LOCKS.STATE_DISPATCH_ROUND);
      const x = await Outbox.reseedState(tx, this.d.clock.now());
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

  /** A re-seed is done when none of its rows is PENDING; DEAD ones are left to the operator. */
  private async progress(): Promise<void> {
    const r = this.reseed!;
    const p = (await Outbox.readReseedProgress(this.d.db, r.high))!;
    if (p.pending > 0) return;
    this.reseed = null;
    const seconds = Math.round((this.d.clock.now().getTime() - r.startedAt) / 100) / 10;
    if (p.dead > r.deadBefore) {
      this.deadLeft = `the state topic re-seed ended with ${p.dead - r.deadBefore} state row(s) DEAD: GET /ops/dispatch/dead?target=state, then npm run dispatch-replay -- --all --target state`;
      this.d.log.error({ store: 'state-topic', topic: this.d.spec.topic, rows: r.rows, dead: p.dead - r.deadBefore, seconds }, this.deadLeft);
      return;
    }
    this.deadLeft = null;
    this.watch.rebuilt();
    this.d.log.info({ store: 'state-topic', topic: this.d.spec.topic, rows: r.rows, seconds }, `state topic re-seed done: ${r.rows} flight state(s) sent again`);
  }

  private problem(): string | null {
    if (this.problems.length) return `${describeProblems(this.d.spec.topic, this.problems)} (re-seed due)`;
    if (this.reseed) return `re-seed in progress (${this.reseed.reasons})`;
    return this.deadLeft;
  }
}
