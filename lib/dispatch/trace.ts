// The dispatchers' spans (docs/operations.md "Tracing"): one PRODUCER span per Kafka record,
// `send <topic>`, continuing the trace stored with its outbox row, and the record's W3C headers
// (traceparent, tracestate: lib/contract/kafka.ts traceHeaders) naming that span, so that a
// consumer continues the same trace. A dispatcher restarted mid-send reads the same stored context
// and continues the same trace. A schd record carries many flights: its span continues the trace
// of its latest row (highest EVENT_ID: the newest message) and links the others'.
// Without tracing (deps.tracing undefined) every function here does nothing.
import { traceHeaders } from '../contract/kafka.ts';
import type { StoredContext, TraceSpan, Tracing } from '../runtime/tracing.ts';
import type { KafkaRecord, Placement } from './kafka.ts';
import type { Target } from './plan.ts';

/** What a record's span needs of the outbox rows it carries. */
export interface TracedRow {
  eventId: number;
  flid: string;
  trace: StoredContext;
}

export interface RecordSpans {
  /** The headers of record i (undefined: none to add). */
  headers(i: number): Record<string, string> | undefined;
  /** The send was acknowledged: each record's placement. */
  sent(placed: readonly Placement[]): void;
  /** The send failed: every record's span ends with the error. */
  failed(error: unknown): void;
}

const NONE: RecordSpans = { headers: () => undefined, sent: () => {}, failed: () => {} };

/** One span per record, `records[i]` carrying the rows `records[i]` (one row each on msg and state, many on schd). */
export function recordSpans(tracing: Tracing | undefined, target: Target, topic: string, records: readonly (readonly TracedRow[])[]): RecordSpans {
  if (!tracing) return NONE;
  const spans: TraceSpan[] = records.map((rows) => {
    const latest = rows.reduce((a, b) => (b.eventId > a.eventId ? b : a));
    return tracing.start(`send ${topic}`, latest.trace, {
      kind: 'producer',
      links: rows.length > 1 ? rows.filter((r) => r !== latest).map((r) => r.trace) : undefined,
      attributes: {
        'messaging.system': 'kafka',
        'messaging.operation.type': 'send',
        'messaging.destination.name': topic,
        'msgx.target': target,
        'msgx.event_id': latest.eventId,
        'msgx.flid': rows.length === 1 ? latest.flid : undefined,
        'msgx.records': rows.length > 1 ? rows.length : undefined,
      },
    });
  });
  return {
    headers: (i) => traceHeaders(spans[i].stored()),
    sent: (placed) =>
      spans.forEach((s, i) => s.end({ 'msgx.outcome': 'SENT', 'messaging.destination.partition.id': String(placed[i]?.partition ?? ''), 'messaging.kafka.offset': placed[i]?.offset ?? undefined })),
    failed: (error) => {
      const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      for (const s of spans) s.end({ 'msgx.outcome': 'FAILED' }, why);
    },
  };
}

/** `record` with the headers of span i added (the record itself when there are none). */
export function withTrace(record: KafkaRecord, spans: RecordSpans, i: number): KafkaRecord {
  const h = spans.headers(i);
  return h ? { ...record, headers: { ...record.headers, ...h } } : record;
}
