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
  /** A duty with one job at a time: LISTEN, a poll or a job's statement, a check, one spare (ProcessSpec.poolMax overrides it). */
  poolMax: 4,
  /** A scrape waits this long for the metrics collected from Postgres; then serves the others. */
  scrapeMs: 3_000,
  /** After the runner started, the process is at rest this much later: its start-up garbage is collected then. */
  settledMs: 5_000,
  /** At rest, memory is given back this often (lib/runtime/gc.ts releaseWhileIdle). */
  restReleaseMs: 60_000,
  /** A failure line of the same kind is written at most this often; the suppressed ones are counted (lib/runtime/health.ts quiet). */
  summaryEveryMs: 60_000,
} as const;
