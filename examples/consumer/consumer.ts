// A reference consumer of the state topic (docs/consumers.md "state topic", "Starting from
// nothing" way (a)): it keeps a local table of every live flight's complete state, in a JSON file,
// from Kafka alone. Standalone on purpose: kafkajs and Node only (OpenTelemetry when tracing), nothing of the gateway's code.
//
//   node examples/consumer/consumer.ts            (the project's node: node_modules/.bin/node)
//   environment: KAFKA_BROKERS (127.0.0.1:9092), STATE_TOPIC (msgx.flight.state),
//                TABLE_FILE (state-table.json), GROUP_ID (msgx-state-example);
//   a secured cluster (the gateway's own names, docs/operations.md "Production settings"):
//                KAFKA_SECURITY_PROTOCOL (PLAINTEXT | SSL | SASL_SSL), KAFKA_TLS_CA (PEM file),
//                KAFKA_TLS_CERT + KAFKA_TLS_KEY (mutual TLS), KAFKA_SASL_MECHANISM
//                (scram-sha-512 | scram-sha-256 | plain), KAFKA_SASL_USERNAME,
//                KAFKA_SASL_PASSWORD_FILE (or KAFKA_SASL_PASSWORD);
//   tracing (docs/consumers.md "Tracing"): OTEL_TRACES_EXPORTER (otlp | zipkin; unset: none, and
//                nothing of OpenTelemetry is loaded) with OpenTelemetry's standard variables
//                (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_ZIPKIN_ENDPOINT, OTEL_SERVICE_NAME)
//
// What it does:
//   - bootstrap: the first start reads the topic from the beginning; it notes the end offsets
//     first and says "bootstrapped" once every partition reached them (from then on it holds every
//     flight that was live when it started, at least that new);
//   - follow: it keeps reading; every record is applied by the version rule:
//       * dedupe by the EVENT_ID header (a resend repeats it; the last one per FLID is kept),
//       * drop a record whose STATE_VERSION header is not higher than the one held for its FLID,
//       * a null value (tombstone) removes the flight but keeps its version, so an older state
//         can never bring it back;
//   - tracing: each record is applied in a CONSUMER span `process <topic>` that continues the
//     message's trace from the record's W3C headers (traceparent, tracestate);
//   - the table and the next offset of every partition are written together to TABLE_FILE
//     (write to a temporary file, then rename: atomic) after each batch; a restart resumes from
//     those offsets, so nothing is lost and nothing is applied twice in a way that matters. Kafka's
//     own committed offsets are not used: the file is the one place of truth.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import kafkajs from 'kafkajs';

const { Kafka, logLevel } = kafkajs;

const BROKERS = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',');

/** TLS (always verified: the CA file, else the system's; the host name too) and SASL, from the environment. */
function security(env = process.env): Pick<kafkajs.KafkaConfig, 'ssl' | 'sasl'> {
  const protocol = (env.KAFKA_SECURITY_PROTOCOL || 'PLAINTEXT').toUpperCase();
  const file = (path: string | undefined) => (path ? readFileSync(path, 'utf8') : undefined);
  const out: Pick<kafkajs.KafkaConfig, 'ssl' | 'sasl'> = {};
  if (protocol === 'SSL' || protocol === 'SASL_SSL') {
    out.ssl = { rejectUnauthorized: true, ca: file(env.KAFKA_TLS_CA), cert: file(env.KAFKA_TLS_CERT), key: file(env.KAFKA_TLS_KEY) };
  }
  if (protocol === 'SASL_SSL' || protocol === 'SASL_PLAINTEXT') {
    const password = env.KAFKA_SASL_PASSWORD_FILE ? readFileSync(env.KAFKA_SASL_PASSWORD_FILE, 'utf8').replace(/\r?\n$/, '') : (env.KAFKA_SASL_PASSWORD ?? '');
    const mechanism = (env.KAFKA_SASL_MECHANISM || 'scram-sha-512').toLowerCase() as 'scram-sha-512';
    out.sasl = { mechanism, username: env.KAFKA_SASL_USERNAME ?? '', password };
  }
  return out;
}
const TOPIC = process.env.STATE_TOPIC ?? 'msgx.flight.state';
const FILE = process.env.TABLE_FILE ?? 'state-table.json';
const GROUP = process.env.GROUP_ID ?? 'msgx-state-example';
/** Deadline of every admin call (a hung broker must not hang the consumer for ever). */
const TIMEOUT_MS = 10_000;

