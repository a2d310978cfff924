// The pump: applies the head-of-queue message, strictly in inbox order (INV-2).
//
//   tick: head? → none: idle | FAILED+exhausted: DEAD(EXHAUSTED) | FAILED+not yet due: wait | else processOne
//   processOne: raw read → envelope decode → [identity binding + handler + wake-ups] (business tx)
//               → Redis mirror → SUCCEEDED + backfill intent + backfill wake-up (one statement)
//               (all under PIPELINE_LOCK; drain holds it across a run of messages, ≤ LOCK_SLICE_MS)
//   drain: message N's SUCCEEDED is carried into N+1's business transaction, whose COMMIT waits
//          for N's Redis step (started after N's business commit, it overlaps N+1's reads and
//          writes): INV-10 holds, one durable commit per message. Anything else that happens
//          next — N+1 skips, fails, is absent, the lock is released, the run ends — first commits
//          N's SUCCEEDED on its own (or records N's Redis failure). Heads and raw bodies are read
//          ahead in batches (HEAD_AHEAD, READ_AHEAD); a head missing from the body read-ahead is
//          read at its own turn.
//
// Failures of any step go through lib/pipeline/failures.ts (one decision table). The pump never
// writes the inbox (backfill does), never reorders, never moves a message to DEAD for its age.
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { LOCKS, sql, type Db } from '../db/postgres.ts';
import { readBodies, readBodiesFrom, withTimeout, type Inbox } from '../db/mysql.ts';
import { decodeEnvelope, identityKey, kindOf, payload, type Envelope } from '../sis/envelope.ts';
import { metrics } from '../runtime/metrics.ts';
import { classify, infra, type Failure } from './errors.ts';
import { decide, isExhausted } from './failures.ts';
import type { HandlerOutcome, HandlerRegistry, Mirror } from './handlers.ts';
import * as T from './transitions.ts';

export interface PumpDeps {
  /** Kysely on the pump's dedicated connection (leader lock held on it; PIPELINE_LOCK taken per message). */
  session: Db;
  inbox: Inbox;
  registry: HandlerRegistry;
  mirror: Mirror;
  clock: Clock;
  config: Config;
  log: Logger;
}

export type TickResult =
  | { kind: 'idle' }
  | { kind: 'wait'; until: Date; msgId: number }
  | { kind: 'processed'; msgId: number; state: string };

/** Thrown inside the business transaction to roll it back when the handler skips (or the message is a duplicate). */
class Skip extends Error {
  readonly reason: string;
  /** The rollback also undid the identity binding: bind again with the terminal state. */
  readonly rebind: boolean;
  constructor(reason: string, rebind: boolean) {
    super(reason);
    this.reason = reason;
    this.rebind = rebind;
  }
}

/** PIPELINE_LOCK is held for at most this long by one drain before it is released and re-taken (lets the history purge in). */
const LOCK_SLICE_MS = 1_000;

/** Heads read at once (the open messages after the head, up to the first FAILED one; T.heads). */
const HEAD_AHEAD = 64;

/** Raw bodies read ahead per inbox query, and the largest body kept by the read-ahead (characters). */
const READ_AHEAD = 64;
const READ_AHEAD_MAX_CHARS = 64 * 1024;

/**
 * State of one run under PIPELINE_LOCK (one tick, or a drain slice): the message whose
 * SUCCEEDED is carried into the next business transaction, and the read-ahead bodies.
 * `settle` must run before the lock is released.
 */
interface Run {
  carried: Carried | null;
  /** Read-ahead: msg id → body (null: too large for the read-ahead, read on its own). Only hits are trusted. */
  bodies: Map<number, string | null>;
  /** The next heads, PENDING, in MSG_ID order (T.heads); dropped when a message does not end terminal. */
  heads: T.HeadRow[];
}

/**
 * A message whose business transaction committed; its Redis step (`mirrored`: resolves with null
 * when Redis is in line, or with the error) may still be running. Its SUCCEEDED commits only after
 * `mirrored` resolved with null (INV-10).
 */
interface Carried {
  c: T.CarriedSuccess;
  h: T.HeadRow;
  log: Logger;
  mirrored: Promise<Error | null>;
}

/** Thrown inside a business transaction to roll it back when the carried message's Redis step failed. */
class CarriedMirrorFailed extends Error {}

const newRun = (): Run => ({ carried: null, bodies: new Map(), heads: [] });

const lock = (d: PumpDeps) => sql`select pg_advisory_lock(${LOCKS.PIPELINE})`.execute(d.session);
const unlock = (d: PumpDeps) => sql`select pg_advisory_unlock(${LOCKS.PIPELINE})`.execute(d.session).catch(() => {});

