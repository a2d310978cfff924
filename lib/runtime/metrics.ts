// Prometheus metrics of the pipeline (names and alerts: docs/operations.md "Alerts"). Metrics are created outside any
// registry; each process registers only the ones it owns (exportProcessMetrics, called by
// runProcess) on prom-client's default registry, plus Node's default process_*/nodejs_* metrics
// and msgx_build_info. A counter with known label sets starts at 0 for each of them, so that the
// first event after a start is an increase Prometheus can see.
import { systemClock, type Clock } from '../core/clock.ts';
import { readFileSync } from 'node:fs';
import client from 'prom-client';
import type { ProcessName } from '../core/tasks.ts';
import { dependencyUp } from './health.ts';
import type { AfterCommitCounts } from './labels.ts';
import { RUNTIME } from '../core/tuning.ts';

const { Counter, Gauge, Histogram, register } = client;
const registers: client.Registry[] = [];

/** The process's clock (exportProcessMetrics), and the last successful inbox read of this intake instance (ms since epoch; the export until the first). */
let clock: Clock = systemClock;
let inboxReadAt = 0;
export const noteInboxRead = () => void (inboxReadAt = clock.now().getTime());

export const metrics = {
  backlogOldestSeconds: new Gauge({
    registers,
    name: 'msgx_pipeline_backlog_oldest_unprocessed_seconds',
    help: 'Age of the head message (by ENQUEUED_AT), 0 when none',
  }),
  backlogMessages: new Gauge({ registers, name: 'msgx_pipeline_backlog_messages', help: 'Non-terminal PROC_STATE rows' }),
  headBlocked: new Gauge({
    registers,
    name: 'msgx_pipeline_head_blocked',
    help: '1 while the head has been held by INFRA failures longer than infra-alert-after',
  }),
  gaugesStale: new Gauge({
    registers,
    name: 'msgx_pipeline_gauges_stale',
    help: '1 when the head gauges could not be read from Postgres at their last refresh (their values are old)',
  }),
  routePointsDropped: new Counter({ registers, name: 'msgx_flight_route_points_dropped_total', help: 'ROUT/ERUT points beyond the 4 kept locally' }),
  requestsFailed: new Counter({ registers, name: 'msgx_requests_failed_total', help: 'Requests to the AODB answered by EROR (alert)', labelNames: ['kind'] as const }),
  decodeUnknownTags: new Counter({ registers, name: 'msgx_decode_unknown_tags_total', help: 'Tags the rule tables do not know', labelNames: ['type', 'styp', 'tag'] as const }),
  identityDuplicates: new Counter({ registers, name: 'msgx_identity_duplicates_total', help: 'Messages SKIPPED as duplicate-of' }),
  intakeGapsPassed: new Counter({ registers, name: 'msgx_intake_gaps_passed_total', help: 'Inbox ID gaps given up on' }),
  intakeLateRows: new Counter({ registers, name: 'msgx_intake_late_rows_total', help: 'Rows that appeared below IDs already enqueued' }),
  intakeScannedRows: new Counter({ registers, name: 'msgx_intake_scanned_rows_total', help: 'Inbox rows read by intake' }),
  intakeErrors: new Counter({ registers, name: 'msgx_intake_errors_total', help: 'Intake rounds that failed (inbox or Postgres unreachable)' }),
  messages: new Counter({
    registers,
    name: 'msgx_messages_total',
    help: 'Terminal outcomes',
    labelNames: ['kind', 'state', 'reason'] as const,
  }),
  processingSeconds: new Histogram({
    registers,
    name: 'msgx_message_processing_seconds',
    help: "The pump's wall time per message applied: its batch's read to terminal steps, divided by the messages the batch applied",
    labelNames: ['kind'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  }),
  failures: new Counter({
    registers,
    name: 'msgx_pipeline_failures_total',
    help: 'Processing failures by error class (each attempt)',
    labelNames: ['class'] as const,
  }),
  backfillPending: new Gauge({ registers, name: 'msgx_backfill_pending', help: 'Terminal rows not yet backfilled' }),
  backfillAbandoned: new Counter({
    registers,
    name: 'msgx_backfill_abandoned_total',
    help: 'Backfills abandoned',
    labelNames: ['reason'] as const,
  }),
  backfillOverLimit: new Gauge({ registers, name: 'msgx_backfill_attempts_over_limit', help: 'Rows past backfill-max-attempts' }),
  backfillWritten: new Counter({
    registers,
    name: 'msgx_backfill_rows_total',
    help: 'Backfill outcomes',
    labelNames: ['outcome'] as const,
  }),
  retentionDeleted: new Counter({
    registers,
    name: 'msgx_retention_deleted_total',
    help: 'Rows removed by lifecycle jobs',
    labelNames: ['object'] as const,
  }),
  inboxReadAge: new Gauge({
    registers,
    name: 'msgx_intake_inbox_read_age_seconds',
    help: 'Seconds since this intake instance last read the inbox successfully (since start when never); alert on the minimum over instances',
    collect() {
      this.set((clock.now().getTime() - inboxReadAt) / 1000);
    },
  }),
  postgresUp: new Gauge({
    registers,
    name: 'msgx_postgres_up',
    help: '1 while this process reaches Postgres (a select 1 every 2 s on its own connection, 1.5 s deadline), 0 while it does not; the same as msgx_dependency_up{dependency="postgres"}',
  }),
  postgresDownSeconds: new Gauge({
    registers,
    name: 'msgx_postgres_unreachable_seconds',
    help: 'How long this process has not reached Postgres (0 while it does); gauges computed from Postgres are stale meanwhile',
  }),
  postgresAutovacuum: new Gauge({
    registers,
    name: 'msgx_postgres_autovacuum',
    help: "1 when the Postgres server runs autovacuum, 0 when it does not (a misconfiguration: the pump's rate falls as dead rows pile up); read at start",
  }),
  httpRefusals: new Counter({
    registers,
    name: 'msgx_http_refusals_total',
    help: 'HTTP requests the access gate refused before reading their body, by status (400 Host, 401 credential, 403 role or Origin, 429 rate-limited, 503 identity provider)',
    labelNames: ['status'] as const,
  }),
  apiKeysRefused: new Counter({ registers, name: 'msgx_api_keys_file_refused_total', help: 'Changes of MSGX_API_KEYS_FILE refused (a bad line): the keys loaded before stay in force' }),
  auditWriteFailures: new Counter({ registers, name: 'msgx_audit_write_failures_total', help: 'Audit rows that could not be written to ACCESS_AUDIT (their log line was)' }),
  flightsWithoutOperationDay: new Gauge({
    registers,
    name: 'msgx_flights_without_operation_day',
    help: 'Flights with OPERATION_DAY NULL older than history.purge-after',
  }),
};

export const registry = register;

const version = (() => {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
})();

/** The pipeline metrics each process owns (it is the only one that changes them). */
const OWNED: Record<ProcessName, client.Metric[]> = {
  intake: [metrics.intakeGapsPassed, metrics.intakeLateRows, metrics.intakeScannedRows, metrics.intakeErrors, metrics.inboxReadAge],
  pump: [
    metrics.backlogOldestSeconds,
    metrics.backlogMessages,
    metrics.headBlocked,
    metrics.gaugesStale,
    metrics.identityDuplicates,
    metrics.messages,
    metrics.processingSeconds,
    metrics.failures,
    metrics.decodeUnknownTags,
    metrics.routePointsDropped,
    metrics.requestsFailed,
  ],
  backfill: [metrics.backfillAbandoned, metrics.backfillWritten],
  'msg-dispatch': [metrics.retentionDeleted],
  'schd-dispatch': [],
  'state-dispatch': [],
  retention: [metrics.retentionDeleted, metrics.flightsWithoutOperationDay],
  api: [],
};

/** Known label sets of counters, exported at 0 from the start (an alert on increase() sees the first event). */
function initialiseLabelSets(name: ProcessName): void {
  for (const status of ['400', '401', '403', '429', '503']) metrics.httpRefusals.inc({ status }, 0);
  if (name === 'pump') {
    for (const cls of ['MALFORMED', 'PROTOCOL', 'INFRA', 'CODEC_ERROR', 'INTERNAL']) metrics.failures.inc({ class: cls }, 0);
    for (const kind of ['RQRD', 'RQFD']) metrics.requestsFailed.inc({ kind }, 0);
  }
  if (name === 'backfill') {
    for (const reason of ['MISSING_ROW', 'TRANSIENT_DEADLINE']) metrics.backfillAbandoned.inc({ reason }, 0);
    for (const outcome of ['written', 'already-marked', 'transient']) metrics.backfillWritten.inc({ outcome }, 0);
  }
}

export const EVENT_LOOP_SAMPLE_MS = RUNTIME.eventLoopSampleMs;

/**
 * Register on the default registry what this process exports: its own metrics, `extra` (metrics
 * of other modules it owns), Node's default metrics and msgx_build_info{version,node,process}.
 */
export function exportProcessMetrics(name: ProcessName, extra: client.Metric[] = [], opts: { readOnly?: boolean; clock?: Clock } = {}): void {
  clock = opts.clock ?? systemClock;
  noteInboxRead();
  const access: client.Metric[] = [metrics.httpRefusals, metrics.apiKeysRefused, metrics.auditWriteFailures];
  const own = [...OWNED[name], metrics.postgresUp, metrics.postgresDownSeconds, metrics.postgresAutovacuum, dependencyUp, ...access, ...extra];
  if (name === 'backfill' && !opts.readOnly) own.push(metrics.backfillPending, metrics.backfillOverLimit); // not ours to mark on a read-only instance
  for (const m of own) {
    const n = (m as unknown as { name: string }).name;
    if (!register.getSingleMetric(n)) register.registerMetric(m);
  }
  initialiseLabelSets(name);
  // the event-loop delay sampled every 100 ms, not prom-client's 10 ms: 0.4 % of a core per idle
  // process (docs/decisions.md "Footprint"); a stall of 100 ms or more is still seen
  if (!register.getSingleMetric('process_cpu_seconds_total')) client.collectDefaultMetrics({ register, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  if (!register.getSingleMetric('msgx_build_info')) {
    new Gauge({ name: 'msgx_build_info', help: 'Always 1: the version of the running build', labelNames: ['version', 'node', 'process'] as const }).set(
      { version, node: process.version, process: name },
      1,
    );
  }
}

/** Terminal outcome reason label: the class or the skip reason without its detail (bounded cardinality). */
export function reasonLabel(reason: string | null | undefined): string {
  if (!reason) return '';
  return reason.split(/[:(\s]/)[0];
}

/** Increment what a handler returned in `counts`. The pump calls this after the business commit. */
export function countAfterCommit(counts: AfterCommitCounts | undefined): void {
  if (!counts) return;
  for (const t of counts.unknownTags ?? []) metrics.decodeUnknownTags.inc(t);
  if (counts.routePointsDropped) metrics.routePointsDropped.inc(counts.routePointsDropped);
  for (const r of counts.requestsFailed ?? []) metrics.requestsFailed.inc(r);
}
