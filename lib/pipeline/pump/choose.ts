// chooseBatch (docs/design.md "The pump's steps"): the head and the open messages after it (up
// to K, cut before a FAILED one); a FAILED head whose attempts are used up → DEAD(EXHAUSTED); one
// not yet due waits (an INFRA failure that carried its service: that service is probed every
// PROBE_EVERY_MS and the head is tried as soon as it answers).
import { PUMP } from '../../core/tuning.ts';
import { withTimeout } from '../../core/timeout.ts';
import * as ProcState from '../../sql/proc-state.ts';
import * as Transitions from '../../sql/transitions.ts';
import { isExhausted, probeTarget } from '../failures.ts';
import type { Ahead } from './ahead.ts';
import { refOf } from './batch.ts';
import { type BatchResult, done, type PumpDeps } from './deps.ts';
import { countTerminal } from './terminal.ts';

/** While the head is held for INFRA, the failed service is probed this often; work resumes when it answers. */
const PROBE_EVERY_MS = PUMP.probeEveryMs;

export type Chosen = { kind: 'batch'; heads: ProcState.HeadRow[]; following: ProcState.HeadRow[] } | Exclude<BatchResult, { retrySmaller: number }>;

/** chooseBatch: the head and the open messages after it (reading ahead: also the next batch's candidates), or why there is no batch now. */
export async function chooseBatch(deps: PumpDeps, limit: number, ahead: Ahead | null, exclude: ReadonlySet<number>): Promise<Chosen> {
  // the tail's messages (applied, not yet terminal) are set aside before the cut: cut first, a
  // FAILED message right behind them left no row, and the drain ended 'idle' instead of waiting for it
  const rows = openHeads((await ProcState.readHeads(deps.session, (ahead ? limit * 2 : limit) + exclude.size)).filter((r) => !exclude.has(r.msg_id)));
  const heads = rows.slice(0, limit);
  const head = heads[0];
  if (!head) return { kind: 'idle' };
  if (head.state === 'FAILED') {
    if (isExhausted({ attempts: head.attempts, errorClass: head.error_class }, deps.failures)) {
      const reason = `EXHAUSTED(${head.error_class}): attempts used up`;
      await Transitions.markTerminal(deps.session, head.msg_id, 'DEAD', { reason, reasonClass: 'EXHAUSTED' }, deps.clock.now(), head.kind);
      countTerminal('DEAD', reason, deps.registry.metricKindOf(head.kind));
      deps.tracer?.failed(refOf(head), 'DEAD', 'EXHAUSTED');
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

async function answers(probe: () => Promise<unknown>, deps: PumpDeps): Promise<boolean> {
  try {
    await withTimeout(Math.min(deps.pump.timeoutMs, PROBE_EVERY_MS), 'probe', probe());
    return true;
  } catch {
    return false;
  }
}
