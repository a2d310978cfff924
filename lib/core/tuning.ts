// Tuning values that are not configuration: periods, deadlines, page sizes and backoffs fixed in
// code, named once here, one section per process (and one for what every process runs), so that
// none hides as a literal inside a module. What an operator may change is configuration instead
// (lib/core/config.ts, docs/operations.md). A value here changes with the code, in review.

/** A backoff as data: after the n-th failure in a row, wait firstMs doubled n − 1 times, at most capMs (lib/runtime/watch.ts backoffMs). */
export interface Backoff {
  firstMs: number;
  capMs: number;
}

/** The watches (lib/runtime/watch.ts and its instances in lib/watches/, lib/runtime/pool-watch.ts). */
export const WATCH = {
  /** At start, a process waits for a watch's first check at most this many I/O deadlines (msgx.io.timeout); a frozen path does not keep it from starting. */
  startWaitTimeouts: 4,
  /** A store that refused its repair (a read-only replica, an ACL, a policy) is tried again after this backoff. */
  refusedBackoff: { firstMs: 5_000, capMs: 60_000 } satisfies Backoff,
  /** A watch whose problem lasts logs it again at most this often. */
  remindEveryMs: 60_000,
  restore: {
    /** Between full checks while nothing is behind, and while held (the operator's command is seen this soon). */
    everyMs: 30_000,
    heldEveryMs: 3_000,
    /** The watermark and the EVENT_ID sequence (one small query) are glanced at this often. */
    glanceEveryMs: 1_000,
    /** Processed inbox IDs read per query; pages the periodic check looks at, at most. */
    inboxPage: 5_000,
    checkPages: 20,
    /** Redis keys per SCAN step. */
    scanCount: 1_000,
    /** Records of the msg topic read per partition at most (the latest: where the highest EVENT_IDs are). */
    kafkaTail: 2_000,
  },
  redis: {
    /** The generation marker and the server's run_id are looked at this often. */
    glanceEveryMs: 2_000,
    /** A flight found behind is looked at again after this (the pump writes Redis just after its commit). */
    settleMs: 1_000,
    /** Flights read from Postgres and written per step of a rebuild. */
    rebuildPage: 1_000,
    /** A compare or a rebuild step moves many keys at once: its deadline is this many I/O deadlines (msgx.io.timeout). */
    bulkTimeouts: 4,
  },
  topics: {
    /** Period of the steady-state check, and while a store is behind (re-seed in progress, loss open, repair refused). */
    everyMs: 10_000,
    behindEveryMs: 2_000,
  },
  pool: {
    /** The pool watch looks at its connections this often. */
    everyMs: 1_000,
    /** A call waiting longer than this makes the watch ask the server. */
    suspectMs: 2_000,
    /** Among the other busy connections, a call waiting at least this long on an idle backend is stuck too. */
    stuckMinMs: 1_000,
    /** On reset, a call younger than this is left alone (its backend may not have read it yet). */
    resetMinMs: 500,
    /** A lost session not ended after this long is left to the server's own timeouts. */
    lostGiveUpMs: 5 * 60_000,
    /** While the server cannot be reached on a fresh connection, it is tried again this often (never every second: each attempt a black-holed path holds arrives later as a session). */
    unreachableBackoff: { firstMs: 5_000, capMs: 5_000 } satisfies Backoff,
  },
} as const;

/** What every process runs (lib/runtime/process.ts and its neighbours). */
export const RUNTIME = {
  /** After SIGTERM/SIGINT a process exits by force if its clean shutdown takes longer (compose's stop grace must exceed it). */
  forcedExitMs: 15_000,
  /**
   * After a lost leadership the old runner gets this long to stop; then it is abandoned (its
   * duties already stopped on the leader signal, its pooled connections are closed) and the
   * process stands by again on new connections. A runner waiting on a frozen connection must not
   * keep the process from leading again.
   */
  runnerStopMs: 4_000,
  /** A runner that cannot start (Postgres refuses, an outage) is tried again after this backoff. */
  runnerStartBackoff: { firstMs: 1_000, capMs: 5_000 } satisfies Backoff,
  /** A duty's run that threw is run again after this backoff (lib/runtime/duty.ts). */
  dutyRetryBackoff: { firstMs: 500, capMs: 10_000 } satisfies Backoff,
  /** A duty with one job at a time: LISTEN, a poll or a job's statement, a check, one spare (ProcessSpec.poolMax overrides it). */
  poolMax: 4,
  /** A scrape waits this long for the metrics collected from Postgres; then serves the others. */
  scrapeMs: 3_000,
  /** After the runner started, the process is at rest this much later: its start-up garbage is collected then. */
  settledMs: 5_000,
  /** At rest, memory is given back this often (lib/runtime/gc.ts releaseWhileIdle). */
  restReleaseMs: 60_000,
  /** A failure line of the same kind, or a "still away" summary, is written at most this often (lib/runtime/health.ts, lib/dispatch/outage.ts). */
  summaryEveryMs: 60_000,
  /** A leader's heartbeat every heartbeatMs; silent for longer than deadlineMs it is stale; a stand-by looks every pollMs (lib/runtime/leader.ts). */
  leader: { heartbeatMs: 1_000, deadlineMs: 6_000, pollMs: 1_000 },
  /** The longest wait between two failed attempts to connect and take the leader lock. */
  leaderMaxRetryMs: 5_000,
  /** A heartbeat unanswered for this long makes the leader ask the server whether its session is busy. */
  leaderSuspectMs: 2_000,
  /** Each duty is given a job when it has none, this often (lib/runtime/job-queue.ts keepDutiesAlive). */
  keepAliveEveryMs: 60_000,
  /** A duty job locked longer ago than this is not running any more (a duty drains ≤ 55 s per run). */
  staleLockMs: 5 * 60_000,
  /** Pause before a runner that ended on its own is replaced. */
  runnerRestartMs: 1_000,
  /** Period of the event-loop delay histogram (nodejs_eventloop_lag_*): 0.4 % of a core at 10 ms (docs/decisions.md "Footprint"). */
  eventLoopSampleMs: 100,
  /**
   * mysql2's caches, sized by default for any statement an application might send (15,000 row
   * parsers; 16,000 prepared statements per connection, ~0.5 MB apiece resident): the edge sends a
   * few texts through `query`, a parser per result shape and room for a few prepared statements.
   */
  mysqlParserCache: 64,
  mysqlPreparedStatements: 16,
  /** Every Postgres session: a statement, a lock wait, a transaction left idle end after these (lib/db/postgres.ts SESSION_LIMITS); the pump's own session has shorter lock waits (PUMP). Client-side TCP keepalive: first probe after keepAliveInitialDelayMs. */
  postgresSession: { statementTimeoutMs: 60_000, lockTimeoutMs: 60_000, idleInTransactionMs: 60_000, keepAliveInitialDelayMs: 10_000 },
} as const;

