// Every configuration key, once: its schema, its default and what it does (`npm run config` prints
// them; docs/operations.md "Production settings" groups the connection settings). The types of a
// loaded configuration follow from these tables.
import * as v from 'valibot';
import {
  bool,
  duration,
  durationIn,
  durationList,
  httpsOrLoopback,
  knownTimeZone,
  listOf,
  localTime,
  matching,
  nonEmpty,
  oneOf,
  PLAINTEXT_SERVICES,
  port,
  posInt,
  tlsMode,
  trustProxy,
  url,
  wholeNumber,
} from './values.ts';

/** Spec key → [schema, default, what it does]. The environment name is MSGX_ + key without "msgx.", dots/dashes → _, upper case. */
export const PARAMS = {
  'msgx.pipeline.claim-batch': [posInt, '500', 'inbox rows intake takes per round'],
  'msgx.pipeline.apply-batch': [posInt, '500', 'K: messages the pump applies per batch'],
  'msgx.pipeline.message-budget': [duration, '10s', "most one message's decode may take; over it: DEAD"],
  'msgx.pipeline.idle-poll': [duration, '200ms', 'how often an idle intake reads the inbox'],
  'msgx.intake.gap-settle': [duration, '2s', 'how long intake waits for a missing inbox ID'],
  'msgx.intake.full-scan-every': [duration, '10m', "period of intake's full scan below the watermark"],
  'msgx.pipeline.max-attempts': [posInt, '5', 'attempts before DEAD(EXHAUSTED)'],
  'msgx.pipeline.backoff': [durationList, '1s,5s,30s,2m', 'waits between attempts (max-attempts − 1 entries)'],
  'msgx.pipeline.infra-alert-after': [duration, '2m', 'head held by INFRA this long: `msgx_pipeline_head_blocked`'],
  'msgx.pipeline.backfill-batch': [posInt, '500', 'inbox rows marked per backfill statement'],
  'msgx.pipeline.backfill-backoff': [durationList, '5s,30s,2m,10m,30m', 'waits between backfill attempts'],
  'msgx.pipeline.backfill-max-attempts': [posInt, '10', 'attempts before `msgx_backfill_attempts_over_limit`'],
  'msgx.pipeline.overdue-backfill': [duration, '24h', 'R: backfill abandoned after this (≤ R_keep)'],
  'msgx.pipeline.inbox-retention': [duration, '30d', 'R_keep: inbox rows kept after backfill'],
  'msgx.pipeline.event-retention': [duration, '7d', 'outbox SENT rows and change records kept'],
  'msgx.identity.include-day-boundary': [bool, 'true', 'identity key includes the DTTM day'],
  'msgx.msg.batch': [posInt, '1000', 'msg events (and state rows) per dispatch round; chosen by B3 (BENCHMARKS.md)'],
  'msgx.schd.flush-limit': [posInt, '200', 'flights per schd round'],
  'msgx.dispatch.max-attempts': [posInt, '10', 'send attempts before an event is DEAD'],
  'msgx.dispatch.backoff': [durationList, '1s,5s,30s,2m,10m', 'waits between send attempts'],
  // a longer gap would leave a lost state topic unhealed that long after the re-seed before it
  'msgx.dispatch.reseed-gap': [durationIn(1000, 600_000, '1s to 10m'), '30s', 'least time between state-topic re-seeds (1s–10m)'],
  'msgx.io.timeout': [duration, '5s', 'deadline of MariaDB, Redis and Kafka calls'],
  'msgx.mirror.check-every': [duration, '20s', 'period of the Redis version compare'],
  'msgx.airport.timezone': [v.pipe(v.string(), v.check(knownTimeZone, 'not an IANA time zone')), 'Asia/Shanghai', "the airport's zone (SIS local times)"],
  'msgx.airport.day-cutover': [localTime, '00:00', 'local time an operation day starts'],
  'msgx.history.purge-after': [duration, '7d', 'flights older than this are archived and purged'],
  'msgx.history.retention': [duration, '365d', 'archived flights kept'],
  'msgx.proc-state.retention': [duration, '30d', 'terminal PROC_STATE rows kept'],
  'msgx.snap-log.retention': [duration, '30d', 'snapshot log rows kept'],
  'msgx.req-track.retention': [duration, '30d', 'closed requests kept'],
  'msgx.inbox.read-only': [bool, 'false', 'shadow: never write the inbox or COUTMSGS'],
  'msgx.inbox.max-message-bytes': [posInt, '16000000', 'largest message `POST /cminmsgs/send` accepts'],
  // A read-only (shadow) installation starts after this inbox ID (0: at the oldest retained row).
  'msgx.inbox.start-after': [wholeNumber(0), '0', 'inbox ID a read-only installation starts after'],
  'msgx.kafka.client-id': [nonEmpty(), 'msgexchange', 'Kafka client id'],
  'msgx.kafka.msg-topic': [nonEmpty(), 'msgx.flight.msg', 'the msg topic'],
  'msgx.kafka.schd-topic': [nonEmpty(), 'msgx.flight.schd', 'the schd topic'],
  'msgx.kafka.state-topic': [nonEmpty(), 'msgx.flight.state', 'the state topic'],
  'msgx.kafka.partitions': [posInt, '6', 'partitions of the msg and state topics'],
  'msgx.schd.max-record-bytes': [posInt, '900000', 'largest schd record'],
  'msgx.requests.sender': [nonEmpty(4), 'MSGX', 'SNDR of requests to the AODB'],
  'msgx.requests.routing-id-rqrd': [nonEmpty(23), 'MSGXRQRD', 'COUTMSGS routing id of RQRD'],
  'msgx.requests.routing-id-rqfd': [nonEmpty(23), 'MSGXRQFD', 'COUTMSGS routing id of RQFD'],
  'msgx.requests.daily-schedule-at': [v.union([v.literal(''), localTime]), '20:00', "local time tomorrow's schedule is requested"],
  'msgx.requests.reconcile-window': [duration, '10m', 'how long a sent request waits for its answer'],
  'msgx.retention.schedule': [nonEmpty(), 'hourly', 'when retention runs (`hourly` or crontab)'],
  'msgx.http.port.api': [port, '8080', 'api port'],
  'msgx.http.port.intake': [port, '9401', "intake's /metrics and /healthz"],
  'msgx.http.port.pump': [port, '9402', "pump's"],
  'msgx.http.port.backfill': [port, '9403', "backfill's"],
  'msgx.http.port.msg-dispatch': [port, '9404', "msg-dispatch's"],
  'msgx.http.port.schd-dispatch': [port, '9405', "schd-dispatch's"],
  'msgx.http.port.retention': [port, '9406', "retention's"],
  'msgx.http.port.state-dispatch': [port, '9407', "state-dispatch's"],
  'msgx.http.host': [nonEmpty(), '127.0.0.1', 'address every process listens on'],
  // Where the api takes a client's address (rate limit of failed authentications, audit lines):
  // '' = the TCP peer; behind the TLS reverse proxy, the proxy's address(es) or CIDR(s), comma
  // separated (e.g. 127.0.0.1), so that X-Forwarded-For is believed from that hop only.
  'msgx.http.trust-proxy': [trustProxy, '', 'reverse proxy addresses to trust'],
  // Host / Origin names the HTTP servers answer besides the loopback names (DNS rebinding).
  'msgx.http.allowed-hosts': [listOf(/^[A-Za-z0-9.:_-]+$/, 'host names'), '', 'Host/Origin names served besides loopback'],
  // Read routes (as the route table names them, lib/access/routes.ts) an anonymous caller may read; /healthz: its reasons.
  'msgx.http.anonymous-reads': [listOf(/^\/[A-Za-z0-9/:._-]*$/, 'route paths'), '', 'read routes open to anonymous callers'],
  // Service accounts: `<name> <role> <sha256 hex>` per line (lib/access/keys.ts), read again when it changes.
  'msgx.api-keys-file': [v.string(), '', "service accounts' hashed keys"],
  // The identity provider (OpenID Connect) whose bearer JWTs the HTTP servers accept (lib/access/oidc.ts).
  'msgx.oidc.issuer': [httpsOrLoopback, '', 'identity provider (OpenID Connect)'],
  'msgx.oidc.audience': [v.string(), '', "this gateway in tokens' `aud`"],
  'msgx.oidc.client-id': [v.string(), '', "the console's client id"],
  'msgx.oidc.scopes': [v.string(), 'openid profile email', 'scopes the console asks for'],
  'msgx.oidc.resource': [v.string(), '', '`resource` the console asks for (ADFS)'],
  'msgx.oidc.role-claim': [nonEmpty(200), 'roles', 'claim holding the roles'],
  'msgx.oidc.role-map': [v.string(), '', 'IdP value → role'],
  'msgx.oidc.clock-skew': [durationIn(0, 300_000, '0s to 5m'), '30s', 'allowed clock difference'],
  'msgx.audit.retention': [duration, '365d', 'audit rows kept'],
  // Services reached in plain text on purpose (outside development mode, off loopback): postgres, mariadb, redis, kafka.
  'msgx.allow-plaintext': [listOf(/^(postgres|mariadb|redis|kafka)$/, `services (${PLAINTEXT_SERVICES.join(', ')})`), '', 'services reached in plain text on purpose'],
  'msgx.http.max-connections': [posInt, '256', 'open connections per process'],
  'msgx.http.request-timeout': [duration, '30s', 'a request must arrive within'],
  'msgx.http.headers-timeout': [duration, '10s', 'headers must arrive within'],
  'msgx.http.keep-alive-timeout': [duration, '5s', 'idle kept-alive connection closed after'],
  // Tracing (docs/operations.md "Tracing"): off, nothing of OpenTelemetry is loaded; the SDK reads
  // its other OTEL_* variables (endpoint, headers, service name, resource) itself.
  'msgx.tracing': [
    v.pipe(
      oneOf(['on', 'off']),
      v.transform((s) => s === 'on'),
    ),
    'off',
    '`on`: a trace per message (docs/operations.md "Tracing")',
  ],
  // The console's link to a trace: {traceId} replaced (e.g. http://zipkin:9411/zipkin/traces/{traceId}); '' = no link.
  'msgx.tracing.link': [matching(/^$|^https?:\/\/\S*\{traceId\}/, 'expected an http(s) URL template holding {traceId}'), '', "console's trace URL, `{traceId}` replaced"],
  'msgx.log.level': [oneOf(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']), 'info', 'pino level'],
  'msgx.dev-mode': [bool, 'false', 'development mode (loopback; token `dev`, plain text); `npm start` sets it'],
  // Test only: one flight rule changed at start (lib/flight/override.ts), e.g. 'ignore REMC in FLOP/REMC'.
  'msgx.test.rule-override': [v.string(), '', 'tests only: `ignore <TAG> in <TYPE>/<STYP>`'],
  'msgx.test.crash-at': [matching(/^$|^[a-z.-]+(:\d+)?$/, 'expected <point>[:<n>]'), '', 'tests only: a named crash point'],
} as const satisfies Record<string, readonly [v.GenericSchema<string, unknown>, string, string]>;

/** Connection settings (plain environment names, not msgx.* keys): [schema, default, what it does]. */
export const CONNECTIONS = {
  // One host, or libpq's host list (h1:5432,h2:5432) with target_session_attrs=read-write: lib/core/pg-url.ts
  DATABASE_URL: [matching(/^postgres(ql)?:\/\/\S+$/, 'expected postgres://…'), 'postgres://postgres@127.0.0.1:5432/msgx', 'Postgres'],
  INBOX_URL: [url, 'mysql://root@127.0.0.1:3306/aodbinterface', "the AODB's MariaDB (CMINMSGS, COUTMSGS)"],
  REDIS_URL: [url, 'redis://127.0.0.1:6379/0', 'Redis'],
  KAFKA_BROKERS: [nonEmpty(), '127.0.0.1:9092', 'Kafka brokers, comma separated'],
  MSGX_API_TOKEN: [v.string(), '', 'development mode only: the shared admin token (empty: `dev`)'],
  // Secured connections (docs/operations.md "Production settings"). '' = not set: plain text,
  // credentials from the URL, exactly the local default. Every password can also be given as a
  // file: <NAME>_FILE (FILE_SECRETS below).
  DATABASE_PASSWORD: [v.string(), '', 'Postgres password apart from the URL'],
  DATABASE_TLS_MODE: [tlsMode, '', '`verify-full` or `verify-ca`'],
  DATABASE_TLS_CA: [v.string(), '', 'CA file'],
  DATABASE_TLS_CERT: [v.string(), '', 'client certificate file'],
  DATABASE_TLS_KEY: [v.string(), '', 'its key file'],
  INBOX_PASSWORD: [v.string(), '', 'MariaDB password'],
  INBOX_TLS_MODE: [tlsMode, '', 'as DATABASE_'],
  INBOX_TLS_CA: [v.string(), '', 'as DATABASE_'],
  INBOX_TLS_CERT: [v.string(), '', 'as DATABASE_'],
  INBOX_TLS_KEY: [v.string(), '', 'as DATABASE_'],
  // Redis behind Sentinel (docs/operations.md "Production topology"): host:port of each Sentinel,
  // comma separated, and the master's name; '' = REDIS_URL's host is the server. REDIS_URL still
  // gives the database number, the credentials and rediss://.
  REDIS_SENTINELS: [v.string(), '', 'Sentinels (`host:port,…`) that name the Redis master; `REDIS_URL` still gives db, credentials, TLS'],
  REDIS_SENTINEL_MASTER: [v.string(), 'mymaster', "the master's name at the Sentinels"],
  // The Sentinels' own login (their requirepass / ACL user); TLS to them follows REDIS_URL (rediss://).
  REDIS_SENTINEL_USERNAME: [v.string(), '', "the Sentinels' user"],
  REDIS_SENTINEL_PASSWORD: [v.string(), '', 'their password'],
  REDIS_USERNAME: [v.string(), '', 'Redis ACL user'],
  REDIS_PASSWORD: [v.string(), '', 'Redis password'],
  REDIS_TLS_MODE: [tlsMode, '', 'as DATABASE_ (`rediss://` turns TLS on)'],
  REDIS_TLS_CA: [v.string(), '', 'as DATABASE_'],
  REDIS_TLS_CERT: [v.string(), '', 'as DATABASE_'],
  REDIS_TLS_KEY: [v.string(), '', 'as DATABASE_'],
  KAFKA_SECURITY_PROTOCOL: [oneOf(['', 'PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']), '', '`PLAINTEXT`, `SSL`, `SASL_PLAINTEXT`, `SASL_SSL`'],
  KAFKA_SASL_MECHANISM: [oneOf(['', 'scram-sha-512', 'scram-sha-256', 'plain']), '', '`scram-sha-512`, `scram-sha-256`, `plain`'],
  KAFKA_SASL_USERNAME: [v.string(), '', 'SASL user'],
  KAFKA_SASL_PASSWORD: [v.string(), '', 'SASL password'],
  KAFKA_TLS_MODE: [tlsMode, '', 'as DATABASE_'],
  KAFKA_TLS_CA: [v.string(), '', 'as DATABASE_'],
  KAFKA_TLS_CERT: [v.string(), '', 'as DATABASE_ (mutual TLS)'],
  KAFKA_TLS_KEY: [v.string(), '', 'as DATABASE_'],
  // OpenTelemetry's standard variables that the gateway reads itself (the SDK of this version leaves them to its caller)
  OTEL_TRACES_EXPORTER: [oneOf(['otlp', 'zipkin', 'console', 'none']), 'otlp', 'or `zipkin`, `console`, `none`'],
  OTEL_TRACES_SAMPLER: [
    oneOf(['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', 'always_on', 'always_off', 'traceidratio']),
    'parentbased_always_on',
    "OpenTelemetry's names",
  ],
  OTEL_TRACES_SAMPLER_ARG: [
    v.pipe(
      v.string(),
      v.transform(Number),
      v.check((n) => n >= 0 && n <= 1, 'expected a ratio from 0 to 1'),
    ),
    '1',
    'its ratio',
  ],
} as const satisfies Record<string, readonly [v.GenericSchema<string, unknown>, string, string]>;

/**
 * Settings that may be given as a file instead (the Docker / Kubernetes secrets convention):
 * NAME_FILE = a path whose content (one trailing newline dropped) is the value. Both set: refused.
 */
export const FILE_SECRETS = [
  'DATABASE_URL',
  'DATABASE_PASSWORD',
  'INBOX_URL',
  'INBOX_PASSWORD',
  'REDIS_URL',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
  'KAFKA_SASL_PASSWORD',
  'MSGX_API_TOKEN',
] as const;

export type ParamKey = keyof typeof PARAMS;
export type ConnKey = keyof typeof CONNECTIONS;
export type Config = { [K in ParamKey]: v.InferOutput<(typeof PARAMS)[K][0]> } & {
  [K in ConnKey]: v.InferOutput<(typeof CONNECTIONS)[K][0]>;
};

export function envName(key: string): string {
  return (
    'MSGX_' +
    key
      .replace(/^msgx\./, '')
      .replace(/[.-]/g, '_')
      .toUpperCase()
  );
}
