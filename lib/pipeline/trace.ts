// Intake's and backfill's spans (docs/operations.md "Tracing"). Intake's take of a message is the
// root of the message's trace: its context is what PROC_STATE stores (enqueue), and every later
// span of the message (the pump's, backfill's, the dispatchers', a consumer's) continues it.
// Without tracing (deps.tracing undefined) nothing here runs.
import type { TraceSpan, Tracing } from '../runtime/tracing.ts';

export interface Taking {
  /** The context to store with each row, index for index. */
  contexts: (string | null)[];
  /** The round committed: the rows `inserted` were new (the others were known already). */
  end(inserted: readonly number[]): void;
}

/**
 * One root span per inbox row intake takes in this round, but none for the rows it knows already
 * (`known`: a full scan reads unfinished rows below the watermark again; their insert does nothing).
 */
export function takeSpans(tracing: Tracing | undefined, rows: readonly { id: number }[], known: ReadonlySet<number> = new Set()): Taking | null {
  if (!tracing || rows.length === 0) return null;
  const spans = rows.map((r) => (known.has(r.id) ? null : tracing.start('intake take', null, { attributes: { 'msgx.msg_id': r.id } })));
  return {
    contexts: spans.map((s) => s?.stored() ?? null),
    end: (inserted) => {
      const fresh = new Set(inserted);
      spans.forEach((s, i) => s?.end({ 'msgx.outcome': fresh.has(rows[i].id) ? 'PENDING' : 'known' }));
    },
  };
}

/** What a backfill round did with each of its candidates. */
export interface BackfillOutcomes {
  written: readonly number[];
  missing: readonly number[];
  transient: readonly number[];
  abandonedDeadline: readonly number[];
}

/** One span per message a backfill round settled, in the message's trace, from the round's start to now. */
export function backfillSpans(tracing: Tracing | undefined, start: unknown, rows: readonly { msg_id: number; trace_context: string | null }[], o: BackfillOutcomes): void {
  if (!tracing) return;
  const outcome = new Map<number, string>();
  for (const id of o.written) outcome.set(id, 'MARKED');
  for (const id of o.missing) outcome.set(id, 'MISSING_ROW');
  for (const id of o.transient) outcome.set(id, 'TRANSIENT');
  for (const id of o.abandonedDeadline) outcome.set(id, 'TRANSIENT_DEADLINE');
  for (const r of rows) {
    const s: TraceSpan = tracing.start('backfill', r.trace_context, { startTime: start, attributes: { 'msgx.msg_id': r.msg_id } });
    const what = outcome.get(r.msg_id) ?? 'none';
    s.end({ 'msgx.outcome': what }, what === 'TRANSIENT' || what === 'TRANSIENT_DEADLINE' ? 'the inbox write failed' : undefined);
  }
}
