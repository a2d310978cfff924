// Dead-letter actions (dispatch.md), shared by the CLI scripts, the HTTP routes and the
// graphile-worker tasks:
//   dispatch-replay  DEAD → PENDING (attempts 0): sent again in EVENT_ID order, and the FLID's
//                    held events follow it;
//   dispatch-skip    DEAD → SKIPPED (kept, visible): releases the FLID's held events.
// The dispatcher is woken in the same transaction.
import type { Task } from 'graphile-worker';
import { wake } from '../pipeline/transitions.ts';
import type { Db } from '../db/postgres.ts';
import type { Logger } from '../runtime/log.ts';
import type { Target } from './metrics.ts';
import { replayDead, skipDead, type DeadSelector } from './outbox.ts';

import { DISPATCH_TASK, TASK } from '../core/tasks.ts';

export { DISPATCH_TASK };

export interface ReplaySelector {
  eventIds?: number[];
  flid?: string;
  /** Every DEAD row (after an outage longer than the backoff ladder), optionally of one target. */
  all?: boolean;
  target?: Target;
}

function check(s: ReplaySelector, action: string): DeadSelector {
  const given = [s.eventIds?.length ? 1 : 0, s.flid !== undefined ? 1 : 0, s.all ? 1 : 0].reduce((a, b) => a + b, 0);
  if (given !== 1) throw new Error(`${action} needs exactly one of: event ids, a FLID, all`);
  if (s.target !== undefined && s.target !== 'msg' && s.target !== 'schd') throw new Error(`${action}: target must be msg or schd`);
  return s;
}

async function act(db: Db, s: DeadSelector, op: typeof replayDead): Promise<number[]> {
  return db.transaction().execute(async (tx) => {
    const rows = await op(tx, s);
    for (const t of new Set(rows.map((r) => r.target))) await wake(tx, DISPATCH_TASK[t]);
    return rows.map((r) => r.eventId);
  });
}

/** DEAD → PENDING, attempts 0. Returns the event ids replayed (only DEAD rows are touched). */
export async function dispatchReplay(db: Db, s: ReplaySelector): Promise<number[]> {
  return act(db, check(s, 'dispatch-replay'), replayDead);
}

/** DEAD → SKIPPED. Returns the event ids skipped (only DEAD rows are touched). */
export async function dispatchSkip(db: Db, s: ReplaySelector): Promise<number[]> {
  return act(db, check(s, 'dispatch-skip'), skipDead);
}

/** The graphile-worker tasks 'dispatch-replay' and 'dispatch-skip' (payload = the selector). */
export function dispatchOperatorTasks(db: Db, log?: Logger): Record<typeof TASK.dispatchReplay | typeof TASK.dispatchSkip, Task> {
  return {
    [TASK.dispatchReplay]: async (payload) => {
      const ids = await dispatchReplay(db, payload as ReplaySelector);
      log?.info({ eventIds: ids }, 'dispatch-replay task: DEAD events back to PENDING');
    },
    [TASK.dispatchSkip]: async (payload) => {
      const ids = await dispatchSkip(db, payload as ReplaySelector);
      log?.info({ eventIds: ids }, 'dispatch-skip task: DEAD events SKIPPED');
    },
  };
}
