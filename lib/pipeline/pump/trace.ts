// The pump's spans (docs/operations.md "Tracing"), written once a batch's outcome is known, so
// that the steps only note a time:
//   `pump batch`   a trace of its own: the batch from chooseBatch to its terminal step, with a
//                  child span per step (decode, business, mirror, terminal) and a link to every
//                  message it applied;
//   `pump apply`   one per message, in the message's trace (its parent: the context stored with
//                  PROC_STATE), over the same time, the steps as its events, the batch's trace ID;
//                  attributes: message ID, TYPE/STYP, FLID, outcome and reason class.
// A message that failed (FAILED, DEAD) gets its `pump apply` span with the error's class. A batch
// rolled back and tried again smaller leaves no span: its messages' next batch writes theirs.
// steps.ts, choose.ts and terminal.ts call `deps.tracer?.…`: without tracing nothing here runs.
import { type SpanAttributes, type TraceTime, type Tracing, traceIdOf } from '../../runtime/tracing.ts';
import type { HeadRow } from '../../sql/proc-state.ts';

export type PumpStep = 'decode' | 'business' | 'mirror' | 'terminal';

/** What a span needs of a message of the batch (batch.ts MessageRef). */
interface MessageRef {
  h: HeadRow;
  kind: string | null;
  logFields: Record<string, unknown>;
}

interface BatchMarks {
  start: TraceTime;
  steps: [PumpStep, TraceTime][];
}

/** A message's attributes: ID, TYPE/STYP (its kind), FLID. No content. */
function messageAttributes(m: MessageRef): SpanAttributes {
  const kind = m.kind ?? '';
  const slash = kind.indexOf('/');
  return {
    'msgx.msg_id': m.h.msg_id,
    'msgx.type': slash > 0 ? kind.slice(0, slash) : kind || undefined,
    'msgx.styp': slash > 0 ? kind.slice(slash + 1) : undefined,
    'msgx.flid': (m.logFields.flid as string | undefined) ?? undefined,
  };
}

export class PumpTrace {
  private readonly batches = new WeakMap<HeadRow, BatchMarks>();
  private readonly tracing: Tracing;

  constructor(tracing: Tracing) {
    this.tracing = tracing;
  }

  /** A batch was chosen: its time starts now. */
  begin(heads: readonly HeadRow[]): void {
    const marks: BatchMarks = { start: this.tracing.now(), steps: [] };
    for (const h of heads) this.batches.set(h, marks);
  }

  /** The batch of `head` ended a step. */
  step(head: HeadRow, step: PumpStep): void {
    this.batches.get(head)?.steps.push([step, this.tracing.now()]);
  }

  /**
   * The terminal step ended: the batch's spans and each message's, with the outcomes that became
   * terminal. Written on the next turn of the event loop: the pump's next statements go out first,
   * and the spans are made while Postgres runs them.
   */
  applied(members: readonly MessageRef[], became: readonly { msg_id: number; state: string; reason_class: string | null }[]): void {
    const marks = members[0] && this.batches.get(members[0].h);
    if (!marks) return;
    marks.steps.push(['terminal', this.tracing.now()]);
    setImmediate(() => this.write(marks, members, became));
  }

  private write(marks: BatchMarks, members: readonly MessageRef[], became: readonly { msg_id: number; state: string; reason_class: string | null }[]): void {
    const end = marks.steps[marks.steps.length - 1][1];
    const batch = this.tracing.start('pump batch', null, {
      startTime: marks.start,
      links: members.map((m) => m.h.trace_context),
      attributes: { 'msgx.batch.size': members.length, 'msgx.batch.first': members[0].h.msg_id, 'msgx.batch.last': members[members.length - 1].h.msg_id },
    });
    const ctx = batch.stored();
    const batchTrace = traceIdOf(ctx) ?? undefined;
    let from = marks.start;
    for (const [name, at] of marks.steps) {
      this.tracing.start(name, ctx, { startTime: from }).end(undefined, undefined, at);
      from = at;
    }
    const outcome = new Map(became.map((b) => [b.msg_id, b]));
    for (const m of members) {
      const o = outcome.get(m.h.msg_id);
      const span = this.tracing.start('pump apply', m.h.trace_context, { startTime: marks.start, attributes: { ...messageAttributes(m), 'msgx.batch.trace_id': batchTrace } });
      for (const [name, at] of marks.steps) span.event(name, at);
      span.end({ 'msgx.outcome': o?.state ?? 'not-open', 'msgx.reason_class': o?.reason_class ?? undefined }, o?.state === 'DEAD' ? (o.reason_class ?? 'DEAD') : undefined, end);
    }
    batch.end(undefined, undefined, end);
  }

  /** A message's attempt failed (FAILED, or DEAD when its attempts are used up or its own failure). */
  failed(m: MessageRef, state: string, reasonClass: string): void {
    const marks = this.batches.get(m.h);
    const span = this.tracing.start('pump apply', m.h.trace_context, { startTime: marks?.start, attributes: messageAttributes(m) });
    for (const [name, at] of marks?.steps ?? []) span.event(name, at);
    span.end({ 'msgx.outcome': state, 'msgx.reason_class': reasonClass }, reasonClass);
  }
}
