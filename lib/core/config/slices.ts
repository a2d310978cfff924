// The typed parts of the configuration, one per concern (docs/decisions.md "Configuration slices").
import type { Config, ConnKey, ParamKey } from './keys.ts';

/**
 * The typed parts of the configuration, one per concern, declared once as
 * data: slice → field → key. A module receives the slice it uses (`slices(config).pump`),
 * never the whole Config; only the composition (workers/, lib/app/, lib/runtime/process.ts)
 * holds the whole object.
 */
const SLICES = {
  airport: { timezone: 'msgx.airport.timezone', dayCutover: 'msgx.airport.day-cutover' },
  io: { timeoutMs: 'msgx.io.timeout' },
  mirror: { checkEveryMs: 'msgx.mirror.check-every', timezone: 'msgx.airport.timezone', timeoutMs: 'msgx.io.timeout' },
  pump: {
    applyBatch: 'msgx.pipeline.apply-batch',
    messageBudgetMs: 'msgx.pipeline.message-budget',
    includeDayBoundary: 'msgx.identity.include-day-boundary',
    timeoutMs: 'msgx.io.timeout',
    ruleOverride: 'msgx.test.rule-override',
  },
  failures: { maxAttempts: 'msgx.pipeline.max-attempts', backoffMs: 'msgx.pipeline.backoff', infraAlertAfterMs: 'msgx.pipeline.infra-alert-after' },
  intake: {
    claimBatch: 'msgx.pipeline.claim-batch',
    idlePollMs: 'msgx.pipeline.idle-poll',
    gapSettleMs: 'msgx.intake.gap-settle',
    fullScanEveryMs: 'msgx.intake.full-scan-every',
    inboxRetentionMs: 'msgx.pipeline.inbox-retention',
    timeoutMs: 'msgx.io.timeout',
    readOnly: 'msgx.inbox.read-only',
    startAfter: 'msgx.inbox.start-after',
  },
  backfill: {
    batch: 'msgx.pipeline.backfill-batch',
    backoffMs: 'msgx.pipeline.backfill-backoff',
    maxAttempts: 'msgx.pipeline.backfill-max-attempts',
    overdueMs: 'msgx.pipeline.overdue-backfill',
    readOnly: 'msgx.inbox.read-only',
    timezone: 'msgx.airport.timezone',
    timeoutMs: 'msgx.io.timeout',
  },
  inbox: { readOnly: 'msgx.inbox.read-only', maxMessageBytes: 'msgx.inbox.max-message-bytes', timezone: 'msgx.airport.timezone', timeoutMs: 'msgx.io.timeout' },
  trace: { timezone: 'msgx.airport.timezone', msgTopic: 'msgx.kafka.msg-topic', schdTopic: 'msgx.kafka.schd-topic', timeoutMs: 'msgx.io.timeout', traceLink: 'msgx.tracing.link' },
  tracing: { on: 'msgx.tracing', exporter: 'OTEL_TRACES_EXPORTER', sampler: 'OTEL_TRACES_SAMPLER', samplerArg: 'OTEL_TRACES_SAMPLER_ARG', applyBatch: 'msgx.pipeline.apply-batch' },
  kafka: {
    brokers: 'KAFKA_BROKERS',
    clientId: 'msgx.kafka.client-id',
    msgTopic: 'msgx.kafka.msg-topic',
    schdTopic: 'msgx.kafka.schd-topic',
    stateTopic: 'msgx.kafka.state-topic',
    partitions: 'msgx.kafka.partitions',
    eventRetentionMs: 'msgx.pipeline.event-retention',
    timeoutMs: 'msgx.io.timeout',
    securityProtocol: 'KAFKA_SECURITY_PROTOCOL',
    saslMechanism: 'KAFKA_SASL_MECHANISM',
    saslUsername: 'KAFKA_SASL_USERNAME',
    saslPassword: 'KAFKA_SASL_PASSWORD',
    tlsMode: 'KAFKA_TLS_MODE',
    tlsCa: 'KAFKA_TLS_CA',
    tlsCert: 'KAFKA_TLS_CERT',
    tlsKey: 'KAFKA_TLS_KEY',
  },
  dispatch: {
    msgTopic: 'msgx.kafka.msg-topic',
    schdTopic: 'msgx.kafka.schd-topic',
    stateTopic: 'msgx.kafka.state-topic',
    timezone: 'msgx.airport.timezone',
    msgBatch: 'msgx.msg.batch',
    schdFlushLimit: 'msgx.schd.flush-limit',
    maxRecordBytes: 'msgx.schd.max-record-bytes',
    maxAttempts: 'msgx.dispatch.max-attempts',
    backoffMs: 'msgx.dispatch.backoff',
    reseedGapMs: 'msgx.dispatch.reseed-gap',
  },
  /** Who may do what over HTTP (lib/access/). */
  oidc: {
    issuer: 'msgx.oidc.issuer',
    audience: 'msgx.oidc.audience',
    clientId: 'msgx.oidc.client-id',
    scopes: 'msgx.oidc.scopes',
    resource: 'msgx.oidc.resource',
    roleClaim: 'msgx.oidc.role-claim',
    roleMap: 'msgx.oidc.role-map',
    clockSkewMs: 'msgx.oidc.clock-skew',
    timeoutMs: 'msgx.io.timeout',
  },
  retention: {
    schedule: 'msgx.retention.schedule',
    auditRetentionMs: 'msgx.audit.retention',
    historyPurgeAfterMs: 'msgx.history.purge-after',
    historyRetentionMs: 'msgx.history.retention',
    procStateRetentionMs: 'msgx.proc-state.retention',
    snapLogRetentionMs: 'msgx.snap-log.retention',
    reqTrackRetentionMs: 'msgx.req-track.retention',
    inboxRetentionMs: 'msgx.pipeline.inbox-retention',
    eventRetentionMs: 'msgx.pipeline.event-retention',
    readOnly: 'msgx.inbox.read-only',
    timeoutMs: 'msgx.io.timeout',
  },
  requests: {
    sender: 'msgx.requests.sender',
    routingIdRqrd: 'msgx.requests.routing-id-rqrd',
    routingIdRqfd: 'msgx.requests.routing-id-rqfd',
    dailyScheduleAt: 'msgx.requests.daily-schedule-at',
    reconcileWindowMs: 'msgx.requests.reconcile-window',
    timeoutMs: 'msgx.io.timeout',
    readOnly: 'msgx.inbox.read-only',
  },
  /** Where Redis is found when Sentinel watches it (lib/core/connections.ts resolveRedis). */
  redis: { sentinels: 'REDIS_SENTINELS', sentinelMaster: 'REDIS_SENTINEL_MASTER', sentinelUsername: 'REDIS_SENTINEL_USERNAME', sentinelPassword: 'REDIS_SENTINEL_PASSWORD' },
  http: {
    host: 'msgx.http.host',
    devMode: 'msgx.dev-mode',
    apiToken: 'MSGX_API_TOKEN',
    trustProxy: 'msgx.http.trust-proxy',
    allowedHosts: 'msgx.http.allowed-hosts',
    anonymousReads: 'msgx.http.anonymous-reads',
    apiKeysFile: 'msgx.api-keys-file',
    maxConnections: 'msgx.http.max-connections',
    requestTimeoutMs: 'msgx.http.request-timeout',
    headersTimeoutMs: 'msgx.http.headers-timeout',
    keepAliveTimeoutMs: 'msgx.http.keep-alive-timeout',
  },
} as const satisfies Record<string, Record<string, ParamKey | ConnKey>>;

type SliceSpec = typeof SLICES;
/** Every slice, typed: `Slices['pump']['applyBatch']` is the type of msgx.pipeline.apply-batch. */
export type Slices = { readonly [S in keyof SliceSpec]: { readonly [F in keyof SliceSpec[S]]: Config[SliceSpec[S][F] & keyof Config] } };
export type AirportConfig = Slices['airport'];

/** Every key some slice reads (each declared in keys.ts, with what it does). */
export function sliceKeys(): string[] {
  return [...new Set(Object.values(SLICES).flatMap((fields) => Object.values(fields) as string[]))].sort();
}

const built = new WeakMap<Config, Slices>();

/** The slices of a loaded configuration (built once per Config object, frozen). */
export function slices(config: Config): Slices {
  let s = built.get(config);
  if (!s) {
    const out: Record<string, Record<string, unknown>> = {};
    for (const [slice, fields] of Object.entries(SLICES)) {
      out[slice] = Object.freeze(Object.fromEntries(Object.entries(fields).map(([f, key]) => [f, config[key as keyof Config]])));
    }
    s = Object.freeze(out) as unknown as Slices;
    built.set(config, s);
  }
  return s;
}
