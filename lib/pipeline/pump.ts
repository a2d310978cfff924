// The pump: applies the head of queue and the messages after it, strictly in inbox order
// (INV-2), a batch of up to K consecutive messages at a time (msgx.pipeline.apply-batch).
//
//   drain: PIPELINE_LOCK held across batches (released within LOCK_SLICE_MS when the purge waits), batches
//          until none is ready; after an unexpected database error the batch is tried again
//          smaller, down to one message.
//   applyBatch(K), entirely under PIPELINE_LOCK:
//     0. heads: the head and the open messages after it (up to K, cut before a FAILED one);
//        a FAILED head whose attempts are used up → DEAD(EXHAUSTED); one not yet due → wait
//        (INFRA of a service that can be probed: probe it every PROBE_EVERY_MS, retry as soon as it answers)
//     1. raw bodies: one inbox query                                   read error → FAILED(INFRA)
//     2. decode, pure, in order, in the decode worker (lib/pipeline/decoder.ts) under the
//        per-message budget (over it: MALFORMED): MALFORMED / PROTOCOL / unsupported are outcomes
//        of their own message; a retryable decode failure (CODEC_ERROR) ends the batch before that
//        message; a snapshot is a batch of its own.
//        Steps 1–2 of the NEXT batch run while steps 3–5 of this one do (read ahead, never
//        applied ahead: the next batch uses them only where its own heads read lists the same
//        messages from the same head; see Ahead)
//     3. ONE business transaction: the owners of the batch's identities (one read), every
//        message applied in order (batch domains in memory, transaction handlers in a savepoint
//        each), the net writes, and every message's outcome (APPLIED_STATE) + identity binding +
//        dispatcher wake-ups (one statement). A failure that is the message's own (MALFORMED, PROTOCOL, duplicate,
//        no-flight, …) is its outcome and the batch goes on; a retryable one (INFRA, INTERNAL)
//        ends the batch before that message — the ones before it commit.
//     4. ONE Redis step for every flight the batch addresses, changed or not   → FAILED(INFRA)
//     5. ONE statement: every message's outcome becomes its terminal state + backfill intent +
//        backfill wake-up (INV-10: nothing is terminal before its business commit and Redis)
//   A message found with APPLIED_STATE set (a crash after step 3) is not applied again: its
//   flights are rewritten in Redis from Postgres (step 4) and its outcome made terminal (step 5).
//
// Failures go through lib/pipeline/failures.ts (one decision table). The pump never writes the
// inbox (backfill does), never reorders, never moves a message to DEAD for its age.
import type { Logger } from 'pino';
import type { Clock } from '../core/clock.ts';
import { slices, type AirportConfig, type Config, type Slices } from '../core/config.ts';
import { LOCKS, type Db } from '../db/postgres.ts';
import type { Inbox } from '../db/mysql.ts';
import { readBodies } from './inbox.ts';
import { myRows, pgOne, pgRun } from '../db/statement.ts';
import * as Locks from '../sql/locks.ts';
import * as Probe from '../sql/probe.ts';
import * as ProcState from '../sql/proc-state.ts';
import { withTimeout } from '../core/timeout.ts';
import type { Crash } from '../runtime/crash.ts';
import { countAfterCommit, metrics, reasonLabel, type AfterCommitCounts } from '../runtime/metrics.ts';
import type { Envelope } from '../sis/envelope.ts';
import { classify, describe, PipelineError, type Failure } from '../core/errors.ts';
import { decide, isExhausted, RAW_MISSING } from './failures.ts';
import type { BatchDomain, DomainBatch, Handler, HandlerOutcome, HandlerRegistry, Mirror } from '../domain/handlers.ts';
import * as T from './transitions.ts';
import { TimeBudget } from '../core/budget.ts';
import { decodeMessage, type Decoded } from './decoding.ts';
import type { Decoder } from './decoder.ts';

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
  try {
    while (!shouldStop()) {
      if (budget.spent()) return { processed, next: 'now' };
      if (lockSlice.spent()) {
        // let a waiting history purge in (what the domains kept is then forgotten)
        if (await lockWanted(deps)) {
          await unlock(deps);
          await lock(deps);
        }
        lockSlice = new TimeBudget(LOCK_SLICE_MS);
      }
      const result = await applyBatch(deps, batchSize, ahead);
      if (result.kind === 'idle') return { processed, next: 'idle' };
      if (result.kind === 'wait') return { processed, next: result.until };
      processed += result.done.filter((entry) => entry.state !== 'FAILED').length;
      batchSize = result.retrySmaller ?? maxBatch;
    }
    return { processed, next: 'now' };
  } finally {
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

/** A message of the batch and what is to be done with it. */
interface Member {
  h: T.HeadRow;
  /** What every log line of this message carries (msgId, kind, flid); the child logger is made only when a line is written (logOf). */
  bind: Record<string, unknown>;
  kind: string | null;
  env?: Envelope;
  /** Identity to bind (null: bound already, or no envelope). */
  bindKey: string | null;
  todo:
    | { do: 'finish'; domain?: BatchDomain<unknown>; cmd?: unknown } // business committed before: Redis + terminal
    | { do: 'outcome'; state: T.TerminalState; reason: string } // decided without a business effect
    | { do: 'tx'; handler: Handler }
    | { do: 'domain'; domain: BatchDomain<unknown>; cmd: unknown }
    | { do: 'retry'; failure: Failure }; // retryable: ends the batch before it
  alone: boolean;
}

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

/** applyBatch, PIPELINE_LOCK held by the caller. */
async function applyBatch(deps: PumpDeps, limit: number, ahead?: Ahead): Promise<BatchResult> {
  // 0. the head and the messages after it (and, with a decode worker, the next batch's candidates)
  const lap = stopwatch(deps.timings);
  const rows = await T.heads(deps.session, ahead && deps.decoder ? limit * 2 : limit);
  const heads = rows.slice(0, limit);
  const following = rows.slice(limit);
  lap('heads');
  const head = heads[0];
  if (!head) return { kind: 'idle' };
  if (head.state === 'FAILED') {
    if (isExhausted({ attempts: head.attempts, errorClass: head.error_class }, deps.failures)) {
      const reason = `EXHAUSTED(${head.error_class}): attempts used up`;
      await T.markTerminal(deps.session, head.msg_id, 'DEAD', reason, deps.clock.now(), head.kind);
      T.countTerminal('DEAD', reason, deps.registry.metricKindOf(head.kind));
      return { kind: 'done', done: [{ msgId: head.msg_id, state: 'DEAD' }] };
    }
    const now = deps.clock.now();
    if (head.next_attempt_at && head.next_attempt_at > now) {
      const probe = head.error_class === 'INFRA' ? probeOf(deps, head) : null;
      if (!probe) return { kind: 'wait', until: head.next_attempt_at, msgId: head.msg_id };
      if (!(await answers(probe, deps))) return { kind: 'wait', until: new Date(Math.min(head.next_attempt_at.getTime(), now.getTime() + PROBE_EVERY_MS)), msgId: head.msg_id };
    }
  }
  const started = performance.now();
  // 1. raw bodies and 2. their decoding (read ahead by the batch before, or now)
  let bodies: Map<number, Body>;
  try {
    bodies = await bodiesOf(deps, heads, ahead);
    lap('bodies+decode');
  } catch (err) {
    return done([await fail(deps, memberOf(head), { cls: 'INFRA', detail: `inbox read failed: ${describe(err)}` })]);
  }
  // 2. in order; the batch ends before a retryable failure, and a snapshot is alone
  const members: Member[] = [];
  let cut: Member | null = null;
  for (const row of heads) {
    const body = bodies.get(row.msg_id);
    if (body === undefined) break; // not decoded: it follows a snapshot, a later batch takes it
    const member = prepare(deps, row, body);
    if (member.todo.do === 'retry') {
      cut = member;
      break;
    }
    if (member.alone && members.length > 0) break;
    members.push(member);
    if (member.alone) break;
  }
  lap('prepare');
  if (members.length === 0 && !cut) return done([await fail(deps, memberOf(head), { cls: 'INTERNAL', detail: 'the head was not decoded' })]); // never expected: the head is always decoded
  if (members.length === 0) return done([await fail(deps, cut!, (cut!.todo as { failure: Failure }).failure)]);
  // the next batch, if this one takes every message it read: read and decoded while this one commits
  if (ahead && deps.decoder && !cut && members.length === heads.length && following.length > 0) readAhead(deps, ahead, following);
  // 3. the business transaction
  let biz: Business;
  try {
    biz = await business(deps, members);
    lap('business');
  } catch (err) {
    if (members.length > 1) {
      deps.log.warn({ err: describe(err), batch: members.length, from: head.msg_id }, 'batch rolled back; trying again smaller');
      return { kind: 'done', done: [], retrySmaller: Math.max(1, Math.floor(members.length / 2)) };
    }
    return done([await fail(deps, members[0], classify(err, 'handler'))]);
  }
  const applied = members.slice(0, biz.count);
  if (biz.cut) cut = biz.cut;
  for (const counts of biz.counts) countAfterCommit(counts);
  const out: Done[] = [];
  if (applied.length > 0) {
    deps.crash?.('pump.after-business-commit');
    // 4. Redis in line with Postgres for every flight the batch addresses
    try {
      await deps.mirror.sync(biz.mirror, biz.known);
      lap('redis');
    } catch (err) {
      return done([await fail(deps, applied[0], { cls: 'INFRA', detail: `redis mirror failed after business commit: ${describe(err)}` })]);
    }
    // 5. terminal states + backfill intents + backfill wake-up
    deps.crash?.('pump.before-terminal');
    const finished = await T.markFinished(
      deps.session,
      applied.map((member) => member.h.msg_id),
      deps.clock.now(),
    );
    lap('terminal');
    const byId = new Map(applied.map((member) => [member.h.msg_id, member]));
    const perMessage = (performance.now() - started) / 1000 / applied.length;
    for (const fin of finished) {
      const member = byId.get(fin.msg_id)!;
      deps.log[fin.state === 'DEAD' ? 'warn' : 'info'](
        { ...member.bind, state: fin.state, ...(fin.reason ? { reason: fin.reason } : {}) },
        fin.state === 'SUCCEEDED' ? 'message applied' : `message ${fin.state.toLowerCase()}`,
      );
      metrics.processingSeconds.observe({ kind: deps.registry.metricKindOf(fin.kind) }, perMessage);
      T.countTerminal(fin.state, fin.reason, deps.registry.metricKindOf(fin.kind));
      // A DEAD outcome of the batch (MALFORMED / PROTOCOL, raw-missing included) is a failed attempt of its class.
      if (fin.state === 'DEAD') metrics.failures.inc({ class: reasonLabel(fin.reason) });
      out.push({ msgId: fin.msg_id, state: fin.state });
    }
  }
  // the message that ended the batch for a retryable reason is the next head, FAILED
  if (cut) out.push(await fail(deps, cut, (cut.todo as { failure: Failure }).failure));
  return { kind: 'done', done: out };
}

const done = (xs: Done[]): BatchResult => ({ kind: 'done', done: xs });

const loggers = new WeakMap<Member, Logger>();
/** The message's child logger (msgId, kind, flid on every line), made on first use. */
function logOf(d: PumpDeps, m: Member): Logger {
  let l = loggers.get(m);
  if (!l) loggers.set(m, (l = d.log.child(m.bind)));
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

function memberOf(h: T.HeadRow): Member {
  return { h, bind: { msgId: h.msg_id }, kind: h.kind, bindKey: null, todo: { do: 'finish' }, alone: false };
}

/** Steps 1 and 2 for the batch: from the batch read ahead where it still holds, the rest read and decoded now. */
async function bodiesOf(d: PumpDeps, heads: T.HeadRow[], ahead: Ahead | undefined): Promise<Map<number, Body>> {
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

const decodeSettings = (d: PumpDeps) => ({ airport: d.airport, includeDayBoundary: d.pump.includeDayBoundary });

/** Step 2 for one message (pure): its outcome, or what is to be done with it, from its decoding. */
function prepare(d: PumpDeps, h: T.HeadRow, b: Body): Member {
  const m = memberOf(h);
  const outcome = (state: T.TerminalState, reason: string): Member => ({ ...m, todo: { do: 'outcome', state, reason } });
  if (b === 'missing') return outcome('DEAD', RAW_MISSING);
  let dec = b.dec;
  if (!dec.ok) {
    const f = dec.failure;
    return f.cls === 'MALFORMED' || f.cls === 'PROTOCOL' ? outcome('DEAD', `${f.cls}: ${f.detail}`) : { ...m, todo: { do: 'retry', failure: f } };
  }
  const entry = d.registry.entry(dec.env.type, dec.env.styp);
  // the worker decodes with buildRegistry's entries; a pump with other entries (tests) decodes itself
  if ((entry?.kind === 'tx') !== (dec.entry === 'tx') || (entry?.kind === 'batch') !== (dec.entry === 'batch')) {
    const again = decodeMessage(d.registry, decodeSettings(d), b.body);
    if (!again.ok) return prepare(d, h, { body: b.body, dec: again });
    dec = again;
  }
  const base: Member = {
    ...m,
    kind: dec.kind,
    env: dec.env,
    bind: { msgId: h.msg_id, kind: dec.kind, ...(dec.flid ? { flid: dec.flid } : {}) },
    bindKey: h.identity_key ? null : dec.identity,
  };
  if (!entry) return { ...base, todo: { do: 'outcome', state: 'SKIPPED', reason: 'unsupported' } };
  if (entry.kind === 'tx') return { ...base, todo: { do: 'tx', handler: entry.handler } };
  if (dec.failure) {
    const f = dec.failure;
    if (h.applied_state) return { ...base, todo: { do: 'finish' } };
    if (f.cls === 'MALFORMED' || f.cls === 'PROTOCOL') return { ...base, todo: { do: 'outcome', state: 'DEAD', reason: `${f.cls}: ${f.detail}` } };
    return { ...base, todo: { do: 'retry', failure: f } };
  }
  const cmd = dec.cmd;
  if (h.applied_state) return { ...base, todo: { do: 'finish', domain: entry.domain, cmd } };
  return { ...base, todo: { do: 'domain', domain: entry.domain, cmd }, alone: entry.domain.alone(cmd) };
}

interface Business {
  /** Members that commit (a prefix of the batch). */
  count: number;
  /** The member that ended the batch for a retryable reason (not committed). */
  cut: Member | null;
  /** Every flight the committed members address. */
  mirror: string[];
  /** Metrics to count now that the business transaction committed (once per message). */
  counts: AfterCommitCounts[];
  /** Committed states of flights the batch loaded (the Redis step need not read them back). */
  known: ReadonlyMap<string, unknown>;
  batches: DomainBatch<unknown>[];
}

/** Thrown to roll the business transaction back when no member is left to commit. */
class NothingToCommit extends Error {}

/** Step 3: one business transaction for the batch. */
async function business(deps: PumpDeps, members: Member[]): Promise<Business> {
  const now = deps.clock.now();
  let cutResult: Member | null = null;
  try {
    return await deps.session
      .transaction()
      .execute(async (tx) => {
        // identity (INV-6): who owns the batch's keys already; within the batch, the first message of a key
        const owners = await T.identityOwners(
          tx,
          members.flatMap((member) => (member.bindKey ? [member.bindKey] : [])),
        );
        const ownerOf = (member: Member): number | undefined => {
          if (!member.bindKey) return undefined;
          if (!owners.has(member.bindKey)) owners.set(member.bindKey, member.h.msg_id);
          return owners.get(member.bindKey);
        };
        // batch domains: opened once, with everything their messages address loaded up front
        const batches = new Map<BatchDomain<unknown>, DomainBatch<unknown>>();
        for (const member of members) {
          const todo = member.todo;
          if ((todo.do === 'domain' || todo.do === 'finish') && todo.domain && !batches.has(todo.domain)) {
            const batch = todo.domain.open({ tx, now, airport: deps.airport, log: deps.log });
            const mine = members.filter((other) => (other.todo.do === 'domain' || other.todo.do === 'finish') && other.todo.domain === todo.domain);
            await batch.preload(
              mine.map((other) => (other.todo as { cmd: unknown }).cmd),
              mine.filter((other) => other.todo.do === 'finish').map((other) => other.h.msg_id),
            );
            batches.set(todo.domain, batch);
          }
        }
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
            cutResult = { ...member, todo: { do: 'retry', failure: applied.failure } };
            break;
          }
          outcomes.push({ msgId: id, state: applied.state, reason: applied.reason, kind: member.kind, identityKey: owner === id ? member.bindKey : null });
          for (const flid of applied.mirror ?? []) mirror.add(flid);
          for (const task of applied.wake ?? []) wake.add(task);
          if (applied.counts) counts.push(applied.counts);
          count++;
        }
        if (count === 0) throw new NothingToCommit();
        const known = new Map<string, unknown>();
        for (const batch of batches.values()) {
          const finished = await batch.finish();
          for (const task of finished.wake) wake.add(task);
          for (const [flid, state] of finished.states ?? []) known.set(flid, state);
        }
        await T.recordApplied(tx, outcomes, now, wake);
        return { count, cut: cutResult, mirror: [...mirror], counts, known, batches: [...batches.values()] };
      })
      .then((result) => {
        for (const batch of result.batches) batch.committed?.();
        return result;
      });
  } catch (err) {
    deps.registry.resetDomains();
    if (err instanceof NothingToCommit) return { count: 0, cut: cutResult, mirror: [], counts: [], known: new Map(), batches: [] };
    throw err;
  }
}

type Applied = { state: T.TerminalState; reason: string | null; mirror?: string[]; wake?: string[]; counts?: AfterCommitCounts } | { state: 'RETRY'; failure: Failure };

/** One message inside the business transaction. */
async function applyOne(deps: PumpDeps, tx: Parameters<Handler>[0]['tx'], member: Member, batches: Map<BatchDomain<unknown>, DomainBatch<unknown>>, now: Date): Promise<Applied> {
  const todo = member.todo;
  switch (todo.do) {
    case 'finish':
      // applied before (crash after its business commit): its flights, from the current state
      return {
        state: member.h.applied_state!,
        reason: member.h.applied_reason,
        mirror: todo.domain ? await batches.get(todo.domain)!.addressed({ msgId: member.h.msg_id, cmd: todo.cmd }) : [],
      };
    case 'outcome':
      return { state: todo.state, reason: todo.reason };
    case 'retry':
      return { state: 'RETRY', failure: todo.failure };
    case 'domain':
      try {
        return fromHandler(
          await batches.get(todo.domain)!.apply({
            msgId: member.h.msg_id,
            env: member.env!,
            cmd: todo.cmd,
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
      await pgRun(tx, ProcState.savepointMessage);
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
      await pgRun(tx, result.state === 'SUCCEEDED' ? ProcState.releaseMessage : ProcState.rollbackMessage);
      return result;
    }
  }
}

function fromHandler(o: HandlerOutcome): Applied {
  if (o.outcome === 'skipped') return { state: 'SKIPPED', reason: o.reason, mirror: o.mirror };
  return { state: 'SUCCEEDED', reason: null, mirror: o.mirror, wake: o.wake, counts: o.counts };
}

/** A failure inside the business transaction: the message's own (an outcome), or retryable (ends the batch). */
function fromError(e: unknown): Applied {
  const f = classify(e, 'handler');
  if (e instanceof PipelineError && (f.cls === 'MALFORMED' || f.cls === 'PROTOCOL')) return { state: 'DEAD', reason: `${f.cls}: ${f.detail}` };
  return { state: 'RETRY', failure: f };
}

/** Record a failure of a message (the failure component decides FAILED or DEAD on the committed attempt count). */
async function fail(d: PumpDeps, m: Member, f: Failure): Promise<Done> {
  const decision = await T.recordFailure(d.session, m.h.msg_id, f, (h) => decide(f, h, d.failures), d.clock.now(), m.kind, m.bindKey);
  if (decision.next === 'DEAD') {
    T.countTerminal('DEAD', decision.reason, d.registry.metricKindOf(m.kind));
    logOf(d, m).warn({ state: 'DEAD', reason: decision.reason }, 'message dead');
  } else logOf(d, m)[f.cls === 'INFRA' ? 'warn' : 'error']({ state: 'FAILED', errorClass: f.cls, reason: decision.reason, retryInMs: decision.retryInMs }, 'message failed');
  return { msgId: m.h.msg_id, state: decision.next };
}

/**
 * While the head is held for INFRA: how to ask the service it failed on whether it answers again
 * (null: a failure that a probe cannot tell apart, e.g. a lock or statement timeout — it waits
 * for its backoff).
 */
function probeOf(deps: PumpDeps, head: T.HeadRow): (() => Promise<unknown>) | null {
  const reason = head.reason ?? '';
  if (/inbox/i.test(reason)) return () => myRows(deps.inbox, Probe.mySelect1);
  if (/redis/i.test(reason)) return deps.mirror.probe ? () => deps.mirror.probe!() : null;
  if (/connect|terminat|ECONN|EPIPE|shut ?down|57P0|08\d{3}/i.test(reason)) return () => pgRun(deps.session, Probe.select1);
  return null;
}

async function answers(probe: () => Promise<unknown>, d: PumpDeps): Promise<boolean> {
  try {
    await withTimeout(Math.min(d.pump.timeoutMs, PROBE_EVERY_MS), 'probe', probe());
    return true;
  } catch {
    return false;
  }
}