/** The pump (workers/pump.ts, lib/pipeline/pump/, lib/flight/). */
export const PUMP = {
  /** Time one run of the pump's duty drains before it re-queues itself. */
  budgetMs: 30_000,
  /** The head gauges are refreshed this often, on the pool, apart from the pump's loop. */
  gaugesEveryMs: 1_000,
  /** While Postgres is found behind (restore), the pump looks again this often. */
  heldRetryMs: 2_000,
  /** On the pump's own session: a statement longer than statementTimeout, or a lock wait longer than lockTimeout, fails (FAILED(INFRA), not an invisible hang). */
  statementTimeout: '60s',
  lockTimeout: '20s',
  /** Every lockSliceMs a drain releases and re-takes PIPELINE_LOCK when another session waits for it (lets the history purge in). */
  lockSliceMs: 1_000,
  /** While the head is held for INFRA, the failed service is probed this often; work resumes when it answers. */
  probeEveryMs: 1_000,
  /** A large message's batch that grew the heap by more than this is followed by a full collection. */
  releaseAfterGrowthBytes: 64 * 2 ** 20,
  /** Rounds of "load what the planner needs" per message before giving up (a bug, not data). */
  maxLoadRounds: 20,
  /** Stored states read per statement (under PIPELINE_LOCK the pump is the only writer of flights). */
  loadPerStatement: 2_000,
  /** Flights kept between batches at most (a larger working set is simply loaded again). */
  cacheMax: 100_000,
  /** Flights per write statement (a snapshot's 9,999 flights go in slices), and outbox rows or change records per write statement. */
  writeFlightsPerStatement: 1_000,
  writeRowsPerStatement: 2_000,
  /** Flights per Redis script call (a 9,999-flight snapshot is a handful of round trips). */
  mirrorBatch: 1_000,
  /**
   * A body this long, in characters (about bytes: SIS is mostly ASCII), is a large message (a
   * snapshot of more than ~3,500 flights): the decode worker gives it a worker of its own, with a
   * young generation of largeYoungGenerationMb, ended after it, and the pump gives the memory back
   * after its batch (docs/decisions.md "Snapshots in bounded memory").
   */
  largeBody: 2 * 1024 * 1024,
  largeYoungGenerationMb: 16,
  /** A body this long or longer is decoded with DecodeHints (a snapshot of more than ~850 flights): below it, decoding every record costs less. */
  hintedBody: 512 * 1024,
} as const;

/** Intake (workers/intake.ts, lib/pipeline/intake.ts). */
export const INTAKE = {
  /** Time one run of the intake duty polls before it re-queues itself. */
  budgetMs: 55_000,
  /** While Postgres is found behind (restore), intake looks again this often. */
  heldRetryMs: 2_000,
  /** Full scan chunk: existing rows per round, as a multiple of the claim batch. */
  fullScanChunkFactor: 20,
  /** Remembered passed gaps at most (the oldest are forgotten first, logged). */
  maxPassedGaps: 500,
  /** Ranges per recheck query. */
  recheckRanges: 100,
} as const;

/** Backfill (workers/backfill.ts): the time one run of its duty drains before it re-queues itself. */
export const BACKFILL = { budgetMs: 30_000 } as const;

/** The dispatchers (workers/*-dispatch.ts, lib/dispatch/). */
export const DISPATCH = {
  /** Time one task run may keep draining before it re-queues itself (other jobs get a turn). */
  drainBudgetMs: 30_000,
  /** While Kafka is unreachable, it is probed this often; sending resumes at its first answer. */
  probeIntervalMs: 500,
  /** At start, a dispatcher whose broker does not answer tries again after this backoff (short: it sends ≤ 2 s after Kafka answers). */
  connectBackoff: { firstMs: 500, capMs: 2_000 } satisfies Backoff,
  /** SENT rows deleted per statement by the outbox retention, and its time budget per run. */
  retentionBatch: 5_000,
  retentionBudgetMs: 60_000,
} as const;

/** Retention (workers/retention.ts, lib/lifecycle/): the time budget of one lifecycle job per run. */
export const RETENTION = { jobBudgetMs: 60_000 } as const;

/** The compare of two installations (scripts/compare.ts, dry-run; lib/shadow/): flights read per statement from each side. */
export const SHADOW = { page: 5_000 } as const;
