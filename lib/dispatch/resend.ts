// The operator's answer to a loss of the msg topic (docs/operations.md "Derived stores: the msg
// topic"; found by lib/watches/msg-topic.ts): send a range of EVENT_IDs again from the outbox,
// or acknowledge the loss without resending. The gateway never resends on its own: the msg topic
// is an event history, and what to do about a lost range is the operator's decision.
//   resend  SENT msg events from..to back to PENDING (attempts 0): the msg round sends them again
//           in EVENT_ID order per FLID, after nothing it already sent of theirs is pending, with
//           their own EVENT_ID and payload — duplicates of what consumers already have (rule 1/2
//           of docs/consumers.md drop them); the open losses the range covers are closed;
//   acknowledge  every open loss closed as accepted (nothing sent).
// Events older than msgx.pipeline.event-retention are no longer in the outbox: a range starting
// below the oldest kept msg event is refused, naming it.
import { DISPATCH_TASK } from '../core/tasks.ts';
import { LOCKS, type Db } from '../db/postgres.ts';
import { wake } from '../sql/jobs.ts';
import * as Locks from '../sql/locks.ts';
import * as Outbox from '../sql/outbox/positions.ts';

/** The range cannot be resent (beyond retention, nothing there): the CLI's exit 1 with the reason. */
export class ResendRefused extends Error {
  override name = 'ResendRefused';
}

export interface ResendReport {
  /** The range sent again (null: acknowledge only). */
  range: { from: number; to: number } | null;
  events: number;
  flids: number;
  /** Losses closed, and the ones left open (a range covering only part of them). */
  closed: { id: number; first: number; last: number }[];
  open: { id: number; first: number; last: number }[];
}

/**
 * Resend msg events `from`..`to` (to: the newest event when omitted) and close the losses of
 * `topic` the range covers; with `acknowledge`, close every open loss (after the resend, if a
 * range is given). Throws ResendRefused when the range begins beyond retention or holds nothing.
 */
export async function resendMsgEvents(db: Db, o: { topic: string; from?: number; to?: number; acknowledge?: boolean; now: Date }): Promise<ResendReport> {
  return db.transaction().execute(async (tx) => {
    // no msg round in flight while the range is put back
    await Locks.xactLock(tx, LOCKS.MSG_DISPATCH_ROUND);
    const open = (await Outbox.listOpenLosses(tx, o.topic)).map((l) => ({ id: l.id, first: l.first_event_id, last: l.last_event_id }));
    let range: ResendReport['range'] = null;
    let events = 0;
    let flids = 0;
    if (o.from !== undefined) {
      const b = (await Outbox.readMsgEventBounds(tx))!;
      if (b.low === null || b.high === null) throw new ResendRefused('the outbox holds no msg event (all past msgx.pipeline.event-retention): nothing can be resent');
      if (o.from < b.low)
        throw new ResendRefused(
          `EVENT_ID ${o.from} is beyond retention: the outbox keeps msg events from ${b.low} to ${b.high} (msgx.pipeline.event-retention); resend from ${b.low} at the earliest, the events before it cannot be sent again`,
        );
      const to = o.to ?? b.high;
      if (o.from > b.high) throw new ResendRefused(`no msg event from ${o.from} on: the newest is ${b.high}`);
      const r = (await Outbox.resendMsgRange(tx, o.from, to))!;
      range = { from: o.from, to };
      events = r.events;
      flids = r.flids;
      if (events > 0) await wake(tx, DISPATCH_TASK.msg);
    }
    const covered = (l: { first: number; last: number }) => o.acknowledge || (range !== null && range.from <= l.first && range.to >= l.last);
    const closing = open.filter(covered);
    if (closing.length) {
      const what = range ? `resent EVENT_ID ${range.from}..${range.to} (${events} event(s))${o.acknowledge ? ', acknowledged' : ''}` : 'acknowledged by the operator, not resent';
      await Outbox.resolveLosses(
        tx,
        closing.map((l) => l.id),
        o.now,
        what,
      );
    }
    return { range, events, flids, closed: closing, open: open.filter((l) => !covered(l)) };
  });
}
