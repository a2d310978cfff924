// Tracing (docs/operations.md "Tracing"): one OpenTelemetry trace per inbox message, its context
// stored with the data (PROC_STATE, MSG_EVENT: `traceparent`, then a space and `tracestate` when
// there is one) so that every process, after any restart, continues it. This module is the port
// the pipeline and the dispatchers call; it imports nothing of OpenTelemetry. Off (msgx.tracing,
// the default): startTracing returns undefined and no module of OpenTelemetry is ever loaded (the
// callers' `deps.tracing?.…` hooks do nothing); on: lib/runtime/otel.ts, imported then
// (lib/runtime/start-tracing.ts).

/** A stored trace context: `traceparent[ tracestate]` (W3C Trace Context), or null. */
export type StoredContext = string | null;

export type SpanAttributes = Record<string, string | number | boolean | null | undefined>;

/** A point in time as the tracing library measures it (opaque to the callers). */
export type TraceTime = unknown;

export interface SpanOptions {
  attributes?: SpanAttributes;
  /** Other traces this span is about (stored contexts; null entries are skipped). */
  links?: readonly StoredContext[];
  kind?: 'internal' | 'producer' | 'consumer';
  /** Started (ended) at this time rather than now: spans written once a batch's outcome is known. */
  startTime?: TraceTime;
}

export interface TraceSpan {
  /** A named point of this span (a step of the pump), at `time` or now. */
  event(name: string, time?: TraceTime): void;
  /** Ends the span with its outcome's attributes; `error`: the status is ERROR with this text. */
  end(attributes?: SpanAttributes, error?: string, endTime?: TraceTime): void;
  /** This span's context as stored with a row or sent in a record's headers (null: none, an invalid context). */
  stored(): StoredContext;
}

export interface Tracing {
  /** A span continuing the stored context `parent` (null: the root of a new trace). */
  start(name: string, parent: StoredContext, options?: SpanOptions): TraceSpan;
  /** Now, as the tracing library measures it (for spans written after the fact). */
  now(): TraceTime;
  /** Exports what is pending and stops (process shutdown), within `ms`. */
  shutdown(ms: number): Promise<void>;
}

/** The trace ID of a stored context (null: none): on log lines and in the console, without OpenTelemetry. */
export function traceIdOf(ctx: StoredContext | undefined): string | null {
  return ctx && ctx.length >= 55 && ctx[2] === '-' ? ctx.slice(3, 35) : null;
}

/** `{ traceId }` for a log line of a message that has a stored context, else nothing. */
export function traceField(ctx: StoredContext | undefined): { traceId?: string } {
  const id = traceIdOf(ctx);
  return id ? { traceId: id } : {};
}

/** The console's link to a trace: the template (msgx.tracing.link) with {traceId} replaced; null without either. */
export function traceLink(template: string, traceId: string | null): string | null {
  return template && traceId ? template.replaceAll('{traceId}', traceId) : null;
}
