// Prometheus metrics of the pipeline (names from reference.md). prom-client default registry:
// every process serves it on /metrics; a metric a process never touches stays at zero.
import client from 'prom-client';

const { Counter, Gauge, Histogram, register } = client;

export const metrics = {
  backlogOldestSeconds: new Gauge({
    name: 'msgx_pipeline_backlog_oldest_unprocessed_seconds',
    help: 'Age of the head message (by ENQUEUED_AT), 0 when none',
  }),
  backlogMessages: new Gauge({ name: 'msgx_pipeline_backlog_messages', help: 'Non-terminal PROC_STATE rows' }),
  headBlocked: new Gauge({
    name: 'msgx_pipeline_head_blocked',
    help: '1 while the head has been held by INFRA failures longer than infra-alert-after',
  }),
  identityDuplicates: new Counter({ name: 'msgx_identity_duplicates_total', help: 'Messages SKIPPED as duplicate-of' }),
  intakeGapsPassed: new Counter({ name: 'msgx_intake_gaps_passed_total', help: 'Inbox ID gaps given up on' }),
  intakeLateRows: new Counter({ name: 'msgx_intake_late_rows_total', help: 'Rows that appeared below IDs already enqueued' }),
  intakeScannedRows: new Counter({ name: 'msgx_intake_scanned_rows_total', help: 'Inbox rows read by intake' }),
  intakeErrors: new Counter({ name: 'msgx_intake_errors_total', help: 'Intake rounds that failed (inbox or Postgres unreachable)' }),
  messages: new Counter({
    name: 'msgx_messages_total',
    help: 'Terminal outcomes',
    labelNames: ['kind', 'state', 'reason'] as const,
  }),
  processingSeconds: new Histogram({
    name: 'msgx_message_processing_seconds',
    help: 'processOne duration',
    labelNames: ['kind'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  }),
  failures: new Counter({
    name: 'msgx_pipeline_failures_total',
    help: 'Processing failures by error class (each attempt)',
    labelNames: ['class'] as const,
  }),
  backfillPending: new Gauge({ name: 'msgx_backfill_pending', help: 'Terminal rows not yet backfilled' }),
  backfillAbandoned: new Counter({
    name: 'msgx_backfill_abandoned_total',
    help: 'Backfills abandoned',
    labelNames: ['reason'] as const,
  }),
  backfillOverLimit: new Gauge({ name: 'msgx_backfill_attempts_over_limit', help: 'Rows past backfill-max-attempts' }),
  backfillWritten: new Counter({
    name: 'msgx_backfill_rows_total',
    help: 'Backfill outcomes',
    labelNames: ['outcome'] as const,
  }),
  retentionDeleted: new Counter({
    name: 'msgx_retention_deleted_total',
    help: 'Rows removed by lifecycle jobs',
    labelNames: ['object'] as const,
  }),
  postgresUp: new Gauge({
    name: 'msgx_postgres_up',
    help: '1 while this process reaches Postgres (a select 1 every 2 s on its own connection, 1.5 s deadline), 0 while it does not',
  }),
  postgresDownSeconds: new Gauge({
    name: 'msgx_postgres_unreachable_seconds',
    help: 'How long this process has not reached Postgres (0 while it does); gauges computed from Postgres are stale meanwhile',
  }),
  flightsWithoutOperationDay: new Gauge({
    name: 'msgx_flights_without_operation_day',
    help: 'Flights with OPERATION_DAY NULL older than history.purge-after',
  }),
};

export const registry = register;

/** Terminal outcome reason label: the class or the skip reason without its detail (bounded cardinality). */
export function reasonLabel(reason: string | null | undefined): string {
  if (!reason) return '';
  return reason.split(/[:(\s]/)[0];
}