/** One head: takes PIPELINE_LOCK for the head query and the whole processing of the message. */
export async function tick(d: PumpDeps): Promise<TickResult> {
  await lock(d);
  const run = newRun();
  try {
    const r = await tickLocked(d, run);
    if (!(await settle(d, run)) && r.kind === 'processed') return { ...r, state: 'FAILED' };
    return r;
  } finally {
    await unlock(d);
  }
}

async function tickLocked(d: PumpDeps, run: Run): Promise<TickResult> {
  const carried = run.carried;
  if (run.heads.length === 0) run.heads = await T.heads(d.session, HEAD_AHEAD, carried?.c.msgId);
  const h = run.heads.shift();
  const now = d.clock.now();
  if (!h || h.state === 'FAILED') {
    // Not a message that starts a business transaction now: the carried SUCCEEDED commits first.
    if (!(await settle(d, run))) {
      run.heads = [];
      return { kind: 'processed', msgId: carried!.c.msgId, state: 'FAILED' };
    }
  }
  updateHeadGauges(d, h, now);
  if (!h) return { kind: 'idle' };
  if (h.state === 'FAILED' && isExhausted({ attempts: h.attempts, errorClass: h.error_class }, d.config)) {
    await T.markTerminal(d.session, h.msg_id, 'DEAD', `EXHAUSTED(${h.error_class}): attempts used up`, now, h.kind);
    return { kind: 'processed', msgId: h.msg_id, state: 'DEAD' };
  }
  if (h.state === 'FAILED' && h.next_attempt_at && h.next_attempt_at > now) return { kind: 'wait', until: h.next_attempt_at, msgId: h.msg_id };
  const r = await processLocked(d, h, run);
  // not terminal: the head is that message again (or the carried one) — re-read the heads
  if (r.state !== 'SUCCEEDED' && r.state !== 'SKIPPED' && r.state !== 'DEAD') run.heads = [];
  return { kind: 'processed', ...r };
}

/**
 * Commit the carried SUCCEEDED on its own (markSucceeded: terminal + backfill intent + wake-up,
 * one statement). Returns false when that failed: the carried message is then recorded FAILED
 * (INFRA, as any failed terminal commit) and is the head again; the caller stops there.
 */
async function settle(d: PumpDeps, run: Run): Promise<boolean> {
  const c = run.carried;
  if (!c) return true;
  run.carried = null;
  const mirrorError = await c.mirrored;
  if (mirrorError) {
    await recordFailure(d, c.log, c.h, { cls: 'INFRA', detail: `redis mirror failed after business commit: ${mirrorError.message}` }, c.c.kind, null);
    return false;
  }
  try {
    await T.markSucceeded(d.session, c.c.msgId, d.clock.now(), c.c.kind);
  } catch (e) {
    await recordFailure(d, c.log, c.h, classify(infra(`terminal commit failed: ${(e as Error).message}`), 'handler'), c.c.kind, null);
    return false;
  }
  c.log.info({ state: 'SUCCEEDED' }, 'message applied');
  return true;
}

/**
 * Process heads until none is ready or the budget is spent. PIPELINE_LOCK is taken once for a
 * run of messages (every message is still processed entirely under it: raw read → terminal
 * commit) and released at least every LOCK_SLICE_MS, and always before returning.
 */
export async function drain(d: PumpDeps, budgetMs: number, shouldStop: () => boolean = () => false): Promise<{ processed: number; next: 'now' | 'idle' | Date }> {
  const deadline = Date.now() + budgetMs;
  let processed = 0;
  await lock(d);
  let sliceEnd = Date.now() + LOCK_SLICE_MS;
  let run = newRun();
  try {
    while (!shouldStop()) {
      if (Date.now() >= deadline) return { processed, next: 'now' };
      if (Date.now() >= sliceEnd) {
        if (!(await settle(d, run))) return { processed, next: 'now' };
        await unlock(d);
        await lock(d);
        run = newRun();
        sliceEnd = Date.now() + LOCK_SLICE_MS;
      }
      const r = await tickLocked(d, run);
      if (r.kind === 'idle') return { processed, next: 'idle' };
      if (r.kind === 'wait') return { processed, next: r.until };
      processed++;
    }
    return { processed, next: 'now' };
  } finally {
    try {
      await settle(d, run);
    } finally {
      await unlock(d);
    }
  }
}

/** processOne(head) under its own PIPELINE_LOCK (taken before step 1, released after step 3). */
export async function processOne(d: PumpDeps, h: T.HeadRow): Promise<string> {
  await lock(d);
  const run = newRun();
  try {
    const { state } = await processLocked(d, h, run);
    return (await settle(d, run)) ? state : 'FAILED';
  } finally {
    await unlock(d);
  }
}

