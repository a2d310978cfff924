// The pump: applies the head-of-queue message, strictly in inbox order (INV-2).
//
//   tick: head? → none: idle | FAILED+exhausted: DEAD(EXHAUSTED) | FAILED+not yet due: wait | else processOne
//   processOne: raw read → envelope decode → [identity binding + handler + wake-ups] (business tx)
//               → Redis mirror → SUCCEEDED + backfill intent + backfill wake-up (one statement)
//               (all under PIPELINE_LOCK; drain holds it across a run of messages, ≤ LOCK_SLICE_MS)
//
// Failures of any step go through lib/pipeline/failures.ts (one decision table). The pump never
// writes the inbox (backfill does), never reorders, never moves a message to DEAD for its age.
import type { Logger } from 'pino';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { LOCKS, sql, type Db } from '../db/postgres.ts';
import { readBodies, withTimeout, type Inbox } from '../db/mysql.ts';
import { decodeEnvelope, identityKey, kindOf, type Envelope } from '../sis/envelope.ts';
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

const lock = (d: PumpDeps) => sql`select pg_advisory_lock(${LOCKS.PIPELINE})`.execute(d.session);
const unlock = (d: PumpDeps) => sql`select pg_advisory_unlock(${LOCKS.PIPELINE})`.execute(d.session).catch(() => {});

/** One head: takes PIPELINE_LOCK for the head query and the whole processing of the message. */
export async function tick(d: PumpDeps): Promise<TickResult> {
  await lock(d);
  try {
    return await tickLocked(d);
  } finally {
    await unlock(d);
  }
}

async function tickLocked(d: PumpDeps): Promise<TickResult> {
  const h = await T.head(d.session);
  const now = d.clock.now();
  updateHeadGauges(d, h, now);
  if (!h) return { kind: 'idle' };
  if (h.state === 'FAILED' && isExhausted({ attempts: h.attempts, errorClass: h.error_class }, d.config)) {
    await T.markTerminal(d.session, h.msg_id, 'DEAD', `EXHAUSTED(${h.error_class}): attempts used up`, now, h.kind);
    return { kind: 'processed', msgId: h.msg_id, state: 'DEAD' };
  }
  if (h.state === 'FAILED' && h.next_attempt_at && h.next_attempt_at > now) return { kind: 'wait', until: h.next_attempt_at, msgId: h.msg_id };
  const state = await processLocked(d, h);
  return { kind: 'processed', msgId: h.msg_id, state };
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
  try {
    while (!shouldStop()) {
      if (Date.now() >= deadline) return { processed, next: 'now' };
      if (Date.now() >= sliceEnd) {
        await unlock(d);
        await lock(d);
        sliceEnd = Date.now() + LOCK_SLICE_MS;
      }
      const r = await tickLocked(d);
      if (r.kind === 'idle') return { processed, next: 'idle' };
      if (r.kind === 'wait') return { processed, next: r.until };
      processed++;
    }
    return { processed, next: 'now' };
  } finally {
    await unlock(d);
  }
}

/** processOne(head) under its own PIPELINE_LOCK (taken before step 1, released after step 3). */
export async function processOne(d: PumpDeps, h: T.HeadRow): Promise<string> {
  await lock(d);
  try {
    return await processLocked(d, h);
  } finally {
    await unlock(d);
  }
}

/** processOne with PIPELINE_LOCK held by the caller. */
async function processLocked(d: PumpDeps, h: T.HeadRow): Promise<string> {
  const log = d.log.child({ msgId: h.msg_id });
  const started = performance.now();
  let kind = h.kind;
  try {
    const fail = (f: Failure, bindKey: string | null = null) => recordFailure(d, log, h, f, kind, bindKey);
    // 1. raw body
    let body: string | undefined;
    try {
      body = (await withTimeout(d.config['msgx.io.timeout'], 'inbox read', readBodies(d.inbox, [h.msg_id]))).get(h.msg_id);
    } catch (e) {
      return await fail({ cls: 'INFRA', detail: `inbox read failed: ${(e as Error).message}` });
    }
    if (body === undefined) return await terminal(d, log, h.msg_id, 'DEAD', 'MALFORMED: raw-missing', kind);
    // 2. envelope
    let env: Envelope;
    try {
      env = decodeEnvelope(body);
    } catch (e) {
      return await fail(classify(e, 'decode'));
    }
    kind = kindOf(env);
    const mlog = log.child({ kind });
    // 3. identity (bound once; a replay keeps it) — the first statement of the business
    //    transaction, so binding and business change commit together (one commit, not two).
    const bindKey = h.identity_key ? null : identityKey(env, d.config['msgx.identity.include-day-boundary']);
    // 4. handler
    const handler = d.registry.resolve(env.type, env.styp);
    if (!handler) return await terminal(d, mlog, h.msg_id, 'SKIPPED', 'unsupported', kind, bindKey);
    // 5.1 business transaction: identity binding, handler writes + outbox events, dispatcher wake-ups
    const now = d.clock.now();
    let outcome: HandlerOutcome;
    try {
      outcome = await d.session.transaction().execute(async (tx) => {
        if (bindKey) {
          const b = await T.bindIdentity(tx, h.msg_id, bindKey, now);
          if ('duplicateOf' in b) throw new Skip(`duplicate-of:${b.duplicateOf}`, false);
        }
        const o = await handler({ tx, msgId: h.msg_id, env, now, config: d.config, log: mlog });
        if (o.outcome === 'skipped') throw new Skip(o.reason, true);
        await T.wakeAll(tx, o.wake ?? []);
        return o;
      });
    } catch (e) {
      if (e instanceof Skip) return await terminal(d, mlog, h.msg_id, 'SKIPPED', e.reason, kind, e.rebind ? bindKey : null);
      return await fail(classify(e, 'handler'), bindKey);
    }
    // 5.2 Redis in line with Postgres for every flight the message addresses
    if (outcome.outcome === 'applied' && outcome.mirror?.length) {
      try {
        await d.mirror.sync(outcome.mirror);
      } catch (e) {
        return await fail({ cls: 'INFRA', detail: `redis mirror failed after business commit: ${(e as Error).message}` });
      }
    }
    // 5.3 terminal + backfill intent (+ backfill wake-up): one statement
    try {
      await T.markSucceeded(d.session, h.msg_id, d.clock.now(), kind!);
    } catch (e) {
      return await fail(classify(infra(`terminal commit failed: ${(e as Error).message}`), 'handler'));
    }
    mlog.info({ state: 'SUCCEEDED' }, 'message applied');
    return 'SUCCEEDED';
  } finally {
    metrics.processingSeconds.observe({ kind: kind ?? 'unknown' }, (performance.now() - started) / 1000);
  }
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
