// Process bootstrap shared by every worker: config (parsed once), logs, /metrics + /healthz,
// graphile-worker runner with only this process's tasks and crontab, clean shutdown.
import type { FastifyInstance } from 'fastify';
import type { TaskList } from 'graphile-worker';
import type pg from 'pg';
import { ConfigError, envName, loadConfig, redactUrl, slices, targets, type Config } from '../core/config.ts';
import { scrub } from '../core/secrets.ts';
import { isInfraError } from '../core/errors.ts';
import { RUNTIME } from '../core/tuning.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import type { Inbox } from '../db/mysql.ts';
import { connectClient, createDb, createPool, type Db } from '../db/postgres.ts';
import type { Redis } from '../db/redis.ts';
import { explained } from '../db/tls.ts';
import { Health, type ConditionOptions, type HealthCheck } from './health.ts';
import { createStatusServer, listenOrExit, type StatusRoute, type StatusServer } from './status-server.ts';
import { statusRoutes } from './status-routes.ts';
import { createLogger, type Logger } from './log.ts';
import { exportProcessMetrics, metrics } from './metrics.ts';
import { runAsLeader, sleep, withDeadline, type LeaderHandle } from './leader.ts';
import { Opened } from './opened.ts';
import type { ProcessName } from '../core/tasks.ts';
import { clearCondition, setCondition } from './conditions.ts';
import { dependencyChecks } from './dependency-checks.ts';
import { releaseMemory, releaseWhileIdle } from './gc.ts';
import { KEEP_ALIVE_EVERY_MS, keepDutiesAlive, keptRunner, unlockStaleJobs } from './job-queue.ts';
import { type PoolWatch, watchPool } from './pool-watch.ts';
import { backoffMs } from './watch.ts';
import { checkAutovacuum } from './server-settings.ts';
import { openAccess, type Access } from '../access/open.ts';
import { callerOf } from '../access/identity.ts';
import { startTracing } from './start-tracing.ts';
import type { Tracing } from './tracing.ts';

/** After SIGTERM/SIGINT a process exits by force if its clean shutdown takes longer (RUNTIME.forcedExitMs). */
export const FORCED_EXIT_MS = RUNTIME.forcedExitMs;
/** The condition /healthz names until the duty's start-up checks ran. */
const STARTING = 'starting';

/** The services a process may need beside Postgres (which every process needs). */
export type Dependency = 'mariadb' | 'redis' | 'kafka';

export interface Runtime {
  name: ProcessName;
  config: Config;
  log: Logger;
  clock: Clock;
  pool: pg.Pool;
  db: Db;
  signal: AbortSignal;
  /** One trace per message (lib/runtime/tracing.ts); undefined while msgx.tracing is off. */
  tracing?: Tracing;
  /** Readiness per dependency and the outage log lines (lib/runtime/health.ts). */
  health: Health;
  /** Who may call the process's HTTP routes, and the audit trail (lib/access/). */
  access: Access;
  /**
   * The edges of a process, wired to its readiness: a call that timed out reports the
   * dependency (and its connection is thrown away), and when the dependency goes away the
   * edge's idle connections are closed so the next calls run on new ones.
   */
  edges: {
    aodbPool(opts?: { connectionLimit?: number }): Inbox;
    redis(): Redis;
    /** A dedicated Postgres connection (session locks), watched like the pool's. */
    pgSession(name: string): Promise<pg.Client>;
  };
}

/** A further named readiness condition (see lib/runtime/health.ts "Registering a further condition"). */
export interface NamedCondition extends ConditionOptions {
  name: string;
  check: HealthCheck;
}