/** One FLID: its version, the record that set it, and the state (null: deleted or purged). */
interface Entry {
  version: number;
  eventId: number;
  state: Record<string, unknown> | null;
}

interface Saved {
  topic: string;
  /** Per partition, the next offset to read. */
  offsets: Record<string, string>;
  bootstrapped: boolean;
  flights: Record<string, Entry>;
}

const log = (msg: string, extra: Record<string, unknown> = {}) => console.log(JSON.stringify({ at: new Date().toISOString(), msg, ...extra }));

function withTimeout<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function load(): Saved {
  if (!existsSync(FILE)) return { topic: TOPIC, offsets: {}, bootstrapped: false, flights: {} };
  const saved = JSON.parse(readFileSync(FILE, 'utf8')) as Saved;
  if (saved.topic !== TOPIC) throw new Error(`${FILE} belongs to topic ${saved.topic}, not ${TOPIC}`);
  return saved;
}

function save(t: Saved): void {
  writeFileSync(`${FILE}.tmp`, JSON.stringify(t));
  renameSync(`${FILE}.tmp`, FILE);
}

/** The version rule. Returns what the record did. */
function apply(t: Saved, flid: string, eventId: number, version: number, value: string | null): 'applied' | 'duplicate' | 'stale' {
  const held = t.flights[flid];
  if (held && held.eventId === eventId) return 'duplicate'; // the same record again (at least once)
  if (held && version <= held.version) return 'stale'; // an older or equal version: nothing newer in it
  t.flights[flid] = { version, eventId, state: value === null ? null : (JSON.parse(value) as Record<string, unknown>) };
  return 'applied';
}

const header = (h: Record<string, unknown> | undefined, name: string): number => {
  const v = h?.[name];
  const n = Number(Buffer.isBuffer(v) ? v.toString() : v);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`record without a valid ${name} header`);
  return n;
};

type Headers = Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined;

/**
 * The record's span: OpenTelemetry's SDK and W3C propagator, loaded only when OTEL_TRACES_EXPORTER
 * names an exporter. `process(headers, attrs)` returns the end of the span.
 */
async function tracing(): Promise<{ process: (headers: Headers, attributes: Record<string, string | number>) => (outcome: string) => void; stop: () => Promise<void> } | null> {
  const kind = process.env.OTEL_TRACES_EXPORTER;
  if (!kind || kind === 'none') return null;
  const api = await import('@opentelemetry/api');
  const { W3CTraceContextPropagator } = await import('@opentelemetry/core');
  const { BatchSpanProcessor, TracerProvider } = await import('@opentelemetry/sdk-trace');
  const { detectResources, envDetector, resourceFromAttributes } = await import('@opentelemetry/resources');
  const exporter = kind === 'zipkin' ? new (await import('@opentelemetry/exporter-zipkin')).ZipkinExporter() : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
  const resource = resourceFromAttributes({ 'service.name': GROUP }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({ resource, spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: 1000 })] });
  const tracer = provider.getTracer('msgx-state-example');
  const propagator = new W3CTraceContextPropagator();
  const getter = { keys: (h: NonNullable<Headers>) => Object.keys(h), get: (h: NonNullable<Headers>, k: string) => [h[k]].flat().map((v) => v?.toString())[0] };
  return {
    process: (headers, attributes) => {
      // the parent: the gateway's send span named by the record's traceparent (none: a new trace)
      const parent = propagator.extract(api.ROOT_CONTEXT, headers ?? {}, getter);
      const span = tracer.startSpan(`process ${TOPIC}`, { kind: api.SpanKind.CONSUMER, attributes: { 'messaging.system': 'kafka', 'messaging.operation.type': 'process', 'messaging.destination.name': TOPIC, ...attributes } }, parent);
      return (outcome) => {
        span.setAttribute('example.outcome', outcome);
        span.end();
      };
    },
    stop: () => provider.shutdown(),
  };
}

