// The pump's loop: drain holds PIPELINE_LOCK across batches (released within LOCK_SLICE_MS when
// the history purge waits for it) and applies batches until none is ready; after an unexpected
// database error the batch is tried again smaller, down to one message. tick applies one batch of
// one message (tools and tests that step through the queue). The steps of a batch: steps.ts.
// The pump never writes the inbox (backfill does), never reorders, never moves a message to DEAD
// for its age.
import { TimeBudget } from '../../core/budget.ts';
import type { Ahead } from './ahead.ts';
import type { Member } from './batch.ts';
import type { Done, PumpDeps, TickResult } from './deps.ts';
import { applyBatch, settleTail } from './steps.ts';
import { TailGate } from './tail.ts';
import { PUMP } from '../../core/tuning.ts';

export { inlineDecoding } from './ahead.ts';
export { type PumpDeps, pumpSettings, type TickResult } from './deps.ts';
export { withSqlPorts } from './ports.ts';

const LOCK_SLICE_MS = PUMP.lockSliceMs;

/** Take PIPELINE_LOCK; whatever the domains kept from earlier batches is forgotten (the purge may have run meanwhile). */
const lock = async (deps: PumpDeps) => {
  await deps.ports.lock();
  deps.registry.resetDomains();
};

/** Apply batches until none is ready, the budget is spent or `shouldStop` says so. */
export async function drain(deps: PumpDeps, budgetMs: number, shouldStop: () => boolean = () => false): Promise<{ processed: number; next: 'now' | 'idle' | Date }> {
  const budget = new TimeBudget(budgetMs);
  const maxBatch = deps.pump.applyBatch;
  let batchSize = maxBatch;
  let processed = 0;
  await lock(deps);
  let lockSlice = new TimeBudget(LOCK_SLICE_MS);
  // the next batch read ahead and the last batch's tail live for this drain only
  const ahead: Ahead = { next: null };
  const tail = new TailGate<Member>();
  const carry = { ahead, tail, overlap: true };
  const count = (xs: Done[]) => (processed += xs.filter((entry) => entry.state !== 'FAILED').length);
  const exit = async (next: 'now' | 'idle' | Date) => {
    const settled = await settleTail(deps, tail);
    count(settled);
    // a message whose mirror step failed as the tail settled is now a FAILED head with a retry
    // time: the next run works it out ('idle' would leave it to the keep-alive, a minute later)
    return { processed, next: settled.some((entry) => entry.state === 'FAILED') ? ('now' as const) : next };
  };
  try {
    while (!shouldStop()) {
      if (budget.spent()) return await exit('now');
      if (lockSlice.spent()) {
        // let a waiting history purge in (what the domains kept is then forgotten)
        if (await deps.ports.lockWanted()) {
          count(await settleTail(deps, tail));
          await deps.ports.unlock();
          await lock(deps);
        }
        lockSlice = new TimeBudget(LOCK_SLICE_MS);
      }
      const result = await applyBatch(deps, batchSize, carry);
      if (result.kind === 'idle') return await exit('idle');
      if (result.kind === 'wait') return await exit(result.until);
      count(result.done);
      batchSize = result.retrySmaller ?? maxBatch;
    }
    return await exit('now');
  } finally {
    // never leave a mirror step writing Redis once PIPELINE_LOCK is released
    await tail.ended();
    await deps.ports.unlock();
  }
}

/** One batch of one message (the head), every step ended before it returns. */
export async function tick(deps: PumpDeps): Promise<TickResult> {
  await lock(deps);
  try {
    const result = await applyBatch(deps, 1, { ahead: null, tail: new TailGate<Member>(), overlap: false });
    if (result.kind !== 'done') return result;
    const [first] = result.done;
    // a batch of one ends with its outcome; none only when it was rolled back for a retry, which a batch of one never is
    if (!first) throw new Error('tick: the batch of one ended without an outcome');
    return { kind: 'processed', ...first };
  } finally {
    await deps.ports.unlock();
  }
}
