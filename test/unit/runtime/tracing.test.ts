// The tracing port (lib/runtime/tracing.ts) on OpenTelemetry's SDK (lib/runtime/otel.ts), with the
// SDK's in-memory exporter: stored contexts round-trip (tracestate included), the pump's spans
// (lib/pipeline/pump/trace.ts) and a record's span (lib/dispatch/trace.ts) continue the stored
// trace, the batch links its messages, a schd record continues its latest row's trace.
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { loadConfig, slices } from '../../../lib/core/config.ts';
import { traceHeaders } from '../../../lib/contract/kafka.ts';
import { recordSpans, withTrace } from '../../../lib/dispatch/trace.ts';
import { PumpTrace } from '../../../lib/pipeline/pump/trace.ts';
import { takeSpans } from '../../../lib/pipeline/trace.ts';
import { createLogger } from '../../../lib/runtime/log.ts';
import { openTelemetry, spanContextOf } from '../../../lib/runtime/otel.ts';
import { traceField, traceIdOf, traceLink, type Tracing } from '../../../lib/runtime/tracing.ts';
import type { HeadRow } from '../../../lib/sql/proc-state.ts';

const log = createLogger('test', 'silent');

async function traced(env: Record<string, string> = {}): Promise<{ tracing: Tracing; spans: () => Promise<ReadableSpan[]> }> {
  const got: ReadableSpan[] = [];
  // what the SDK exports, kept (its in-memory exporter forgets everything at shutdown, the flush)
  const exporter: SpanExporter = { export: (spans, done) => (got.push(...spans), done({ code: 0 })), shutdown: async () => {} };
  const tracing = await openTelemetry(slices(loadConfig({ MSGX_TRACING: 'on', ...env })).tracing, 'test', log, { exporter });
  return {
    tracing,
    spans: async () => {
      await new Promise((r) => setImmediate(r)); // the pump writes a batch's spans on the next turn
      await tracing.shutdown(5000);
      return got;
    },
  };
}
const head = (msgId: number, ctx: string | null) => ({ msg_id: msgId, trace_context: ctx, kind: 'FLOP/STND' }) as HeadRow;
const ref = (h: HeadRow) => ({ h, kind: h.kind, logFields: { msgId: h.msg_id, flid: '15' } });

