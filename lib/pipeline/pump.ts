// The pump: applies the head of queue and the messages after it, strictly in inbox order
// (INV-2), a batch of up to K consecutive messages at a time (msgx.pipeline.apply-batch). Its
// steps have the names of docs/design.md "The pump's steps"; applyBatch calls them in order:
//
//   drain        PIPELINE_LOCK held across batches (released within LOCK_SLICE_MS when the purge
//                waits); batches until none is ready; after an unexpected database error the
//                batch is tried again smaller, down to one message.
//   chooseBatch  the head and the open messages after it (up to K, cut before a FAILED one); a
//                FAILED head whose attempts are used up → DEAD(EXHAUSTED); one not yet due waits
//                (an INFRA failure that carried its service: that service is probed every
//                PROBE_EVERY_MS and the head is tried as soon as it answers).
//   read         the raw bodies, one inbox query                     fails → FAILED(INFRA, mariadb)
//   decode       pure, in order, in the decode worker (lib/pipeline/decoder.ts) under the
//                per-message budget (over it: MALFORMED); `prepare` turns each decoding into
//                what is to be done with the message (a Todo). A message's own failure
//                (MALFORMED, PROTOCOL) or `unsupported` is its outcome; a retryable decode
//                failure (CODEC_ERROR) ends the batch before that message (the Cut); a snapshot
//                is a batch of its own. The read and decode of the NEXT batch run while this one's
//                business, mirror and terminal steps do (read ahead, never applied ahead: the
//                next batch uses them only where its own heads list the same messages from the
//                same head; see Ahead).
//   business     ONE transaction: the owners of the batch's identities (one read), every message
//                applied in order (batch domains in memory, transaction handlers in a savepoint
//                each), the domains' net writes, and every message's outcome (APPLIED_STATE) +
//                identity binding + dispatcher wake-ups (one statement). A message's own failure
//                is its outcome and the batch goes on; a retryable one (INFRA, INTERNAL) ends the
//                batch before that message — the ones before it commit.
//   mirror       ONE Redis sync for every flight the batch addresses, changed or not
//                                                                       fails → FAILED(INFRA, redis)
//   terminal     ONE statement: every applied outcome becomes its terminal state + backfill
//                intent + backfill wake-up (INV-10: nothing is terminal before its business
//                commit and its mirror step). After the batch of a large message (a snapshot over
//                LARGE_BODY) the pump gives the memory it left back (lib/runtime/gc.ts).
//   tail         in drain with a second connection (deps.terminalDb): a batch's mirror and
//                terminal steps run while the next batch is chosen, read and applied (Tail). The
//                next batch's business transaction commits only after that mirror step succeeded
//                (or rolls back), and its own mirror step starts only after that terminal
//                statement ended: Redis is written in batch order and INV-10 holds per batch.
//   A message found with APPLIED_STATE set (a crash after its business step) is not applied
//   again (Todo 'recover'): its flights are mirrored from Postgres and its outcome made terminal.
//
// What a failure leads to is decided in lib/pipeline/failures.ts (ownOutcome, decide,
// probeTarget); the pump only carries the failure (class, detail, service) there. The pump never
// writes the inbox (backfill does), never reorders, never moves a message to DEAD for its age.
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { slices, type AirportConfig, type Config, type Slices } from '../core/config.ts';
import { LOCKS, type Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import { readBodies } from './inbox.ts';
import { myRows, pgOne, pgRun } from '../db/statement.ts';
import * as Locks from '../sql/locks.ts';
import * as Probe from '../sql/probe.ts';
import * as Tx from '../sql/tx.ts';
import { withTimeout } from '../core/timeout.ts';
import type { Crash } from '../runtime/crash.ts';
import { countAfterCommit, metrics, reasonLabel, type AfterCommitCounts } from '../runtime/metrics.ts';
import type { Envelope } from '../sis/envelope.ts';
import { classify, describe, type Failure, type Service } from '../core/errors.ts';
import { decide, isExhausted, ownOutcome, probeTarget, RAW_MISSING } from './failures.ts';
import type { BatchDomain, DomainBatch, Handler, HandlerOutcome, HandlerRegistry, Mirror } from '../domain/handlers.ts';
import * as T from './transitions.ts';
import { TimeBudget } from '../core/budget.ts';
import { decodeMessage, LARGE_BODY, type Decoded } from './decoding.ts';
import type { Decoder } from './decoder.ts';
import { releaseMemory } from '../runtime/gc.ts';

export interface PumpDeps {
  /** Kysely on the pump's dedicated connection (leader lock held on it; PIPELINE_LOCK taken here). */
  session: Db;
  inbox: Inbox;
  registry: HandlerRegistry;
  mirror: Mirror;
  clock: Clock;
  /** apply-batch, identity day boundary, I/O timeout. */
  pump: Slices['pump'];
  airport: AirportConfig;
  failures: Slices['failures'];
  log: Logger;
  /** Crash points of the crash-recovery tests (lib/runtime/crash.ts); none in production. */
  crash?: Crash;
  /**
   * The decode worker (lib/app/composition.ts buildDecoder): XML parse + decode off the event
   * loop, the next batch's decoded while this one's business transaction runs, and the
   * per-message budget. Without it (tests that step through the queue), decoding runs inline
   * and has no budget.
   */
  decoder?: Decoder;
  /** Benchmarks: wall milliseconds per step of applyBatch, added up. */
  timings?: Record<string, number>;
  /**
   * A second connection (a pool) for the terminal statement: with it, drain runs a batch's mirror
   * and terminal steps while the next batch's business step does (see Tail). Without it (tests
   * that step through the queue, tools), every step of a batch ends before the next batch starts.
   */
  terminalDb?: Db;
}

/** The config slices a pump reads (workers/pump.ts, tests and benchmarks build PumpDeps with this). */
export const pumpSettings = (config: Config) => {
  const s = slices(config);
  return { pump: s.pump, airport: s.airport, failures: s.failures };
};

export type TickResult = { kind: 'idle' } | { kind: 'wait'; until: Date; msgId: number } | { kind: 'processed'; msgId: number; state: string };

type Done = { msgId: number; state: string };
type BatchResult = { kind: 'idle' } | { kind: 'wait'; until: Date; msgId: number } | { kind: 'done'; done: Done[]; retrySmaller?: number };

/** Every LOCK_SLICE_MS a drain releases and re-takes PIPELINE_LOCK when another session waits for it (lets the history purge in). */
const LOCK_SLICE_MS = 1_000;
/** While the head is held for INFRA, the failed service is probed this often; work resumes when it answers. */
const PROBE_EVERY_MS = 1_000;

/** Take PIPELINE_LOCK; whatever the domains kept from earlier batches is forgotten (the purge may have run meanwhile). */
const lock = async (deps: PumpDeps) => {
  await pgRun(deps.session, Locks.lock, LOCKS.PIPELINE);
  deps.registry.resetDomains();
};
const unlock = (deps: PumpDeps) => pgRun(deps.session, Locks.unlock, LOCKS.PIPELINE).catch(() => {});
/** Is another session (the history purge) waiting for PIPELINE_LOCK? */
const lockWanted = async (deps: PumpDeps) => (await pgOne(deps.session, Locks.lockWanted, LOCKS.PIPELINE))!.w;

/** Apply batches until none is ready, the budget is spent or `shouldStop` says so. */
export async function drain(deps: PumpDeps, budgetMs: number, shouldStop: () => boolean = () => false): Promise<{ processed: number; next: 'now' | 'idle' | Date }> {
  const budget = new TimeBudget(budgetMs);
  const maxBatch = deps.pump.applyBatch;
  let batchSize = maxBatch;
  let processed = 0;
  await lock(deps);
  let lockSlice = new TimeBudget(LOCK_SLICE_MS);
  // the next batch, read and decoded ahead (never applied ahead): lives for this drain only
  const ahead: Ahead = { next: null };
  // the last batch's mirror and terminal steps, still running (with deps.terminalDb): settled before any exit
  const tail: Tails = { pending: null };
  const count = (xs: Done[]) => (processed += xs.filter((entry) => entry.state !== 'FAILED').length);
  const exit = async (next: 'now' | 'idle' | Date) => {
    count(await settle(deps, tail));
    return { processed, next };
  };
  try {
    while (!shouldStop()) {
      if (budget.spent()) return await exit('now');
      if (lockSlice.spent()) {
        // let a waiting history purge in (what the domains kept is then forgotten)
        if (await lockWanted(deps)) {
          count(await settle(deps, tail));
          await unlock(deps);
          await lock(deps);
        }
        lockSlice = new TimeBudget(LOCK_SLICE_MS);
      }
      const result = await applyBatch(deps, batchSize, ahead, tail);
      if (result.kind === 'idle') return await exit('idle');
      if (result.kind === 'wait') return await exit(result.until);
      count(result.done);
      batchSize = result.retrySmaller ?? maxBatch;
    }
    return await exit('now');
  } finally {
    // never leave a mirror step writing Redis once PIPELINE_LOCK is released
    await tail.pending?.result;
    await unlock(deps);
  }
}

/** One batch of one message (the head): for tests and tools that step through the queue. */
export async function tick(deps: PumpDeps): Promise<TickResult> {
  await lock(deps);
  try {
    const result = await applyBatch(deps, 1);
    if (result.kind !== 'done') return result;
    return { kind: 'processed', ...(result.done[0] ?? { msgId: 0, state: 'FAILED' }) };
  } finally {
    await unlock(deps);
  }
}

/** A message of the batch as its log lines and its failure record know it. */
interface MessageRef {
  h: T.HeadRow;
  /** Fields on every log line of this message (msgId, kind, flid); the child logger is made only when a line is written (logOf). */
  logFields: Record<string, unknown>;
  kind: string | null;
  /** The identity key this message binds when it commits (null: bound already, or no envelope). */
  identityToBind: string | null;
}

/** A batch domain and the message's command for it. */
interface DomainWork {
  domain: BatchDomain<unknown>;
  cmd: unknown;
}

/** What is to be done with a message of the batch (decided by `prepare` from its decoding). */
type Todo =
  /** Its business step committed before (a crash after it): mirror its flights (`work`: which ones; null: none) and make it terminal. */
  | { do: 'recover'; work: DomainWork | null }
  /** Its outcome is known without a business effect (its own failure, unsupported). */
  | { do: 'outcome'; state: T.TerminalState; reason: string }
  /** Applied by a transaction handler, in a savepoint of its own. */
  | { do: 'tx'; handler: Handler }
  /** Applied by its batch domain. */
  | { do: 'apply'; work: DomainWork };

interface Member extends MessageRef {
  env?: Envelope;
  todo: Todo;
  /** A batch of its own (a snapshot). */
  alone: boolean;
}

/** The message that ended the batch for a retryable reason: it becomes the next head, FAILED. */
interface Cut {
  ref: MessageRef;
  failure: Failure;
}

const workOf = (t: Todo): DomainWork | null => (t.do === 'apply' || t.do === 'recover' ? t.work : null);

/**
 * The batch after the current one, read and decoded while the current one's business
 * transaction runs. Used only for the messages that the next batch's own heads read (authoritative:
 * state, attempts, applied_state, identity) lists at the same positions from the same first
 * msg_id; anything else (a replay that moved the head, a batch cut short) discards it. Decoding is
 * a pure function of the body, which the inbox never changes for a msg_id.
 */
interface Ahead {
  next: { ids: number[]; results: Promise<Map<number, Body>> } | null;
}

/** A message's body and what decoding it gave ('missing': no inbox row). Absent from a map: not decoded yet. */
type Body = { body: string; dec: Decoded } | 'missing';

/** applyBatch, PIPELINE_LOCK held by the caller: its steps in order (the header of this file). */
async function applyBatch(deps: PumpDeps, limit: number, ahead?: Ahead, tail?: Tails): Promise<BatchResult> {
  const lap = stopwatch(deps.timings);
  const chosen = await chooseBatch(deps, limit, ahead, new Set(tail?.pending?.applied.map((m) => m.h.msg_id)));
  lap('heads');
  if (chosen.kind !== 'batch') return chosen;
  const { heads, following } = chosen;
  const head = heads[0];
  const started = performance.now();
  let bodies: Map<number, Body>;
  try {
    bodies = await readAndDecode(deps, heads, ahead);
    lap('bodies+decode');
  } catch (err) {
    return done([await fail(deps, refOf(head), { cls: 'INFRA', service: 'mariadb', detail: `inbox read failed: ${describe(err)}` })]);
  }
  const prepared = prepareBatch(deps, heads, bodies);
  lap('prepare');
  const members = prepared.members;
  let cut = prepared.cut;
  if (members.length === 0) return done([await fail(deps, cut?.ref ?? refOf(head), cut?.failure ?? { cls: 'INTERNAL', detail: 'the head was not decoded' })]); // never expected: the head is always decoded
  // the next batch, if this one takes every message it read: read and decoded while this one commits
  if (ahead && deps.decoder && !cut && members.length === heads.length && following.length > 0) readAhead(deps, ahead, following);
  let biz: Business;
  try {
    // the batch before, if its mirror step still runs: this one commits only once it succeeded
    const pending = tail?.pending;
    biz = await business(deps, members, pending ? () => mirrored(pending) : undefined);
    lap('business');
  } catch (err) {
    if (err instanceof MirrorBehind) return done(await settle(deps, tail!)); // rolled back: the batch before failed its mirror step
    if (members.length > 1) {
      deps.log.warn({ err: describe(err), batch: members.length, from: head.msg_id }, 'batch rolled back; trying again smaller');
      return { kind: 'done', done: [], retrySmaller: Math.max(1, Math.floor(members.length / 2)) };
    }
    return done([await fail(deps, members[0], classify(err, 'handler', 'postgres'))]);
  }
  const applied = members.slice(0, biz.count);
  cut = biz.cut ?? cut;
  for (const counts of biz.counts) countAfterCommit(counts);
  // the batch before: its terminal step ends (it ran while this one's business step did)
  const out: Done[] = tail ? await settle(deps, tail) : [];
  if (applied.length > 0) {
    deps.crash?.('pump.after-business-commit');
    const large = members.length === 1 && isLarge(bodies.get(head.msg_id));
    if (tail && deps.terminalDb && !cut && !large) {
      // the mirror and terminal steps run while the next batch is chosen, read and applied
      tail.pending = startTail(deps, deps.terminalDb, applied, biz, started);
      return done(out);
    }
    try {
      await deps.mirror.sync(biz.mirror, biz.known);
      lap('mirror');
    } catch (err) {
      return done([...out, await fail(deps, applied[0], mirrorFailure(err))]);
    }
    deps.crash?.('pump.before-terminal');
    out.push(...(await terminal(deps, deps.session, applied, started)));
    lap('terminal');
    // a large message (a big snapshot) leaves garbage of several times its live data: collected and given back now
    if (large) releaseMemory();
  }
  if (cut) out.push(await fail(deps, cut.ref, cut.failure));
  return { kind: 'done', done: out };
}

const done = (xs: Done[]): BatchResult => ({ kind: 'done', done: xs });

const mirrorFailure = (err: unknown): Failure => ({ cls: 'INFRA', service: 'redis', detail: `mirror step (Redis) failed after the business commit: ${describe(err)}` });

/**
 * A batch whose business step committed, its mirror step (Redis) and then its terminal statement
 * (on deps.terminalDb) running while the next batch's business step does (drain with a second
 * connection). INV-10 holds: the terminal statement starts only after the mirror step succeeded.
 * The next batch's business transaction commits only after this mirror step succeeded (or rolls
 * back: MirrorBehind), so a Redis failure stops the pump where it stopped before; the next
 * batch's mirror step starts only after this terminal statement ended (settle), so Redis is
 * written in batch order. A crash anywhere leaves committed, non-terminal outcomes: recovered.
 */
interface Tail {
  applied: Member[];
  /** The mirror step: null when it succeeded, or its error (never rejects). */
  mirrored: Promise<unknown>;
  /** The whole tail (never rejects). */
  result: Promise<{ done: Done[] } | { mirrorError: unknown } | { terminalError: unknown }>;
}

/** The tail still running in a drain (at most one). */
interface Tails {
  pending: Tail | null;
}

/** The next batch's business transaction rolls back: the mirror step of the batch before failed. */
class MirrorBehind extends Error {}

function startTail(deps: PumpDeps, db: Db, applied: Member[], biz: Business, started: number): Tail {
  const t0 = performance.now();
  const sync = deps.mirror.sync(biz.mirror, biz.known);
  const mirrored = sync.then(
    () => null,
    (e: unknown) => e ?? new Error('mirror step failed'),
  );
  const result = sync.then(
    async () => {
      const t1 = performance.now();
      if (deps.timings) deps.timings.mirror = (deps.timings.mirror ?? 0) + (t1 - t0);
      try {
        deps.crash?.('pump.before-terminal');
        const done = await terminal(deps, db, applied, started);
        if (deps.timings) deps.timings.terminal = (deps.timings.terminal ?? 0) + (performance.now() - t1);
        return { done };
      } catch (terminalError) {
        return { terminalError };
      }
    },
    (mirrorError: unknown) => ({ mirrorError }),
  );
  return { applied, mirrored, result };
}

/** Called before the next batch's business transaction commits. */
async function mirrored(t: Tail): Promise<void> {
  const e = await t.mirrored;
  if (e !== null) throw new MirrorBehind(describe(e));
}

/** Wait for the tail to end: its outcomes, or its mirror failure recorded on its first message (the head waits); a terminal failure is thrown. */
async function settle(deps: PumpDeps, tails: Tails): Promise<Done[]> {
  const t = tails.pending;
  if (!t) return [];
  tails.pending = null;
  const r = await t.result;
  if ('mirrorError' in r) return [await fail(deps, t.applied[0], mirrorFailure(r.mirrorError))];
  if ('terminalError' in r) throw r.terminalError;
  return r.done;
}

/** chooseBatch: the head and the open messages after it (with a decode worker, also the next batch's candidates), or why there is no batch now. */
async function chooseBatch(
  deps: PumpDeps,
  limit: number,
  ahead: Ahead | undefined,
  /** The batch before, whose terminal step may still be running: not open for this one. */
  exclude: ReadonlySet<number>,
): Promise<{ kind: 'batch'; heads: T.HeadRow[]; following: T.HeadRow[] } | Exclude<BatchResult, { retrySmaller: number }>> {
  const rows = (await T.heads(deps.session, (ahead && deps.decoder ? limit * 2 : limit) + exclude.size)).filter((r) => !exclude.has(r.msg_id));
  const heads = rows.slice(0, limit);
  const head = heads[0];
  if (!head) return { kind: 'idle' };
  if (head.state === 'FAILED') {
    if (isExhausted({ attempts: head.attempts, errorClass: head.error_class }, deps.failures)) {
      const reason = `EXHAUSTED(${head.error_class}): attempts used up`;
      await T.markTerminal(deps.session, head.msg_id, 'DEAD', reason, deps.clock.now(), head.kind);
      T.countTerminal('DEAD', reason, deps.registry.metricKindOf(head.kind));
      return done([{ msgId: head.msg_id, state: 'DEAD' }]);
    }
    const now = deps.clock.now();
    if (head.next_attempt_at && head.next_attempt_at > now) {
      const probe = probeOf(deps, probeTarget(head));
      if (!probe) return { kind: 'wait', until: head.next_attempt_at, msgId: head.msg_id };
      if (!(await answers(probe, deps))) return { kind: 'wait', until: new Date(Math.min(head.next_attempt_at.getTime(), now.getTime() + PROBE_EVERY_MS)), msgId: head.msg_id };
    }
  }
  return { kind: 'batch', heads, following: rows.slice(limit) };
}

/** The terminal step: every applied outcome becomes terminal (one statement); logged and counted per message. */
async function terminal(deps: PumpDeps, db: Db, applied: Member[], started: number): Promise<Done[]> {
  const became = await T.markAppliedTerminal(
    db,
    applied.map((member) => member.h.msg_id),
    deps.clock.now(),
  );
  const byId = new Map(applied.map((member) => [member.h.msg_id, member]));
  const perMessage = (performance.now() - started) / 1000 / applied.length;
  const out: Done[] = [];
  for (const t of became) {
    const member = byId.get(t.msg_id)!;
    deps.log[t.state === 'DEAD' ? 'warn' : 'info'](
      { ...member.logFields, state: t.state, ...(t.reason ? { reason: t.reason } : {}) },
      t.state === 'SUCCEEDED' ? 'message applied' : `message ${t.state.toLowerCase()}`,
    );
    metrics.processingSeconds.observe({ kind: deps.registry.metricKindOf(t.kind) }, perMessage);
    T.countTerminal(t.state, t.reason, deps.registry.metricKindOf(t.kind));
    // A DEAD outcome of the batch (MALFORMED / PROTOCOL, raw-missing included) is a failed attempt of its class.
    if (t.state === 'DEAD') metrics.failures.inc({ class: reasonLabel(t.reason) });
    out.push({ msgId: t.msg_id, state: t.state });
  }
  return out;
}

const loggers = new WeakMap<MessageRef, Logger>();
/** The message's child logger (its logFields on every line), made on first use. */
function logOf(d: PumpDeps, m: MessageRef): Logger {
  let l = loggers.get(m);
  if (!l) loggers.set(m, (l = d.log.child(m.logFields)));
  return l;
}

/** Adds the time since the previous lap to `timings[name]` (benchmarks); a no-op without timings. */
function stopwatch(timings: Record<string, number> | undefined): (name: string) => void {
  if (!timings) return () => {};
  let t = performance.now();
  return (name) => {
    const now = performance.now();
    timings[name] = (timings[name] ?? 0) + (now - t);
    t = now;
  };
}

function refOf(h: T.HeadRow): MessageRef {
  return { h, logFields: { msgId: h.msg_id }, kind: h.kind, identityToBind: null };
}

/** The read and decode steps for the batch: from the batch read ahead where it still holds, the rest read and decoded now. */
async function readAndDecode(d: PumpDeps, heads: T.HeadRow[], ahead: Ahead | undefined): Promise<Map<number, Body>> {
  const out = new Map<number, Body>();
  const pre = ahead?.next;
  if (ahead) ahead.next = null;
  if (pre && pre.ids[0] === heads[0].msg_id) {
    const got = await pre.results; // this batch's own read, made earlier: its failure is the inbox read's failure
    for (let i = 0; i < heads.length && heads[i].msg_id === pre.ids[i]; i++) {
      const b = got.get(heads[i].msg_id);
      if (b === undefined || b === 'missing') break; // not decoded ahead, or a row that may have been purged meanwhile: read now
      out.set(heads[i].msg_id, b);
    }
  }
  const last = [...out.values()].at(-1);
  if (last && last !== 'missing' && last.dec.ok && last.dec.alone) return out; // a snapshot: nothing after it is in this batch
  const rest = heads.slice(out.size).map((row) => row.msg_id);
  if (rest.length === 0) return out;
  const bodies = await withTimeout(d.pump.timeoutMs, 'inbox read', readBodies(d.inbox, rest));
  for (const [id, b] of await decodeBodies(d, rest, bodies)) out.set(id, b);
  return out;
}

/** Start reading and decoding the batch after this one (a failure is the next batch's inbox read failure, if it is still that batch). */
function readAhead(d: PumpDeps, ahead: Ahead, rows: T.HeadRow[]): void {
  const ids = rows.map((row) => row.msg_id);
  const results = withTimeout(d.pump.timeoutMs, 'inbox read', readBodies(d.inbox, ids)).then((bodies) => decodeBodies(d, ids, bodies));
  results.catch(() => {});
  ahead.next = { ids, results };
}

/** Decode these bodies in order (in the decode worker when there is one), up to and including the first message that is a batch of its own. */
async function decodeBodies(d: PumpDeps, ids: number[], bodies: Map<number, string>): Promise<Map<number, Body>> {
  const out = new Map<number, Body>();
  const present = ids.filter((id) => bodies.has(id));
  const results = d.decoder ? await d.decoder.decode(present.map((id) => bodies.get(id)!)) : null;
  let k = 0;
  for (const id of ids) {
    const body = bodies.get(id);
    if (body === undefined) {
      out.set(id, 'missing');
      continue;
    }
    const r = results ? results[k++] : 'inline';
    if (r === 'later') break;
    const dec = r === 'inline' ? decodeMessage(d.registry, decodeSettings(d), body) : r;
    out.set(id, { body, dec });
    if (dec.ok && dec.alone) break;
  }
  return out;
}

const isLarge = (b: Body | undefined) => b !== undefined && b !== 'missing' && b.body.length > LARGE_BODY;

const decodeSettings = (d: PumpDeps) => ({ airport: d.airport, includeDayBoundary: d.pump.includeDayBoundary });

/** The batch's members in order, up to the first that ends it: a retryable failure (the Cut), or a batch of its own. */
function prepareBatch(deps: PumpDeps, heads: T.HeadRow[], bodies: Map<number, Body>): { members: Member[]; cut: Cut | null } {
  const members: Member[] = [];
  for (const row of heads) {
    const body = bodies.get(row.msg_id);
    if (body === undefined) break; // not decoded: it follows a snapshot, a later batch takes it
    const p = prepare(deps, row, body);
    if ('failure' in p) return { members, cut: p };
    if (p.alone && members.length > 0) break;
    members.push(p);
    if (p.alone) break;
  }
  return { members, cut: null };
}

/** The decode step's verdict for one message (pure): what is to be done with it, or the retryable failure that ends the batch before it. */
function prepare(d: PumpDeps, h: T.HeadRow, b: Body): Member | Cut {
  const ref = refOf(h);
  const outcome = (m: MessageRef, state: T.TerminalState, reason: string): Member => ({ ...m, todo: { do: 'outcome', state, reason }, alone: false });
  if (b === 'missing') return outcome(ref, 'DEAD', RAW_MISSING);
  let dec = b.dec;
  if (!dec.ok) {
    const own = ownOutcome(dec.failure);
    return own ? outcome(ref, own.state, own.reason) : { ref, failure: dec.failure };
  }
  const entry = d.registry.entry(dec.env.type, dec.env.styp);
  // the worker decodes with buildRegistry's entries; a pump with other entries (tests) decodes itself
  if ((entry?.kind === 'tx') !== (dec.entry === 'tx') || (entry?.kind === 'batch') !== (dec.entry === 'batch')) {
    const again = decodeMessage(d.registry, decodeSettings(d), b.body);
    if (!again.ok) return prepare(d, h, { body: b.body, dec: again });
    dec = again;
  }
  const known: MessageRef = {
    h,
    kind: dec.kind,
    logFields: { msgId: h.msg_id, kind: dec.kind, ...(dec.flid ? { flid: dec.flid } : {}) },
    identityToBind: h.identity_key ? null : dec.identity,
  };
  const member = (todo: Todo, alone = false): Member => ({ ...known, env: dec.env, todo, alone });
  if (!entry) return member({ do: 'outcome', state: 'SKIPPED', reason: 'unsupported' });
  if (entry.kind === 'tx') return member({ do: 'tx', handler: entry.handler });
  if (dec.failure) {
    if (h.applied_state) return member({ do: 'recover', work: null });
    const own = ownOutcome(dec.failure);
    return own ? member({ do: 'outcome', state: own.state, reason: own.reason }) : { ref: known, failure: dec.failure };
  }
  const work = { domain: entry.domain, cmd: dec.cmd };
  if (h.applied_state) return member({ do: 'recover', work });
  return member({ do: 'apply', work }, entry.domain.alone(dec.cmd));
}

interface Business {
  /** Members that commit (a prefix of the batch). */
  count: number;
  /** The member that ended the batch for a retryable reason (not committed). */
  cut: Cut | null;
  /** Every flight the committed members address. */
  mirror: string[];
  /** Metrics to count now that the business transaction committed (once per message). */
  counts: AfterCommitCounts[];
  /** Committed states of flights the batch loaded (the mirror step need not read them back). */
  known: ReadonlyMap<string, unknown>;
  batches: DomainBatch<unknown>[];
}

/** Thrown to roll the business transaction back when no member is left to commit. */
class NothingToCommit extends Error {}

/** The business step: one transaction for the batch (`beforeCommit` runs last inside it; throwing rolls it back). */
async function business(deps: PumpDeps, members: Member[], beforeCommit?: () => Promise<void>): Promise<Business> {
  const now = deps.clock.now();
  let cut: Cut | null = null;
  try {
    return await deps.session
      .transaction()
      .execute(async (tx) => {
        // identity (INV-6): who owns the batch's keys already; within the batch, the first message of a key
        const owners = await T.identityOwners(
          tx,
          members.flatMap((member) => (member.identityToBind ? [member.identityToBind] : [])),
        );
        const ownerOf = (member: Member): number | undefined => {
          if (!member.identityToBind) return undefined;
          if (!owners.has(member.identityToBind)) owners.set(member.identityToBind, member.h.msg_id);
          return owners.get(member.identityToBind);
        };
        const batches = await openDomains(deps, tx, members, now);
        const outcomes: T.AppliedOutcome[] = [];
        const mirror = new Set<string>();
        const wake = new Set<string>();
        const counts: AfterCommitCounts[] = [];
        let count = 0;
        for (const member of members) {
          const id = member.h.msg_id;
          const owner = ownerOf(member);
          const applied: Applied = owner !== undefined && owner !== id ? { state: 'SKIPPED', reason: `duplicate-of:${owner}` } : await applyOne(deps, tx, member, batches, now);
          if (applied.state === 'RETRY') {
            cut = { ref: member, failure: applied.failure };
            break;
          }
          outcomes.push({ msgId: id, state: applied.state, reason: applied.reason, kind: member.kind, identityKey: owner === id ? member.identityToBind : null });
          for (const flid of applied.mirror ?? []) mirror.add(flid);
          for (const task of applied.wake ?? []) wake.add(task);
          if (applied.counts) counts.push(applied.counts);
          count++;
        }
        if (count === 0) throw new NothingToCommit();
        const known = new Map<string, unknown>();
        for (const batch of batches.values()) {
          const written = await batch.write();
          for (const task of written.wake) wake.add(task);
          for (const [flid, state] of written.states ?? []) known.set(flid, state);
        }
        await T.recordApplied(tx, outcomes, now, wake);
        await beforeCommit?.();
        return { count, cut, mirror: [...mirror], counts, known, batches: [...batches.values()] };
      })
      .then((result) => {
        for (const batch of result.batches) batch.committed?.();
        return result;
      });
  } catch (err) {
    deps.registry.resetDomains();
    if (err instanceof NothingToCommit) return { count: 0, cut, mirror: [], counts: [], known: new Map(), batches: [] };
    throw err;
  }
}

/** Each batch domain of the batch opened once, with everything its messages address loaded up front. */
async function openDomains(deps: PumpDeps, tx: Parameters<Handler>[0]['tx'], members: Member[], now: Date): Promise<Map<BatchDomain<unknown>, DomainBatch<unknown>>> {
  const byDomain = new Map<BatchDomain<unknown>, { cmds: unknown[]; recovered: number[] }>();
  for (const member of members) {
    const work = workOf(member.todo);
    if (!work) continue;
    let mine = byDomain.get(work.domain);
    if (!mine) byDomain.set(work.domain, (mine = { cmds: [], recovered: [] }));
    mine.cmds.push(work.cmd);
    if (member.todo.do === 'recover') mine.recovered.push(member.h.msg_id);
  }
  const batches = new Map<BatchDomain<unknown>, DomainBatch<unknown>>();
  for (const [domain, mine] of byDomain) {
    const batch = domain.open({ tx, now, airport: deps.airport, log: deps.log });
    await batch.preload(mine.cmds, mine.recovered);
    batches.set(domain, batch);
  }
  return batches;
}

type Applied = { state: T.TerminalState; reason: string | null; mirror?: string[]; wake?: string[]; counts?: AfterCommitCounts } | { state: 'RETRY'; failure: Failure };

/** One message inside the business transaction. */
async function applyOne(deps: PumpDeps, tx: Parameters<Handler>[0]['tx'], member: Member, batches: Map<BatchDomain<unknown>, DomainBatch<unknown>>, now: Date): Promise<Applied> {
  const todo = member.todo;
  switch (todo.do) {
    case 'recover':
      // applied before (crash after its business commit): its flights, from the current state
      return {
        state: member.h.applied_state!,
        reason: member.h.applied_reason,
        mirror: todo.work ? await batches.get(todo.work.domain)!.addressed({ msgId: member.h.msg_id, cmd: todo.work.cmd }) : [],
      };
    case 'outcome':
      return { state: todo.state, reason: todo.reason };
    case 'apply':
      try {
        return fromHandler(
          await batches.get(todo.work.domain)!.apply({
            msgId: member.h.msg_id,
            env: member.env!,
            cmd: todo.work.cmd,
            get log() {
              return logOf(deps, member);
            },
          }),
        );
      } catch (err) {
        return fromError(err);
      }
    case 'tx': {
      // a savepoint per message: a skip or a failure takes back its writes and nothing else
      await pgRun(tx, Tx.savepoint);
      let result: Applied;
      try {
        result = fromHandler(
          await todo.handler({
            tx,
            msgId: member.h.msg_id,
            env: member.env!,
            now,
            airport: deps.airport,
            get log() {
              return logOf(deps, member);
            },
          }),
        );
      } catch (err) {
        result = fromError(err);
      }
      await pgRun(tx, result.state === 'SUCCEEDED' ? Tx.releaseSavepoint : Tx.rollbackToSavepoint);
      return result;
    }
  }
}

function fromHandler(o: HandlerOutcome): Applied {
  if (o.outcome === 'skipped') return { state: 'SKIPPED', reason: o.reason, mirror: o.mirror };
  return { state: 'SUCCEEDED', reason: null, mirror: o.mirror, wake: o.wake, counts: o.counts };
}

/** A failure inside the business transaction: the message's own (its outcome), or retryable (ends the batch). */
function fromError(e: unknown): Applied {
  const f = classify(e, 'handler', 'postgres');
  const own = ownOutcome(f);
  return own ? { state: own.state, reason: own.reason } : { state: 'RETRY', failure: f };
}

/** Record a failure of a message (lib/pipeline/failures.ts decides FAILED or DEAD on the committed attempt count). */
async function fail(d: PumpDeps, m: MessageRef, f: Failure): Promise<Done> {
  const decision = await T.recordFailure(d.session, m.h.msg_id, f, (h) => decide(f, h, d.failures), d.clock.now(), m.kind, m.identityToBind);
  if (decision.next === 'DEAD') {
    T.countTerminal('DEAD', decision.reason, d.registry.metricKindOf(m.kind));
    logOf(d, m).warn({ state: 'DEAD', reason: decision.reason }, 'message dead');
  } else logOf(d, m)[f.cls === 'INFRA' ? 'warn' : 'error']({ state: 'FAILED', errorClass: f.cls, reason: decision.reason, retryInMs: decision.retryInMs }, 'message failed');
  return { msgId: m.h.msg_id, state: decision.next };
}

/** How to ask a service whether it answers (null: no service to ask, or the mirror has no probe). */
function probeOf(deps: PumpDeps, service: Service | null): (() => Promise<unknown>) | null {
  switch (service) {
    case 'mariadb':
      return () => myRows(deps.inbox, Probe.mySelect1);
    case 'redis':
      return deps.mirror.probe ? () => deps.mirror.probe!() : null;
    case 'postgres':
      return () => pgRun(deps.session, Probe.select1);
    case null:
      return null;
  }
}

async function answers(probe: () => Promise<unknown>, d: PumpDeps): Promise<boolean> {
  try {
    await withTimeout(Math.min(d.pump.timeoutMs, PROBE_EVERY_MS), 'probe', probe());
    return true;
  } catch {
    return false;
  }
}
