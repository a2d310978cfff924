// applyBatch, PIPELINE_LOCK held by the caller (loop.ts): the pump's steps in order, with the
// names of docs/design.md "The pump's steps":
//   chooseBatch  the head and the open messages after it (up to K, cut before a FAILED one); a
//                FAILED head whose attempts are used up → DEAD(EXHAUSTED); one not yet due waits
//                (an INFRA failure that carried its service: that service is probed every
//                PROBE_EVERY_MS and the head is tried as soon as it answers).
//   read         the raw bodies, one inbox query                     fails → FAILED(INFRA, mariadb)
//   decode       deps.decoder, in order, under the per-message budget (a body of HINTED_BODY or more
//                with the domains' decode hints, read first: ahead.ts); `prepare` (batch.ts) turns
//                each decoding into a Todo. A retryable decode failure (CODEC_ERROR) ends the batch
//                before that message (the Cut); a snapshot is a batch of its own. The next batch
//                is read and decoded while this one's business, mirror and terminal steps run (ahead.ts).
//   business     ONE transaction (business.ts)
//   mirror       ONE Redis sync for every flight the batch addresses   fails → FAILED(INFRA, redis)
//   terminal     ONE statement: every applied outcome becomes its terminal state + backfill intent +
//                wake-up (INV-10: nothing is terminal before its business commit and its mirror step).
//   tail         in drain, the mirror and terminal steps run while the next batch is chosen, read
//                and applied; their ordering rules are tail.ts.
// A message found with APPLIED_STATE set (a crash after its business step) is not applied again
// (Todo 'recover'): its flights are mirrored from Postgres and its outcome made terminal.
// What a failure leads to is decided in lib/pipeline/failures.ts; the pump only carries it there.
import v8 from 'node:v8';
import { classify, describe, type Failure } from '../../core/errors.ts';
import { withTimeout } from '../../core/timeout.ts';
import type { Db } from '../../db/postgres.ts';
import { collectGarbage } from '../../runtime/gc.ts';
import { countAfterCommit, metrics, reasonLabel } from '../../runtime/metrics.ts';
import { decide, isExhausted, probeTarget } from '../failures.ts';
import { pgRows } from '../../db/statement.ts';
import * as ProcState from '../../sql/proc-state.ts';
import * as Transitions from '../../sql/transitions.ts';
import { type Ahead, isLarge, readAhead, readAndDecode } from './ahead.ts';
import { type Body, logOf, type Member, type MessageRef, prepareBatch, refOf } from './batch.ts';
import { type Business, business } from './business.ts';
import { type BatchResult, type Done, done, type PumpDeps } from './deps.ts';
import { MirrorBehind, type TailGate } from './tail.ts';
import { PUMP } from '../../core/tuning.ts';

/** A large message's batch that grew the heap by more than this is followed by a full collection (collectGarbage). */
const RELEASE_AFTER_GROWTH = PUMP.releaseAfterGrowthBytes;
const heapUsed = () => v8.getHeapStatistics().used_heap_size;

const PROBE_EVERY_MS = PUMP.probeEveryMs;

/** What a batch carries over from the one before: the read ahead (drain) and the tail (overlapping only in drain). */
export interface Carry {
  ahead: Ahead | null;
  tail: TailGate<Member>;
  /** The mirror and terminal steps may run while the next batch does (drain); tick ends every step first. */
  overlap: boolean;
}

