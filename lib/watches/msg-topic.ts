// The msg topic's watch (msg-dispatch; docs/operations.md "Derived stores: the msg topic"). The
// msg topic is an event history: a loss is detected and recorded, an operator decides
// (scripts/dispatch-resend.ts).
//   check   the outbox's recorded positions and open losses (Postgres first), then the topic
//           (./topics.ts): the lost events lose their recorded offset, and one open loss names
//           their range (ERROR line, counted in msgx_mirror_rebuilds_total{store="msg-topic"}).
//   repair  a missing topic is created again with the gateway's settings so that new events
//           flow; a cluster that refuses is the watch's refusal (backoff, condition).
// The condition names every open loss with the operator's two commands until one is run.
import { LOCKS } from '../db/postgres.ts';
import { errorText, Refused, type Watch, Watched } from '../runtime/watch.ts';
import * as Locks from '../sql/locks.ts';
import * as Outbox from '../sql/outbox/positions.ts';
import { describeProblems, lostPartitions, type Problem, readTopic, topicProblems, topicWatch, type TopicWatchDeps } from './topics.ts';

/** A loss the operator has not answered yet. */
interface OpenLoss {
  id: number;
  partitions: number[];
  events: number;
  first: number;
  last: number;
}

export class MsgTopicWatch extends Watched<'missing'> {
  private readonly d: TopicWatchDeps;
  protected readonly watch: Watch<'missing'>;
  private open: OpenLoss[] = [];

  constructor(d: TopicWatchDeps) {
    super();
    this.d = d;
    this.watch = topicWatch<'missing'>(d, 'msg-topic', {
      check: () => this.look(),
      repair: () => this.recreate(),
      status: () => ({ problem: this.problem(), behind: this.open.length ? Math.max(1, this.partitions().length) : 0 }),
    });
  }

  private async look(): Promise<'missing' | null> {
    const topic = this.d.spec.topic;
    const rows = await Outbox.checkMsgTopic(this.d.db, topic);
    const recorded = rows.filter((r) => r.partition !== null).map((r) => ({ partition: r.partition!, next: BigInt(r.offset!) }));
    this.open = rows.filter((r) => r.loss_id !== null).map((r) => ({ id: r.loss_id!, partitions: r.loss_partitions ?? [], events: r.loss_events ?? 0, first: r.loss_first!, last: r.loss_last! }));
    const view = await readTopic(this.d.kafka, topic, false, this.d.timeoutMs);
    const problems = topicProblems(view, recorded);
    if (problems.length) await this.record(problems, lostPartitions(problems, recorded));
    return view.exists ? null : 'missing';
  }

  /** The lost events lose their recorded offset and one open loss names their range. */
  private async record(problems: Problem[], lost: { partition: number; end: bigint }[]): Promise<void> {
    if (lost.length === 0) return;
    const topic = this.d.spec.topic;
    const detail = describeProblems(topic, problems);
    const loss = await this.d.db.transaction().execute(async (tx) => {
      // no msg round in flight: none marks a record of the lost topic SENT after this
      await Locks.xactLock(tx, LOCKS.MSG_DISPATCH_ROUND);
      return Outbox.recordMsgLoss(
        tx,
        topic,
        this.d.clock.now(),
        detail,
        lost.map((l) => l.partition),
        lost.map((l) => String(l.end)),
      );
    });
    if (!loss) return;
    this.watch.rebuilt();
    this.open.push({ id: loss.id, partitions: loss.partitions, events: loss.events, first: loss.first_event_id, last: loss.last_event_id });
    this.d.log.error(
      { store: 'msg-topic', topic, found: detail, events: loss.events, firstEventId: loss.first_event_id, lastEventId: loss.last_event_id, partitions: loss.partitions },
      `msg topic lost ${loss.events} event(s) the outbox had sent (EVENT_ID ${loss.first_event_id}..${loss.last_event_id}): the operator decides — npm run dispatch-resend -- --from ${loss.first_event_id}, or --acknowledge (docs/operations.md "Derived stores: the msg topic")`,
    );
  }

  /** A missing msg topic is created again with the gateway's settings so that new events flow. */
  private async recreate(): Promise<void> {
    try {
      await this.d.kafka.ensureTopics([this.d.spec]);
    } catch (e) {
      throw new Refused(`msg topic ${this.d.spec.topic} is missing and cannot be created again: ${errorText(e)}`);
    }
  }

  private partitions(): number[] {
    return [...new Set(this.open.flatMap((l) => l.partitions))].sort((a, b) => a - b);
  }

  private problem(): string | null {
    if (this.open.length === 0) return null;
    const events = this.open.reduce((n, l) => n + l.events, 0);
    const first = Math.min(...this.open.map((l) => l.first));
    const last = Math.max(...this.open.map((l) => l.last));
    return `the msg topic ${this.d.spec.topic} lost ${events} sent event(s), EVENT_ID ${first}..${last} (partitions ${this.partitions().join(',')}); resend: npm run dispatch-resend -- --from ${first}, or accept the loss: npm run dispatch-resend -- --acknowledge`;
  }
}
