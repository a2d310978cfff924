// The Tracing port (lib/runtime/tracing.ts) on OpenTelemetry's SDK: imported only when
// msgx.tracing is on. Configured as OpenTelemetry's own SDKs are, by the standard variables:
// OTEL_TRACES_EXPORTER (otlp, the default: OTLP over HTTP, protobuf, OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, …;
// zipkin: OTEL_EXPORTER_ZIPKIN_ENDPOINT; console; none), OTEL_TRACES_SAMPLER and its _ARG,
// OTEL_SERVICE_NAME (default msgx-<process>) and OTEL_RESOURCE_ATTRIBUTES. No context manager:
// every span names its parent, read from the stored context of the row it works on.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type HrTime, type Link, type Span, type SpanContext, type TimeInput } from '@opentelemetry/api';
import { hrTime, parseTraceParent, setGlobalErrorHandler, TraceState } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ConsoleSpanExporter,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Slices } from '../core/config.ts';
import type { Logger } from './log.ts';
import type { SpanAttributes, SpanOptions, StoredContext, TraceSpan, Tracing } from './tracing.ts';

type Settings = Slices['tracing'];

const KIND = { internal: SpanKind.INTERNAL, producer: SpanKind.PRODUCER, consumer: SpanKind.CONSUMER } as const;
/** Spans kept for export at most (a burst beyond is dropped, counted by the SDK): some 30 pump batches. */
const MAX_QUEUE = 16_384;
/** How often finished spans are exported (sooner when a full export batch is waiting). */
const EXPORT_EVERY_MS = 1_000;
/** At most one warning line a minute about export failures. */
const WARN_EVERY_MS = 60_000;

function sampler(s: Settings): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(s.samplerArg);
  switch (s.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

async function exporter(kind: Settings['exporter']): Promise<SpanExporter | null> {
  if (kind === 'none') return null;
  if (kind === 'console') return new ConsoleSpanExporter();
  if (kind === 'zipkin') return new (await import('@opentelemetry/exporter-zipkin')).ZipkinExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
}

/** A stored context (`traceparent[ tracestate]`) as a remote span context; null when absent or not valid. */
export function spanContextOf(stored: StoredContext | undefined): SpanContext | null {
  if (!stored) return null;
  const space = stored.indexOf(' ');
  const sc = parseTraceParent(space < 0 ? stored : stored.slice(0, space));
  if (!sc) return null;
  if (space >= 0) sc.traceState = new TraceState(stored.slice(space + 1));
  return sc;
}

/** A link's context: read once for the run of spans that link the same (a batch's, by each of its messages). */
let lastLink: { stored: StoredContext; sc: SpanContext | null } = { stored: null, sc: null };
function linkOf(stored: StoredContext): SpanContext | null {
  if (stored !== lastLink.stored) lastLink = { stored, sc: spanContextOf(stored) };
  return lastLink.sc;
}

const traceparent = (sc: SpanContext) => `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & 0xff).toString(16)}`;

/** Attributes without the unset ones (the SDK warns about each). */
function defined(a: SpanAttributes): Attributes {
  const out: Attributes = {};
  for (const k in a) {
    const v = a[k];
    if (v !== undefined && v !== null) out[k] = v;
  }
  return out;
}

class OtelSpan implements TraceSpan {
  private readonly span: Span;
  constructor(span: Span) {
    this.span = span;
  }
  event(name: string, time?: unknown): void {
    this.span.addEvent(name, time as TimeInput | undefined);
  }
  end(attributes?: SpanAttributes, error?: string, endTime?: unknown): void {
    if (attributes) this.span.setAttributes(defined(attributes));
    if (error !== undefined) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.span.end(endTime as TimeInput | undefined);
  }
  stored(): StoredContext {
    const sc = this.span.spanContext();
    if (!trace.isSpanContextValid(sc)) return null;
    const state = sc.traceState?.serialize();
    return state ? `${traceparent(sc)} ${state}` : traceparent(sc);
  }
}

/**
 * Now as OpenTelemetry measures it, to the microsecond: the Zipkin exporter writes a given start
 * time's microseconds unrounded, and Zipkin refuses a fraction (400, the whole export lost).
 */
function now(): HrTime {
  const [s, n] = hrTime();
  return [s, n - (n % 1000)];
}

/** OpenTelemetry's tracer for the process `service`, exporting as the OTEL_* variables say. */
export async function openTelemetry(s: Settings, service: string, log: Logger, o: { exporter?: SpanExporter } = {}): Promise<Tracing> {
  const out = o.exporter ?? (await exporter(s.exporter));
  // the defaults, then what OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES say
  const resource = resourceFromAttributes({ 'service.name': `msgx-${service}`, 'service.namespace': 'msgexchange', 'msgx.process': service }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler: sampler(s),
    // a pump batch links every message it applies
    spanLimits: { linkCountLimit: Math.max(128, s.applyBatch) },
    spanProcessors: out ? [new BatchSpanProcessor({ exporter: out, maxQueueSize: MAX_QUEUE, scheduledDelayMillis: EXPORT_EVERY_MS })] : [],
  });
  let warned = Number.NEGATIVE_INFINITY;
  setGlobalErrorHandler((e) => {
    const at = performance.now();
    if (at - warned < WARN_EVERY_MS) return;
    warned = at;
    log.warn({ err: e instanceof Error ? e.message : String(e) }, 'tracing: spans could not be exported (the next such line in a minute at the earliest)');
  });
  const tracer = provider.getTracer('msgexchange');
  log.info({ exporter: s.exporter, sampler: s.sampler, service: resource.attributes['service.name'] }, 'tracing on (OpenTelemetry)');
  return {
    start(name: string, parent: StoredContext, o: SpanOptions = {}): TraceSpan {
      const sc = spanContextOf(parent);
      const links: Link[] = [];
      for (const l of o.links ?? []) {
        const c = linkOf(l);
        if (c) links.push({ context: c });
      }
      const span = tracer.startSpan(
        name,
        { kind: KIND[o.kind ?? 'internal'], attributes: o.attributes && defined(o.attributes), links, startTime: o.startTime as TimeInput | undefined, root: !sc },
        sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT,
      );
      return new OtelSpan(span);
    },
    now,
    shutdown: async (ms) => {
      await Promise.race([provider.shutdown(), new Promise((r) => setTimeout(r, ms).unref())]);
    },
  };
}
