// The mirror and terminal steps (docs/design.md "The pump's steps") and the failures of a batch's
// messages: every outcome logged and counted here, once it is committed.
//   mirror     ONE Redis sync for every flight the batch addresses   fails → FAILED(INFRA, redis)
//   terminal   ONE statement: every applied outcome becomes its terminal state + backfill intent +
//              wake-up (INV-10: nothing is terminal before its business commit and its mirror step).
//   tail       in drain, the mirror and terminal steps run while the next batch is chosen, read
//              and applied (startTail, settleTail); their ordering rules are tail.ts.
// What a failure leads to is decided in lib/pipeline/failures.ts; the pump only carries it there.
import { describe, type Failure } from '../../core/errors.ts';
import type { Db } from '../../db/postgres.ts';
import { metrics, reasonLabel } from '../../runtime/metrics.ts';
import type * as ProcState from '../../sql/proc-state.ts';
import * as Transitions from '../../sql/transitions.ts';
import { decide } from '../failures.ts';
import { logOf, type Member, type MessageRef } from './batch.ts';
import type { Business } from './business.ts';
import type { Done, PumpDeps } from './deps.ts';
import type { TailGate } from './tail.ts';

export const mirrorFailure = (err: unknown): Failure => ({ cls: 'INFRA', service: 'redis', detail: `mirror step (Redis) failed after the business commit: ${describe(err)}` });

/** The tail's outcomes; a failed mirror step is recorded on its first message. */
export const settleTail = (deps: PumpDeps, tail: TailGate<Member>) => tail.settle((first, err) => fail(deps, first, mirrorFailure(err)));

/** The mirror step now, the terminal statement (on deps.terminalDb) after it: while the next batch runs (tail.ts). */
export function startTail(deps: PumpDeps, tail: TailGate<Member>, applied: Member[], biz: Business, started: number): void {
  const t0 = performance.now();
  let t1 = t0;
  const mirror = deps.mirror.sync(biz.mirror, biz.known).then(() => {
    t1 = performance.now();
    if (deps.timings) deps.timings.mirror = (deps.timings.mirror ?? 0) + (t1 - t0);
    deps.tracer?.step(applied[0].h, 'mirror');
  });
  tail.start(applied, mirror, async () => {
    deps.crash?.('pump.before-terminal');
    const became = await terminal(deps, deps.terminalDb, applied, started);
    if (deps.timings) deps.timings.terminal = (deps.timings.terminal ?? 0) + (performance.now() - t1);
    return became;
  });
}

/** Count a terminal outcome (after its commit); `kindLabel` bounded (HandlerRegistry.metricKindOf). */
export function countTerminal(state: ProcState.TerminalState, reason: string | null, kindLabel: string): void {
  metrics.messages.inc({ kind: kindLabel, state, reason: reasonLabel(reason) });
  if (reason?.startsWith('duplicate-of:')) metrics.identityDuplicates.inc();
}

/** The terminal step: every applied outcome becomes terminal (one statement); logged and counted per message. */
export async function terminal(deps: PumpDeps, db: Db, applied: Member[], started: number): Promise<Done[]> {
  const became = await Transitions.markAppliedTerminal(
    db,
    applied.map((member) => member.h.msg_id),
    deps.clock.now(),
  );
  deps.tracer?.applied(applied, became);
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
export async function fail(deps: PumpDeps, m: MessageRef, f: Failure): Promise<Done> {
  const decision = await Transitions.recordFailure(deps.session, m.h.msg_id, f, (h) => decide(f, h, deps.failures), deps.clock.now(), m.kind, m.identityToBind);
  metrics.failures.inc({ class: f.cls }); // committed: a final (DEAD) attempt is counted as a FAILED one is
  deps.tracer?.failed(m, decision.next, decision.reasonClass);
  if (decision.next === 'DEAD') {
    countTerminal('DEAD', decision.reason, deps.registry.metricKindOf(m.kind));
    logOf(deps, m).warn({ state: 'DEAD', reason: decision.reason }, 'message dead');
  } else logOf(deps, m)[f.cls === 'INFRA' ? 'warn' : 'error']({ state: 'FAILED', errorClass: f.cls, reason: decision.reason, retryInMs: decision.retryInMs }, 'message failed');
  return { msgId: m.h.msg_id, state: decision.next };
}