export interface ProcessSpec {
  name: ProcessName;
  /** Single-writer duty: the runner only starts while this advisory lock is held. */
  leaderLock?: number;
  /**
   * Build the task list (with the leader's dedicated connection when leaderLock is set). What it
   * opens goes into `opened` as it is opened: closed when the duty stops, or when this start fails
   * at any point (lib/runtime/opened.ts).
   */
  tasks: (rt: Runtime, leader: LeaderHandle | undefined, opened: Opened) => Promise<{ tasks: TaskList }>;
  crontab?: (config: Config, now: Date) => string;
  /** Jobs added when the runner starts (first wake-up). */
  kick?: string[];
  /**
   * Long-running duties (job key = task name) kept alive: every minute, a duty with no job that
   * is running or waiting gets one. Unlike a crontab line with that job key, this never touches a
   * running job (graphile-worker would retire it to attempts = max_attempts and queue a due
   * duplicate behind it), so the queue shows one healthy job per duty (docs/operations.md).
   */
  keepAlive?: string[];
  /** Extra HTTP routes (the api process). */
  http?: (app: FastifyInstance, rt: Runtime) => Promise<void>;
  /**
   * The services this process needs beside Postgres: each is checked on a dedicated connection
   * (lib/runtime/health.ts) and /healthz answers 503 naming it while it does not answer.
   */
  needs?: Dependency[];
  /** Further named readiness conditions of this process (e.g. a consistency check). */
  conditions?: (rt: Runtime) => NamedCondition[];
  /**
   * The most connections its Postgres pool opens (default RUNTIME.poolMax, lib/core/tuning.ts): graphile-worker's LISTEN
   * connection and its polls, the duty's statements, the health check (README "Processes").
   */
  poolMax?: number;
}

/** The api's server (lib/runtime/http.ts, fastify): the status routes, then the process's own. */
async function routedServer(http: NonNullable<ProcessSpec['http']>, rt: Runtime, routes: Record<string, StatusRoute>): Promise<StatusServer> {
  const { createHttpServer } = await import('./http.ts');
  const app = createHttpServer(slices(rt.config).http, rt.log, rt.access.gate);
  for (const [path, route] of Object.entries(routes))
    app.get(path, async (req, reply) => {
      const a = await route(callerOf(req) ?? { principal: null, details: false });
      return reply
        .code(a.status ?? 200)
        .type(a.type ?? 'application/json; charset=utf-8')
        .send(a.body);
    });
  await http(app, rt);
  return { listen: async (o) => void (await app.listen(o)), close: () => app.close() };
}

/** An edge asked for by a process whose spec does not name the service in `needs`: a programming error. */
function missing(name: string, dep: Dependency): never {
  throw new Error(`${name}: uses ${dep} without listing it in needs`);
}