async function main(): Promise<void> {
  const table = load();
  const traces = await tracing();
  const kafka = new Kafka({ clientId: GROUP, brokers: BROKERS, ...security(), logLevel: logLevel.WARN, connectionTimeout: 3000, requestTimeout: TIMEOUT_MS });
  const admin = kafka.admin();
  await withTimeout('admin connect', admin.connect());
  // the end offsets before reading: reaching them completes the bootstrap
  const ends = new Map((await withTimeout('fetchTopicOffsets', admin.fetchTopicOffsets(TOPIC))).map((p) => [p.partition, BigInt(p.high)]));
  await withTimeout('admin disconnect', admin.disconnect());
  const next = new Map(Object.entries(table.offsets).map(([p, o]) => [Number(p), BigInt(o)]));
  const reached = () => [...ends].every(([p, end]) => (next.get(p) ?? 0n) >= end);
  log('starting', { topic: TOPIC, file: FILE, flights: Object.keys(table.flights).length, resumeFrom: table.offsets, ends: Object.fromEntries([...ends].map(([p, o]) => [p, o.toString()])), bootstrapped: table.bootstrapped });

  if (!table.bootstrapped && reached()) {
    table.bootstrapped = true; // an empty topic: nothing to read first
    log('bootstrapped', { flights: 0 });
  }

  const consumer = kafka.consumer({ groupId: GROUP, sessionTimeout: 10_000, heartbeatInterval: 1000 });
  await withTimeout('consumer connect', consumer.connect());
  await withTimeout('subscribe', consumer.subscribe({ topic: TOPIC, fromBeginning: true }));
  const counts = { applied: 0, duplicate: 0, stale: 0 };
  // where to start each partition: the file's offset, else the beginning
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    for (const p of e.payload.memberAssignment[TOPIC] ?? []) consumer.seek({ topic: TOPIC, partition: p, offset: (next.get(p) ?? 0n).toString() });
  });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, heartbeat }) => {
      for (const m of batch.messages) {
        const offset = BigInt(m.offset);
        if (offset < (next.get(batch.partition) ?? 0n)) continue; // before the file's position (a seek not yet effective)
        const done = traces?.process(m.headers, { 'messaging.kafka.message.key': m.key!.toString(), 'messaging.kafka.offset': m.offset, 'messaging.destination.partition.id': String(batch.partition) });
        const result = apply(table, m.key!.toString(), header(m.headers, 'EVENT_ID'), header(m.headers, 'STATE_VERSION'), m.value === null ? null : m.value.toString());
        done?.(result);
        counts[result]++;
        next.set(batch.partition, offset + 1n);
      }
      table.offsets = Object.fromEntries([...next].map(([p, o]) => [String(p), o.toString()]));
      if (!table.bootstrapped && reached()) {
        table.bootstrapped = true;
        log('bootstrapped', { flights: Object.values(table.flights).filter((f) => f.state !== null).length });
      }
      save(table); // the table and its offsets together, after the batch
      await heartbeat();
      log('batch', { partition: batch.partition, records: batch.messages.length, next: String(next.get(batch.partition)), ...counts });
    },
  });

  const stop = async () => {
    await withTimeout('consumer disconnect', consumer.disconnect()).catch(() => {});
    await withTimeout('trace export', traces?.stop() ?? Promise.resolve()).catch(() => {});
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((e: Error) => {
  log('failed', { err: e.message });
  process.exit(1);
});