export async function applyBatch(deps: PumpDeps, limit: number, carry: Carry): Promise<BatchResult> {
  const lap = stopwatch(deps.timings);
  const chosen = await chooseBatch(deps, limit, carry.ahead, carry.tail.excluded());
  lap('heads');
  if (chosen.kind !== 'batch') return chosen;
  const { heads, following } = chosen;
  const head = heads[0];
  const started = performance.now();
  const heapAtStart = heapUsed();
  let bodies: Map<number, Body>;
  try {
    bodies = await readAndDecode(deps, heads, carry.ahead);
    lap('bodies+decode');
  } catch (err) {
    return done([await fail(deps, refOf(head), { cls: 'INFRA', service: 'mariadb', detail: `inbox read failed: ${describe(err)}` })]);
  }
  const { members, cut: decodeCut } = prepareBatch(deps, heads, bodies);
  lap('prepare');
  if (members.length === 0) return done([await fail(deps, decodeCut?.ref ?? refOf(head), decodeCut?.failure ?? { cls: 'INTERNAL', detail: 'the head was not decoded' })]); // never expected: the head is always decoded
  // the next batch, if this one takes every message it read: read and decoded while this one commits
  if (carry.ahead && !decodeCut && members.length === heads.length && following.length > 0) readAhead(deps, carry.ahead, following);
  let biz: Business;
  try {
    biz = await business(deps, members, carry.tail.commitGate());
    lap('business');
  } catch (err) {
    if (err instanceof MirrorBehind) return done(await settleTail(deps, carry.tail)); // rolled back: the batch before failed its mirror step
    if (members.length > 1) {
      deps.log.warn({ err: describe(err), batch: members.length, from: head.msg_id }, 'batch rolled back; trying again smaller');
      return { kind: 'done', done: [], retrySmaller: Math.max(1, Math.floor(members.length / 2)) };
    }
    return done([await fail(deps, members[0], classify(err, 'handler', 'postgres'))]);
  }
  const applied = members.slice(0, biz.count);
  const cut = biz.cut ?? decodeCut;
  for (const counts of biz.counts) countAfterCommit(counts);
  // the batch before: its terminal step ends (it ran while this one's business step did)
  const out: Done[] = await settleTail(deps, carry.tail);
  if (applied.length > 0) {
    deps.crash?.('pump.after-business-commit');
    const large = members.length === 1 && isLarge(bodies.get(head.msg_id));
    if (carry.overlap && !cut && !large) {
      // the mirror and terminal steps run while the next batch is chosen, read and applied
      startTail(deps, carry.tail, applied, biz, started);
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
    // a large message (a big snapshot) that was applied leaves garbage of several times its live
    // data: collected now (given back to the system at the next idle minute: lib/runtime/gc.ts); one
    // that changed little (its records found unchanged) left little, and V8's own collections take it
    if (large && heapUsed() - heapAtStart > RELEASE_AFTER_GROWTH) {
      collectGarbage();
      lap('release');
    }
  }
  if (cut) out.push(await fail(deps, cut.ref, cut.failure));
  return { kind: 'done', done: out };
}

const mirrorFailure = (err: unknown): Failure => ({ cls: 'INFRA', service: 'redis', detail: `mirror step (Redis) failed after the business commit: ${describe(err)}` });

/** The tail's outcomes; a failed mirror step is recorded on its first message. */
export const settleTail = (deps: PumpDeps, tail: TailGate<Member>) => tail.settle((first, err) => fail(deps, first, mirrorFailure(err)));

/** The mirror step now, the terminal statement (on deps.terminalDb) after it: while the next batch runs (tail.ts). */
function startTail(deps: PumpDeps, tail: TailGate<Member>, applied: Member[], biz: Business, started: number): void {
  const t0 = performance.now();
  let t1 = t0;
  const mirror = deps.mirror.sync(biz.mirror, biz.known).then(() => {
    t1 = performance.now();
    if (deps.timings) deps.timings.mirror = (deps.timings.mirror ?? 0) + (t1 - t0);
  });
  tail.start(applied, mirror, async () => {
    deps.crash?.('pump.before-terminal');
    const became = await terminal(deps, deps.terminalDb, applied, started);
    if (deps.timings) deps.timings.terminal = (deps.timings.terminal ?? 0) + (performance.now() - t1);
    return became;
  });
}

type Chosen = { kind: 'batch'; heads: ProcState.HeadRow[]; following: ProcState.HeadRow[] } | Exclude<BatchResult, { retrySmaller: number }>;

/** chooseBatch: the head and the open messages after it (reading ahead: also the next batch's candidates), or why there is no batch now. */
async function chooseBatch(deps: PumpDeps, limit: number, ahead: Ahead | null, exclude: ReadonlySet<number>): Promise<Chosen> {
  // the tail's messages (applied, not yet terminal) are set aside before the cut: cut first, a
  // FAILED message right behind them left no row, and the drain ended 'idle' instead of waiting for it
  const rows = openHeads((await pgRows(deps.session, ProcState.heads, (ahead ? limit * 2 : limit) + exclude.size)).filter((r) => !exclude.has(r.msg_id)));
  const heads = rows.slice(0, limit);
  const head = heads[0];
  if (!head) return { kind: 'idle' };
  if (head.state === 'FAILED') {
    if (isExhausted({ attempts: head.attempts, errorClass: head.error_class }, deps.failures)) {
      const reason = `EXHAUSTED(${head.error_class}): attempts used up`;
      await Transitions.markTerminal(deps.session, head.msg_id, 'DEAD', { reason, reasonClass: 'EXHAUSTED' }, deps.clock.now(), head.kind);
      countTerminal('DEAD', reason, deps.registry.metricKindOf(head.kind));
      return done([{ msgId: head.msg_id, state: 'DEAD' }]);
    }
    const now = deps.clock.now();
    if (head.next_attempt_at && head.next_attempt_at > now) {
      const probe = deps.ports.probe(probeTarget(head));
      if (!probe) return { kind: 'wait', until: head.next_attempt_at, msgId: head.msg_id };
      if (!(await answers(probe, deps))) return { kind: 'wait', until: new Date(Math.min(head.next_attempt_at.getTime(), now.getTime() + PROBE_EVERY_MS)), msgId: head.msg_id };
    }
  }
  return { kind: 'batch', heads, following: rows.slice(limit) };
}

/**
 * The open messages from the head on, cut before the first FAILED message after the head. A
 * PENDING row is changed by the pump alone (replay only touches FAILED/DEAD rows), so the pump can
 * apply the list as one batch.
 */
function openHeads(rows: ProcState.HeadRow[]): ProcState.HeadRow[] {
  const cut = rows.findIndex((head, i) => i > 0 && head.state !== 'PENDING');
  return cut < 0 ? rows : rows.slice(0, cut);
}

/** Count a terminal outcome (after its commit); `kindLabel` bounded (HandlerRegistry.metricKindOf). */
function countTerminal(state: ProcState.TerminalState, reason: string | null, kindLabel: string): void {
  metrics.messages.inc({ kind: kindLabel, state, reason: reasonLabel(reason) });
  if (reason?.startsWith('duplicate-of:')) metrics.identityDuplicates.inc();
}

/** The terminal step: every applied outcome becomes terminal (one statement); logged and counted per message. */
async function terminal(deps: PumpDeps, db: Db, applied: Member[], started: number): Promise<Done[]> {
  const became = await Transitions.markAppliedTerminal(
    db,
    applied.map((member) => member.h.msg_id),
    deps.clock.now(),
  );
  const byId = new Map(applied.map((member) => [member.h.msg_id, member]));
  const perMessage = (performance.now() - started) / 1000 / applied.length;
  const out: Done[] = [];
  for (const t of became) {
    const fields = byId.get(t.msg_id)?.logFields ?? { msgId: t.msg_id };
    deps.log[t.state === 'DEAD' ? 'warn' : 'info'](
      { ...fields, state: t.state, ...(t.reason ? { reason: t.reason } : {}) },
      t.state === 'SUCCEEDED' ? 'message applied' : `message ${t.state.toLowerCase()}`,
    );
    metrics.processingSeconds.observe({ kind: deps.registry.metricKindOf(t.kind) }, perMessage);
    countTerminal(t.state, t.reason, deps.registry.metricKindOf(t.kind));
    // A DEAD outcome of the batch (MALFORMED / PROTOCOL, raw-missing included) is a failed attempt of its class.
    if (t.state === 'DEAD') metrics.failures.inc({ class: reasonLabel(t.reason) });
    out.push({ msgId: t.msg_id, state: t.state });
  }
  return out;
}

/** Record a failure of a message (lib/pipeline/failures.ts decides FAILED or DEAD on the committed attempt count). */
async function fail(deps: PumpDeps, m: MessageRef, f: Failure): Promise<Done> {
  const decision = await Transitions.recordFailure(deps.session, m.h.msg_id, f, (h) => decide(f, h, deps.failures), deps.clock.now(), m.kind, m.identityToBind);
  metrics.failures.inc({ class: f.cls }); // committed: a final (DEAD) attempt is counted as a FAILED one is
  if (decision.next === 'DEAD') {
    countTerminal('DEAD', decision.reason, deps.registry.metricKindOf(m.kind));
    logOf(deps, m).warn({ state: 'DEAD', reason: decision.reason }, 'message dead');
  } else logOf(deps, m)[f.cls === 'INFRA' ? 'warn' : 'error']({ state: 'FAILED', errorClass: f.cls, reason: decision.reason, retryInMs: decision.retryInMs }, 'message failed');
  return { msgId: m.h.msg_id, state: decision.next };
}

async function answers(probe: () => Promise<unknown>, deps: PumpDeps): Promise<boolean> {
  try {
    await withTimeout(Math.min(deps.pump.timeoutMs, PROBE_EVERY_MS), 'probe', probe());
    return true;
  } catch {
    return false;
  }
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
