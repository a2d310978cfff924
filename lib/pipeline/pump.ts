// The pump: applies the head-of-queue message, strictly in inbox order (INV-2).
//
//   tick: head? → none: idle | FAILED+exhausted: DEAD(EXHAUSTED) | FAILED+not yet due: wait | else processOne
//   processOne: raw read → envelope decode → identity binding → handler (business tx)
//               → Redis mirror → SUCCEEDED + backfill intent            (all under PIPELINE_LOCK)
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

/** Thrown inside the business transaction to roll it back when the handler skips. */
class Skip extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
  }
}

export async function tick(d: PumpDeps): Promise<TickResult> {
  const h = await T.head(d.session);
  const now = d.clock.now();
  updateHeadGauges(d, h, now);
  if (!h) return { kind: 'idle' };
  if (h.state === 'FAILED' && isExhausted({ attempts: h.attempts, errorClass: h.error_class }, d.config)) {
    await T.markTerminal(d.session, h.msg_id, 'DEAD', `EXHAUSTED(${h.error_class}): attempts used up`, now, h.kind);
    return { kind: 'processed', msgId: h.msg_id, state: 'DEAD' };
  }
  if (h.state === 'FAILED' && h.next_attempt_at && h.next_attempt_at > now) return { kind: 'wait', until: h.next_attempt_at, msgId: h.msg_id };
  const state = await processOne(d, h);
  return { kind: 'processed', msgId: h.msg_id, state };
}

/** Process heads until none is ready or the budget is spent. */
export async function drain(d: PumpDeps, budgetMs: number, shouldStop: () => boolean = () => false): Promise<{ processed: number; next: 'now' | 'idle' | Date }> {
  const deadline = Date.now() + budgetMs;
  let processed = 0;
  while (!shouldStop()) {
    if (Date.now() >= deadline) return { processed, next: 'now' };
    const r = await tick(d);
    if (r.kind === 'idle') return { processed, next: 'idle' };
    if (r.kind === 'wait') return { processed, next: r.until };
    processed++;
  }
  return { processed, next: 'now' };
}

export async function processOne(d: PumpDeps, h: T.HeadRow): Promise<string> {
  const log = d.log.child({ msgId: h.msg_id });
  const started = performance.now();
  let kind = h.kind;
  await sql`select pg_advisory_lock(${LOCKS.PIPELINE})`.execute(d.session);
  try {
    const fail = (f: Failure) => recordFailure(d, log, h, f, kind);
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
    // 3. identity (bound once; a replay keeps it)
    if (!h.identity_key) {
      const b = await T.bindIdentity(d.session, h.msg_id, identityKey(env, d.config['msgx.identity.include-day-boundary']), d.clock.now());
      if ('duplicateOf' in b) return await terminal(d, mlog, h.msg_id, 'SKIPPED', `duplicate-of:${b.duplicateOf}`, kind);
    }
    // 4. handler
    const handler = d.registry.resolve(env.type, env.styp);
    if (!handler) return await terminal(d, mlog, h.msg_id, 'SKIPPED', 'unsupported', kind);
    // 5.1 business transaction
    const now = d.clock.now();
    let outcome: HandlerOutcome;
    try {
      outcome = await d.session.transaction().execute(async (tx) => {
        const o = await handler({ tx, msgId: h.msg_id, env, now, config: d.config, log: mlog });
        if (o.outcome === 'skipped') throw new Skip(o.reason);
        for (const task of new Set(o.wake ?? [])) await T.wake(tx, task);
        return o;
      });
    } catch (e) {
      if (e instanceof Skip) return await terminal(d, mlog, h.msg_id, 'SKIPPED', e.reason, kind);
      return await fail(classify(e, 'handler'));
    }
    // 5.2 Redis in line with Postgres for every flight the message addresses
    if (outcome.outcome === 'applied' && outcome.mirror?.length) {
      try {
        await d.mirror.sync(outcome.mirror);
      } catch (e) {
        return await fail({ cls: 'INFRA', detail: `redis mirror failed after business commit: ${(e as Error).message}` });
      }
    }
    // 5.3 terminal + backfill intent
    try {
      await d.session.transaction().execute((tx) => T.markSucceeded(tx, h.msg_id, d.clock.now(), kind!));
    } catch (e) {
      return await fail(classify(infra(`terminal commit failed: ${(e as Error).message}`), 'handler'));
    }
    mlog.info({ state: 'SUCCEEDED' }, 'message applied');
    return 'SUCCEEDED';
  } finally {
    metrics.processingSeconds.observe({ kind: kind ?? 'unknown' }, (performance.now() - started) / 1000);
    await sql`select pg_advisory_unlock(${LOCKS.PIPELINE})`.execute(d.session).catch(() => {});
  }
}

async function terminal(d: PumpDeps, log: Logger, msgId: number, state: T.TerminalState, reason: string, kind: string | null): Promise<string> {
  await d.session.transaction().execute(async (tx) => {
    await T.markTerminal(tx, msgId, state, reason, d.clock.now(), kind);
    await T.wake(tx, 'backfill');
  });
  log[state === 'DEAD' ? 'warn' : 'info']({ state, reason }, `message ${state.toLowerCase()}`);
  return state;
}

async function recordFailure(d: PumpDeps, log: Logger, h: T.HeadRow, f: Failure, kind: string | null): Promise<string> {
  const decision = decide(f, { attempts: h.attempts, failuresInRow: h.failures_in_row }, d.config);
  if (decision.next === 'DEAD') {
    await d.session.transaction().execute(async (tx) => {
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
