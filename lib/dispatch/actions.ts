// Dead-letter actions (docs/operations.md "Kafka dead letters"), shared by the CLI scripts, the HTTP routes and the
// graphile-worker tasks:
//   dispatch-replay  DEAD → PENDING (attempts 0): sent again in EVENT_ID order, and the FLID's
//                    held events follow it;
//   dispatch-skip    DEAD → SKIPPED (kept, visible): releases the FLID's held events.
// The dispatcher is woken in the same transaction.
import type { Task } from 'graphile-worker';
import { wakeAll } from '../sql/jobs.ts';
import type { Db } from '../db/postgres.ts';
import type { Logger } from '../runtime/log.ts';
import type { Target } from './plan.ts';
import { replayDead, skipDead, type DeadSelector } from './outbox.ts';
import * as Outbox from '../sql/outbox/operator.ts';

import { DISPATCH_TASK, TASK } from '../core/tasks.ts';

export { DISPATCH_TASK };

export interface ReplaySelector {
  eventIds?: number[];
  flid?: string;
  /** Every DEAD row (after an outage longer than the backoff ladder), optionally of one target. */
  all?: boolean;
  target?: Target;
}

function check(s: ReplaySelector): DeadSelector {
  const given = [s.eventIds?.length ? 1 : 0, s.flid !== undefined ? 1 : 0, s.all ? 1 : 0].reduce((a, b) => a + b, 0);
  if (given !== 1) throw new Error('give exactly one of: event ids, a FLID, all');
  if (s.target !== undefined && s.target !== 'msg' && s.target !== 'schd' && s.target !== 'state') throw new Error('target must be msg, schd or state');
  return s;
}

/** What an action did, and for what it was asked but left, why (never a bare "0"). */
export interface DispatchReport {
  done: number[];
  untouched: string[];
  /** True when event ids were named (each one was asked for). */
  byIds: boolean;
}

/** Why a named event that is not DEAD was left. */
function whyLeft(e: { state: string; held_by: number | null; flid: string }, verb: string): string {
  if (e.state === 'PENDING' && e.held_by !== null)
    return `PENDING, held behind DEAD event ${e.held_by} of flight ${e.flid}: it is sent once ${e.held_by} is sent again (npm run dispatch-replay -- ${e.held_by}) or skipped (npm run dispatch-skip -- ${e.held_by})`;
  return `${e.state}, not DEAD: nothing to ${verb}`;
}

async function act(db: Db, s: DeadSelector, op: typeof replayDead, verb: string): Promise<DispatchReport> {
  return db.transaction().execute(async (tx) => {
    const named = s.eventIds?.length ? await Outbox.selectEvents(tx, s.eventIds) : [];
    const rows = await op(tx, s);
    await wakeAll(
      tx,
      rows.map((r) => DISPATCH_TASK[r.target]),
    );
    const done = rows.map((r) => r.eventId);
    const doneSet = new Set(done);
    if (s.eventIds?.length) {
      const found = new Map(named.map((e) => [e.event_id, e]));
      const untouched = s.eventIds
        .filter((id) => !doneSet.has(id))
        .map((id) => {
          const e = found.get(id);
          return e ? `${id}: ${whyLeft(e, verb)}` : `${id}: no such event`;
        });
      return { done, untouched, byIds: true };
    }
    const scope = s.flid !== undefined ? `flight ${s.flid}` : s.target ? `target ${s.target}` : 'the outbox';
    return { done, untouched: done.length ? [] : [`no DEAD event in ${scope}`], byIds: false };
  });
}

/** DEAD → PENDING, attempts 0 (only DEAD rows are touched), with why named events were left. */
export async function dispatchReplayReport(db: Db, s: ReplaySelector): Promise<DispatchReport> {
  return act(db, check(s), replayDead, 'send again');
}

/** DEAD → SKIPPED (only DEAD rows are touched), with why named events were left. */
export async function dispatchSkipReport(db: Db, s: ReplaySelector): Promise<DispatchReport> {
  return act(db, check(s), skipDead, 'skip');
}

/** DEAD → PENDING, attempts 0. Returns the event ids replayed (only DEAD rows are touched). */
export async function dispatchReplay(db: Db, s: ReplaySelector): Promise<number[]> {
  return (await dispatchReplayReport(db, s)).done;
}

/** DEAD → SKIPPED. Returns the event ids skipped (only DEAD rows are touched). */
export async function dispatchSkip(db: Db, s: ReplaySelector): Promise<number[]> {
  return (await dispatchSkipReport(db, s)).done;
}

/** The graphile-worker tasks 'dispatch-replay' and 'dispatch-skip' (payload = the selector). */
export function dispatchOperatorTasks(db: Db, log?: Logger): Record<typeof TASK.dispatchReplay | typeof TASK.dispatchSkip, Task> {
  return {
    [TASK.dispatchReplay]: async (payload) => {
      const r = await dispatchReplayReport(db, payload as ReplaySelector);
      log?.info({ eventIds: r.done }, 'dispatch-replay task: DEAD events back to PENDING');
      if (r.untouched.length) log?.warn({ untouched: r.untouched }, 'dispatch-replay task: events left as they are');
    },
    [TASK.dispatchSkip]: async (payload) => {
      const r = await dispatchSkipReport(db, payload as ReplaySelector);
      log?.info({ eventIds: r.done }, 'dispatch-skip task: DEAD events SKIPPED');
      if (r.untouched.length) log?.warn({ untouched: r.untouched }, 'dispatch-skip task: events left as they are');
    },
  };
}
