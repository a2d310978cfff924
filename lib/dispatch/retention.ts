// Retention of the outbox (docs/consumers.md "Topic settings"): SENT rows older than
// msgx.pipeline.event-retention (by SENT_AT) are deleted in bounded batches. DEAD rows stay
// until an operator acts; SKIPPED rows stay as the record of that action; PENDING never goes.
// Runs as a graphile-worker crontab task of the msg-dispatch process (the retention process
// can take it over later: the function is all there is).
import { DISPATCH_RETENTION_TASK } from '../core/tasks.ts';
import type { Clock } from '../core/clock.ts';
import type { Executor } from '../db/statement.ts';
import { metrics } from '../runtime/metrics.ts';
import { deleteSentBefore } from './outbox.ts';
import { TimeBudget } from '../core/budget.ts';
import { DISPATCH } from '../core/tuning.ts';

export const RETENTION_CRONTAB = `0 * * * * ${DISPATCH_RETENTION_TASK} ?jobKey=${DISPATCH_RETENTION_TASK}&max=1`;

/** Delete old SENT rows, `batch` per statement, until none is left or the budget is spent. Returns the count. */
export async function purgeSentEvents(db: Executor, clock: Clock, o: { retentionMs: number; batch?: number; budgetMs?: number }): Promise<number> {
  const cutoff = new Date(clock.now().getTime() - o.retentionMs);
  const batch = o.batch ?? DISPATCH.retentionBatch;
  const budget = new TimeBudget(o.budgetMs ?? DISPATCH.retentionBudgetMs);
  let total = 0;
  for (;;) {
    const n = await deleteSentBefore(db, cutoff, batch);
    total += n;
    if (n) metrics.retentionDeleted.inc({ object: 'msg_event' }, n);
    if (n < batch || budget.spent()) return total;
  }
}