describe('stored contexts, without OpenTelemetry', () => {
  it('traceIdOf / traceField / traceLink read a traceparent', () => {
    const ctx = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 vendor=x';
    expect(traceIdOf(ctx)).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(traceField(ctx)).toEqual({ traceId: '0af7651916cd43dd8448eb211c80319c' });
    expect(traceField(null)).toEqual({});
    expect(traceIdOf('garbage')).toBeNull();
    expect(traceLink('http://zipkin:9411/zipkin/traces/{traceId}', traceIdOf(ctx))).toBe('http://zipkin:9411/zipkin/traces/0af7651916cd43dd8448eb211c80319c');
    expect(traceLink('', 'abc')).toBeNull();
  });

  it('the configuration: off by default, on/off only, a link template needs {traceId}', () => {
    expect(slices(loadConfig({})).tracing.on).toBe(false);
    expect(slices(loadConfig({ MSGX_TRACING: 'on' })).tracing).toMatchObject({ on: true, exporter: 'otlp', sampler: 'parentbased_always_on', samplerArg: 1 });
    expect(() => loadConfig({ MSGX_TRACING: 'yes' })).toThrow(/msgx.tracing/);
    expect(() => loadConfig({ MSGX_TRACING_LINK: 'http://x/trace' })).toThrow(/\{traceId\}/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' })).toThrow(/OTEL_TRACES_SAMPLER/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: '2' })).toThrow(/ratio/);
  });
});

describe('spans on OpenTelemetry', () => {
  it('a stored context round-trips, tracestate included, and a child continues its trace', async () => {
    const { tracing, spans } = await traced();
    const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 vendor=x';
    const sc = spanContextOf(parent)!;
    expect([sc.traceId, sc.spanId, sc.traceFlags, sc.traceState?.serialize()]).toEqual(['0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331', 1, 'vendor=x']);
    const child = tracing.start('child', parent);
    expect(child.stored()).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01 vendor=x$/);
    expect(traceHeaders(child.stored())).toEqual({ traceparent: child.stored()!.split(' ')[0], tracestate: 'vendor=x' });
    child.end({ 'msgx.outcome': 'ok', unset: undefined });
    const [s] = await spans();
    expect(s.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(s.attributes).toEqual({ 'msgx.outcome': 'ok' });
  });

  it('not sampled (parent-based, the parent says so): the context still travels, no span is exported', async () => {
    const { tracing, spans } = await traced();
    const child = tracing.start('child', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00');
    expect(child.stored()).toMatch(/-00$/);
    child.end();
    expect(await spans()).toEqual([]);
  });

  it("intake's take is a root per message; the pump's message spans continue it, the batch links them", async () => {
    const { tracing, spans } = await traced();
    const take = takeSpans(tracing, [{ id: 1 }, { id: 2 }])!;
    take.end([1]);
    const heads = [head(1, take.contexts[0]), head(2, take.contexts[1])];
    const pump = new PumpTrace(tracing);
    pump.begin(heads);
    pump.step(heads[0], 'decode');
    pump.step(heads[0], 'business');
    pump.step(heads[0], 'mirror');
    pump.applied(heads.map(ref), [
      { msg_id: 1, state: 'SUCCEEDED', reason_class: null },
      { msg_id: 2, state: 'SKIPPED', reason_class: 'DUPLICATE' },
    ]);
    const all = await spans();
    const named = (n: string) => all.filter((s) => s.name === n);
    const [t1, t2] = named('intake take');
    expect([t1.parentSpanContext, t1.attributes['msgx.outcome'], t2.attributes['msgx.outcome']]).toEqual([undefined, 'PENDING', 'known']);
    const [batch] = named('pump batch');
    expect(batch.parentSpanContext).toBeUndefined();
    expect(batch.links.map((l) => l.context.traceId)).toEqual([t1.spanContext().traceId, t2.spanContext().traceId]);
    expect(['decode', 'business', 'mirror', 'terminal'].map((n) => named(n)[0]?.parentSpanContext?.spanId)).toEqual(Array(4).fill(batch.spanContext().spanId));
    const applies = named('pump apply');
    expect(applies.map((s) => [s.spanContext().traceId, s.parentSpanContext?.spanId, s.attributes['msgx.outcome'], s.attributes['msgx.reason_class'] ?? null])).toEqual([
      [t1.spanContext().traceId, t1.spanContext().spanId, 'SUCCEEDED', null],
      [t2.spanContext().traceId, t2.spanContext().spanId, 'SKIPPED', 'DUPLICATE'],
    ]);
    expect(applies[0].attributes).toMatchObject({ 'msgx.msg_id': 1, 'msgx.type': 'FLOP', 'msgx.styp': 'STND', 'msgx.flid': '15' });
    expect(applies[0].events.map((e) => e.name)).toEqual(['decode', 'business', 'mirror', 'terminal']);
    expect(applies[0].attributes['msgx.batch.trace_id']).toBe(batch.spanContext().traceId);
  });

  it("a schd record continues its latest row's trace and links the others; headers name its span", async () => {
    const { tracing, spans } = await traced();
    const a = tracing.start('a', null);
    const b = tracing.start('b', null);
    const rec = recordSpans(tracing, 'schd', 'schd-topic', [
      [
        { eventId: 7, flid: '1', trace: a.stored() },
        { eventId: 9, flid: '2', trace: b.stored() },
      ],
    ]);
    const record = withTrace({ key: 'schd', value: '{}' }, rec, 0);
    rec.sent([{ partition: 0, offset: '41' }]);
    const [send] = (await spans()).filter((s) => s.name === 'send schd-topic');
    expect(send.parentSpanContext?.spanId).toBe(spanContextOf(b.stored())!.spanId);
    expect(send.links.map((l) => l.context.spanId)).toEqual([spanContextOf(a.stored())!.spanId]);
    expect(record.headers).toEqual({ traceparent: `00-${send.spanContext().traceId}-${send.spanContext().spanId}-01` });
    expect(send.attributes).toMatchObject({ 'messaging.destination.name': 'schd-topic', 'msgx.outcome': 'SENT', 'messaging.kafka.offset': '41', 'msgx.records': 2 });
  });

  it('intake starts no trace for a row it knows already (read again below the watermark)', async () => {
    const { tracing, spans } = await traced();
    const take = takeSpans(tracing, [{ id: 1 }, { id: 2 }], new Set([1]))!;
    expect(take.contexts[0]).toBeNull();
    expect(take.contexts[1]).toMatch(/^00-/);
    take.end([2]);
    expect((await spans()).map((s) => s.attributes['msgx.msg_id'])).toEqual([2]);
  });

  it('without tracing the hooks do nothing and add no header', () => {
    const rec = recordSpans(undefined, 'msg', 't', [[{ eventId: 1, flid: '1', trace: null }]]);
    expect(withTrace({ key: '1', value: 'v' }, rec, 0)).toEqual({ key: '1', value: 'v' });
    expect(takeSpans(undefined, [{ id: 1 }])).toBeNull();
  });
});