export function loadConfigOrExit(name: string): Config {
  try {
    return loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${name}: ${scrub(e.message)}\n`);
      process.exit(2);
    }
    throw e;
  }
}

export async function runProcess(spec: ProcessSpec): Promise<void> {
  const config = loadConfigOrExit(spec.name);
  const log = createLogger(spec.name, config['msgx.log.level']);
  const t = targets(config);
  const tls = { postgres: t.postgres.tls?.mode ?? 'off', mariadb: t.mariadb.tls?.mode ?? 'off', redis: t.redis.tls?.mode ?? 'off', kafka: t.kafka.protocol };
  log.info({ node: process.version, pid: process.pid, database: redactUrl(config.DATABASE_URL), tls }, `${spec.name} starting`);
  const abort = new AbortController();
  const { rt, poolWatch } = await openRuntime(spec, config, log, abort.signal);
  // graphile-worker prints a stack with console.trace when its worker dies of a connection error
  // (the runner is replaced, see startRunner): one quiet line instead.
  console.trace = (...args: unknown[]) => void rt.health.quiet('console-trace', args[0], 'graphile-worker: a worker ended with an error', 'postgres');
  // graphile-worker can reject an internal promise nobody awaits while Postgres restarts (e.g.
  // failing a job as the pool dies). That must not take the process down: the leader loop and
  // graphile-worker's own retries recover once Postgres is back. Logged once, then at most once
  // a minute with the count (an outage makes many of the same).
  process.on('unhandledRejection', (reason) => {
    rt.health.quiet('unhandled-rejection', reason, 'unhandled promise rejection (continuing; the duty recovers on its own)');
  });
  exportProcessMetrics(spec.name, [], { readOnly: config['msgx.inbox.read-only'], clock: rt.clock });
  registerConditions(rt, spec);
  rt.health.start();
  // server settings read once Postgres answers (lib/runtime/server-settings.ts): at start, else when the duty starts
  let settingsRead = false;
  const readServerSettings = () => {
    if (!settingsRead) void checkAutovacuum(rt.db, log, slices(config).io.timeoutMs).then((on) => (settingsRead ||= on !== null));
  };
  readServerSettings();
  const app = await serveStatus(spec, rt);
  const duty = runDuty(spec, rt, { abort, poolWatch, readServerSettings });
  let stopping = false;
  const shutdown = async (sig: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, `${spec.name} shutting down`);
    abort.abort();
    const force = setTimeout(() => process.exit(1), RUNTIME.forcedExitMs).unref();
    await duty.catch((e) => log.error({ err: e }, 'duty ended with error'));
    await app.close();
    await rt.access.close();
    void poolWatch.stop();
    await rt.health.close();
    await withDeadline(rt.pool.end(), 2000, 'pool end').catch(() => {});
    await rt.tracing?.shutdown(2000); // the spans not yet exported
    clearTimeout(force);
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  duty.catch((e) => {
    log.fatal({ err: e }, 'duty crashed');
    process.exit(1);
  });
}

/** The pool, readiness, the pool watch and the edges of a process: its Runtime. */
async function openRuntime(spec: ProcessSpec, config: Config, log: Logger, signal: AbortSignal): Promise<{ rt: Runtime; poolWatch: PoolWatch }> {
  const t = targets(config);
  const clock = systemClock;
  const pool = createPool(t.postgres, { max: spec.poolMax ?? RUNTIME.poolMax, name: spec.name });
  // Readiness per dependency, one line when one goes away / comes back (lib/runtime/health.ts).
  const health = new Health({ log, clock });
  // A pooled connection frozen on a dead path is closed instead of hanging its caller (lib/runtime/pool-watch.ts).
  const poolWatch = watchPool(pool, {
    url: t.postgres,
    clock,
    log,
    onStuck: health.reporter('postgres'),
    onLostEnded: (backends) => log.warn({ backends }, 'postgres: ended the server sessions of connections this process lost (their transactions roll back, their locks go)'),
  });
  health.onDown('postgres', () => void poolWatch.reset());
  const io = slices(config).io;
  // the MariaDB and Redis drivers are loaded only by a process that needs them (docs/decisions.md "Footprint")
  const needs = new Set(spec.needs);
  const mysql = needs.has('mariadb') ? await import('../db/mysql.ts') : undefined;
  const redis = needs.has('redis') ? await import('../db/redis.ts') : undefined;
  const needed = <T>(m: T | undefined, dep: Dependency): T => m ?? missing(spec.name, dep);
  const edges: Runtime['edges'] = {
    aodbPool: (o = {}) => {
      const { createAodbPool, dropIdle } = needed(mysql, 'mariadb');
      const p = createAodbPool(t.mariadb, { timeoutMs: io.timeoutMs, connectionLimit: o.connectionLimit, onFault: health.reporter('mariadb') });
      health.onDown('mariadb', () => dropIdle(p));
      return p;
    },
    redis: () => {
      const { createRedis, reconnectRedis } = needed(redis, 'redis');
      const r = createRedis(t.redis, io.timeoutMs, { onFault: health.reporter('redis') });
      health.onDown('redis', () => reconnectRedis(r));
      return r;
    },
    pgSession: async (name) => {
      const c = await connectClient(t.postgres, name);
      poolWatch.adopt(c);
      return c;
    },
  };
  const db = createDb(pool);
  let access: Access;
  try {
    access = openAccess({ process: spec.name, http: slices(config).http, oidc: slices(config).oidc, clock, log, db, count: accessCounters });
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`${spec.name}: ${scrub(e.message)}\n`);
    process.exit(2);
  }
  // off: nothing of OpenTelemetry is loaded (lib/runtime/tracing.ts)
  const tracing = await startTracing(slices(config).tracing, spec.name, log);
  return { rt: { name: spec.name, config, log, clock, pool, db, signal, tracing, health, edges, access }, poolWatch };
}

/** What access counts (lib/access/open.ts) on this process's registry. */
const accessCounters = {
  refusal: (status: number) => metrics.httpRefusals.inc({ status: String(status) }),
  keysRefused: () => metrics.apiKeysRefused.inc(),
  auditWriteFailed: () => metrics.auditWriteFailures.inc(),
};

/** /metrics and /healthz (the api's routes beside them), listening; not ready ("starting") until the duty started. */
async function serveStatus(spec: ProcessSpec, rt: Runtime): Promise<StatusServer> {
  const { health, config, log } = rt;
  const routes = statusRoutes(spec.name, health);
  // Not ready until the duty started (its start-up checks, e.g. the restore check, then its runner),
  // or this instance stands by behind another leader; again not ready after a start that failed.
  setCondition(STARTING, 'start-up checks have not run yet', rt.clock.now());
  // fastify only for a process with routes of its own (the api); the others answer on node:http
  const app = spec.http ? await routedServer(spec.http, rt, routes) : createStatusServer(slices(config).http, log, rt.access.gate, routes);
  const port = config[`msgx.http.port.${spec.name}`];
  const host = config['msgx.http.host'];
  await listenOrExit(app, { port, host, setting: envName(`msgx.http.port.${spec.name}`), name: spec.name, log });
  log.info({ port, host: config['msgx.http.host'] }, 'http listening (/metrics, /healthz)');
  return app;
}

interface DutyHooks {
  abort: AbortController;
  poolWatch: PoolWatch;
  readServerSettings: () => void;
}

/**
 * The duty: as the leader of spec.leaderLock (standing by behind another), or at once with its
 * start retried with backoff while Postgres refuses; stopped on the abort. Until it first started
 * (or stands by), a refused or failed attempt is one line each (Postgres full, starting up,
 * restarting: the process waits, it never exits); later ones are rate-limited like every outage line.
 */
function runDuty(spec: ProcessSpec, rt: Runtime, o: DutyHooks): Promise<void> {
  const signal = o.abort.signal;
  const state = { started: false };
  const startFailed = (key: string, e: unknown, message: string) => {
    if (state.started) return void rt.health.quiet(key, e, message, 'postgres');
    const err = explained('postgres', e) as Error & { code?: string };
    rt.log.warn({ code: err.code ?? (e as { code?: string }).code, reason: err.message }, `start: ${message} (${err.message})`);
  };
  const start = (leader?: LeaderHandle) => startRunner(spec, rt, leader, o.readServerSettings).then((stop) => ((state.started = true), stop));
  if (spec.leaderLock)
    return runAsLeader({
      url: targets(rt.config).postgres,
      name: spec.name,
      lockKey: spec.leaderLock,
      log: rt.log,
      clock: rt.clock,
      signal,
      start,
      onLost: () => o.poolWatch.reset(),
      onStandby: () => {
        state.started = true;
        clearCondition(STARTING);
      },
      onError: (e, message) => startFailed('leader-loop', e, message),
    });
  return (async () => {
    // A runner that cannot start (Postgres refuses the connection: a wrong certificate or
    // password, an outage) is retried with backoff; /healthz says why meanwhile.
    let stopRunner: () => Promise<void>;
    for (let failures = 1; ; failures++) {
      try {
        stopRunner = await start();
        break;
      } catch (e) {
        if (signal.aborted) return;
        if (!isInfraError(e)) throw e; // a refusal of the setup (e.g. a topic the cluster will not create) stays fatal
        const wait = backoffMs(RUNTIME.runnerStartBackoff, failures);
        startFailed('runner-start', e, `graphile-worker runner did not start; retrying in ${wait / 1000} s`);
        await sleep(wait, signal);
      }
    }
    await new Promise((r) => (signal.aborted ? r(undefined) : signal.addEventListener('abort', r, { once: true })));
    await stopRunner();
  })();
}

/**
 * Start the duty: its tasks built, then graphile-worker's runner. Returns how to stop it. A
 * start that fails at any point (a statement refused or cancelled, the runner not starting)
 * first stops what it started and closes what the tasks opened, then throws: the caller's
 * retry starts from nothing (docs/decisions.md "A failed start closes what it opened").
 */
async function startRunner(spec: ProcessSpec, rt: Runtime, leader: LeaderHandle | undefined, readServerSettings: () => void): Promise<() => Promise<void>> {
  const { log } = rt;
  const opened = new Opened();
  let runner: ReturnType<typeof keptRunner> | undefined;
  let keepAlive: NodeJS.Timeout | undefined;
  let stopResting = () => {};
  const stop = async () => {
    clearTimeout(keepAlive);
    stopResting();
    await runner?.stop(RUNTIME.runnerStopMs);
    await opened.close(RUNTIME.runnerStopMs, (e) => log.warn({ err: (e as Error).message }, 'a connection or watch of the duty did not close (in time); abandoned'));
  };
  try {
    const built = await spec.tasks(rt, leader, opened);
    readServerSettings();
    if (spec.leaderLock) await unlockStaleJobs(rt, Object.keys(built.tasks));
    const crontab = spec.crontab?.(rt.config, rt.clock.now()) ?? '# this process has no crontab lines';
    runner = keptRunner({ pool: rt.pool, tasks: built.tasks, crontab, kick: spec.kick ?? [], log, health: rt.health, ended: () => leader?.signal.aborted ?? rt.signal.aborted });
    await runner.start();
    clearCondition(STARTING);
  } catch (e) {
    await stop();
    // not ready again until a later attempt starts (or stands by): nothing of this one runs
    setCondition(STARTING, 'the last start of the duty failed; it is tried again', rt.clock.now());
    throw e;
  }
  // start-up's garbage (module loading, the first checks) given back once (docs/decisions.md "Footprint")
  setTimeout(releaseMemory, RUNTIME.settledMs).unref();
  stopResting = releaseWhileIdle(RUNTIME.restReleaseMs);
  // Every minute, each process at a phase of its own: the processes of an installation start
  // together, and in step their checks (and the rounds they start) opened a connection each in
  // the same second, 29 at once where 19–23 are open at rest (docs/decisions.md "Footprint").
  const keepAliveTick = () => {
    void keepDutiesAlive(rt, spec.keepAlive!);
    keepAlive = setTimeout(keepAliveTick, KEEP_ALIVE_EVERY_MS);
  };
  if (spec.keepAlive?.length) keepAlive = setTimeout(keepAliveTick, Math.round(Math.random() * KEEP_ALIVE_EVERY_MS));
  return stop;
}

/** Postgres always, then what the process needs, then its further conditions. */
function registerConditions(rt: Runtime, spec: ProcessSpec): void {
  const t = targets(rt.config);
  const pg = dependencyChecks.postgres(t.postgres, undefined, { process: rt.name, pool: rt.pool });
  rt.health.register('postgres', pg.check, { close: pg.close });
  for (const dep of spec.needs ?? []) {
    const w = dep === 'mariadb' ? dependencyChecks.mysql(t.mariadb) : dep === 'redis' ? dependencyChecks.redis(t.redis) : dependencyChecks.kafka(t.kafka);
    rt.health.register(dep, w.check, { close: w.close });
  }
  for (const c of spec.conditions?.(rt) ?? []) rt.health.register(c.name, c.check, c);
}