/**
 * processOne with PIPELINE_LOCK held by the caller. On success the message's SUCCEEDED is left
 * in `run.carried` (the caller's next business transaction or `settle` commits it); every other
 * outcome first settles the previously carried message, then records its own.
 */
async function processLocked(d: PumpDeps, h: T.HeadRow, run: Run): Promise<{ msgId: number; state: string }> {
  const log = d.log.child({ msgId: h.msg_id });
  const started = performance.now();
  let kind = h.kind;
  const prev = run.carried;
  /** Settle the carried message, then do `then`; if settling failed, the carried message is the outcome. */
  const afterSettle = async (then: () => Promise<string>) => {
    if (!(await settle(d, run))) return { msgId: prev!.c.msgId, state: 'FAILED' };
    return { msgId: h.msg_id, state: await then() };
  };
  try {
    const fail = (f: Failure, bindKey: string | null = null) => afterSettle(() => recordFailure(d, log, h, f, kind, bindKey));
    const term = (l: Logger, state: T.TerminalState, reason: string, bindKey: string | null = null) => afterSettle(() => terminal(d, l, h.msg_id, state, reason, kind, bindKey));
    // 1. raw body (read ahead in batches; a miss is read now)
    let body: string | undefined;
    try {
      body = await readBody(d, run, h.msg_id);
    } catch (e) {
      return await fail({ cls: 'INFRA', detail: `inbox read failed: ${(e as Error).message}` });
    }
    if (body === undefined) return await term(log, 'DEAD', 'MALFORMED: raw-missing');
    // 2. envelope
    let env: Envelope;
    try {
      env = decodeEnvelope(body);
    } catch (e) {
      return await fail(classify(e, 'decode'));
    }
    kind = kindOf(env);
    // every later line of this message carries its kind, and its FLID for a single-flight FLOP
    const flid = env.type === 'FLOP' ? payload(env)[0]?.children.find((c) => c.tag === 'FLID')?.text : undefined;
    const mlog = log.child(flid ? { kind, flid } : { kind });
    // 3. identity (bound once; a replay keeps it) — the first statement of the business
    //    transaction, so binding and business change commit together (one commit, not two).
    const bindKey = h.identity_key ? null : identityKey(env, d.config['msgx.identity.include-day-boundary']);
    // 4. handler
    const handler = d.registry.resolve(env.type, env.styp);
    if (!handler) return await term(mlog, 'SKIPPED', 'unsupported', bindKey);
    // 5.1 business transaction: [carried SUCCEEDED of the previous message], identity binding,
    //     handler writes + outbox events, dispatcher (+ backfill) wake-ups
    const now = d.clock.now();
    const carried = prev ? { ...prev.c, at: now } : undefined;
    let outcome: HandlerOutcome;
    try {
      outcome = await d.session.transaction().execute(async (tx) => {
        if (bindKey) {
          const b = await T.bindIdentity(tx, h.msg_id, bindKey, now, carried);
          if ('duplicateOf' in b) throw new Skip(`duplicate-of:${b.duplicateOf}`, false);
        } else if (carried) await T.markCarriedSucceeded(tx, carried);
        const o = await handler({ tx, msgId: h.msg_id, env, now, config: d.config, log: mlog });
        if (o.outcome === 'skipped') throw new Skip(o.reason, true);
        await T.wakeAll(tx, [...(o.wake ?? []), ...(carried ? ['backfill'] : [])]);
        // INV-10 for the carried message: its Redis step must have succeeded before this commit
        if (prev && (await prev.mirrored)) throw new CarriedMirrorFailed();
        return o;
      });
    } catch (e) {
      // rolled back, the carried SUCCEEDED with it: afterSettle commits it on its own first (or
      // records its Redis failure, and this message waits behind it)
      if (e instanceof Skip) return await term(mlog, 'SKIPPED', e.reason, e.rebind ? bindKey : null);
      if (e instanceof CarriedMirrorFailed) return await afterSettle(async () => 'PENDING');
      return await fail(classify(e, 'handler'), bindKey);
    }
    if (prev) {
      run.carried = null;
      T.countTerminal('SUCCEEDED', null, prev.c.kind);
      prev.log.info({ state: 'SUCCEEDED' }, 'message applied');
    }
    // 5.2 Redis in line with Postgres for every flight the message addresses — started now, it
    //     runs (on the pool's connection) while the next message is read and applied; its
    //     SUCCEEDED (5.3) waits for it
    const flids = outcome.outcome === 'applied' ? (outcome.mirror ?? []) : [];
    const mirrored = flids.length
      ? d.mirror.sync(flids).then(
          () => null,
          (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
        )
      : Promise.resolve(null);
    // 5.3 terminal + backfill intent (+ backfill wake-up): carried into the next business
    //     transaction, or committed on its own by `settle` (one statement either way)
    run.carried = { c: { msgId: h.msg_id, kind: kind!, at: now }, h, log: mlog, mirrored };
    return { msgId: h.msg_id, state: 'SUCCEEDED' };
  } finally {
    metrics.processingSeconds.observe({ kind: kind ?? 'unknown' }, (performance.now() - started) / 1000);
  }
}

/** Raw body of the head: from the read-ahead when it has it, else one inbox query that also refills the read-ahead. */
async function readBody(d: PumpDeps, run: Run, msgId: number): Promise<string | undefined> {
  const hit = run.bodies.get(msgId);
  if (hit !== undefined && hit !== null) {
    run.bodies.delete(msgId);
    return hit;
  }
  const timeout = d.config['msgx.io.timeout'];
  if (hit === null) return (await withTimeout(timeout, 'inbox read', readBodies(d.inbox, [msgId]))).get(msgId);
  run.bodies = await withTimeout(timeout, 'inbox read', readBodiesFrom(d.inbox, msgId, READ_AHEAD, READ_AHEAD_MAX_CHARS));
  const body = run.bodies.get(msgId);
  run.bodies.delete(msgId);
  if (body === null) return (await withTimeout(timeout, 'inbox read', readBodies(d.inbox, [msgId]))).get(msgId);
  return body;
}

/**
 * Non-business terminal outcome: terminal state + backfill intent + backfill wake-up in one
 * statement. When the message's identity is not bound yet (`bindKey`), it is bound in the same
 * transaction first (a duplicate found then turns the outcome into SKIPPED(duplicate-of)).
 */
async function terminal(d: PumpDeps, log: Logger, msgId: number, state: T.TerminalState, reason: string, kind: string | null, bindKey: string | null = null): Promise<string> {
  const now = d.clock.now();
  if (bindKey === null) await T.markTerminal(d.session, msgId, state, reason, now, kind, { wakeBackfill: true });
  else {
    await d.session.transaction().execute(async (tx) => {
      const b = await T.bindIdentity(tx, msgId, bindKey, now);
      if ('duplicateOf' in b) {
        state = 'SKIPPED';
        reason = `duplicate-of:${b.duplicateOf}`;
      }
      await T.markTerminal(tx, msgId, state, reason, now, kind, { wakeBackfill: true });
    });
  }
  log[state === 'DEAD' ? 'warn' : 'info']({ state, reason }, `message ${state.toLowerCase()}`);
  return state;
}

async function recordFailure(d: PumpDeps, log: Logger, h: T.HeadRow, f: Failure, kind: string | null, bindKey: string | null): Promise<string> {
  const decision = decide(f, { attempts: h.attempts, failuresInRow: h.failures_in_row }, d.config);
  if (decision.next === 'DEAD') {
    await d.session.transaction().execute(async (tx) => {
      // The failed business transaction also rolled back the binding: a DEAD message keeps its identity.
      if (bindKey) await T.bindIdentity(tx, h.msg_id, bindKey, d.clock.now());
      await T.recordFailure(tx, h.msg_id, decision, f.cls, d.clock.now(), kind);
      await T.wake(tx, 'backfill');
    });
    log.warn({ state: 'DEAD', reason: decision.reason }, 'message dead');
    return 'DEAD';
  }
  await T.recordFailure(d.session, h.msg_id, decision, f.cls, d.clock.now(), kind);
  log[f.cls === 'INFRA' ? 'warn' : 'error']({ state: 'FAILED', errorClass: f.cls, reason: decision.reason, retryInMs: decision.retryInMs }, 'message failed');
  return 'FAILED';
}

function updateHeadGauges(d: PumpDeps, h: T.HeadRow | undefined, now: Date) {
  metrics.backlogOldestSeconds.set(h ? Math.max(0, (now.getTime() - h.enqueued_at.getTime()) / 1000) : 0);
  const blocked =
    h?.state === 'FAILED' &&
    h.error_class === 'INFRA' &&
    h.failing_since !== null &&
    now.getTime() - h.failing_since.getTime() >= d.config['msgx.pipeline.infra-alert-after'];
  metrics.headBlocked.set(blocked ? 1 : 0);
}

/** Backlog size for the gauge (cheap: partial index on open rows). */
export async function refreshBacklogGauge(db: Db): Promise<void> {
  const r = await db.selectFrom('proc_state').select((eb) => eb.fn.countAll<number>().as('n')).where('state', 'in', ['PENDING', 'FAILED']).executeTakeFirst();
  metrics.backlogMessages.set(Number(r?.n ?? 0));
}
