// Lifecycle job: the flight history purge (D1): FLIGHT_SCHD rows that became history are
// archived to FLIGHT_HISTORY and deleted, the Redis keys of purged ACTIVE flights deleted (owed
// keys retried), and msgx_flights_without_operation_day refreshed. Index of the jobs: tasks.ts.
import { LOCKS } from '../db/postgres.ts';
import { readBodies } from '../pipeline/inbox.ts';
import { withTimeout } from '../core/timeout.ts';
import { flightKey } from '../flight/mirror.ts';
import { isoLocal, toJson } from '../flight/state.ts';
import { insertMsgEvents, loadStates, removePendingSchdRows, upsertStateRows, type MsgEvent } from '../flight/store.ts';
import { wake } from '../sql/jobs.ts';
import { DISPATCH_TASK } from '../core/tasks.ts';
import { msgTombstone } from '../contract/kafka.ts';
import { metrics } from '../runtime/metrics.ts';
import { operationDayOf } from '../sis/values.ts';
import { raiseVersionFloors } from '../flight/floor.ts';
import * as Flight from '../sql/flight/purge.ts';
import * as History from '../sql/history.ts';
import * as Locks from '../sql/locks.ts';
import * as ProcState from '../sql/proc-state.ts';
import { batches, before, count, IN_PROCESS, underPipelineLock, type PurgeOptions, type PurgeSession, type RetentionDeps } from './common.ts';

/** Flight ids a raw SIS body names: FLID, MAID (a shared flight's master) and TAID, as element or attribute. */
const FLIGHT_ID_TAGS = /<(FLID|MAID|TAID)>\s*([^<\s]+)\s*<\/\1>|\b(?:FLID|MAID|TAID)\s*=\s*"([^"]+)"/g;
export function flightIdsIn(body: string): string[] {
  return [...body.matchAll(FLIGHT_ID_TAGS)].map((m) => (m[2] ?? m[3]).trim()).filter(Boolean);
}

/**
 * The flights open (PENDING/FAILED) messages address: every flight id their raw inbox bodies
 * name, whether or not the message has changed anything yet (a held head changed nothing and
 * no flight's last_msg_id points at it). Bodies are read once per purge run (`cache`, by
 * MSG_ID: a body never changes). Conservative: a FLID merely mentioned is protected too.
 */
async function flightsOfOpenMessages(d: RetentionDeps, cache: Map<number, string[]>): Promise<Set<string>> {
  const open = await ProcState.listOpenIds(d.db);
  const ids = open.map((r) => Number(r.msg_id));
  const unread = ids.filter((id) => !cache.has(id));
  for (let i = 0; i < unread.length; i += 500) {
    const chunk = unread.slice(i, i + 500);
    const bodies = await withTimeout(d.retention.timeoutMs, 'inbox bodies of open messages', readBodies(d.inbox, chunk));
    for (const id of chunk) cache.set(id, flightIdsIn(bodies.get(id) ?? ''));
  }
  return new Set(ids.flatMap((id) => cache.get(id) ?? []));
}

// ---------------------------------------------------------------------------------------------
// flight history purge (D1)

/** The history rule at one instant. */
export interface HistoryRule {
  now: Date;
  /** DELETED flights whose DELETED_AT is before this are history. */
  deletedBefore: Date;
  /** Flights whose OPERATION_DAY is before this day (the day containing now − purge-after) are history. */
  dayBefore: string;
}

export function historyRule(d: Pick<RetentionDeps, 'clock' | 'retention' | 'airport'>): HistoryRule {
  const now = d.clock.now();
  const deletedBefore = before(d, 'historyPurgeAfterMs');
  return { now, deletedBefore, dayBefore: operationDayOf(deletedBefore, d.airport.timezone, d.airport.dayCutover) };
}

/** Which rule makes this flight history, or null. DELETED wins (no tombstone is owed then). */
export function historyReason(f: { state: string; deleted_at: Date | null; operation_day: string | null }, rule: HistoryRule): 'DELETED' | 'AGE' | null {
  if (f.state === 'DELETED' && f.deleted_at !== null && f.deleted_at.getTime() < rule.deletedBefore.getTime()) return 'DELETED';
  if (f.operation_day !== null && f.operation_day < rule.dayBefore) return 'AGE';
  return null;
}

/**
 * Archive and delete flights that became history. One purger at a time (HISTORY_PURGE_LEADER
 * try-lock: a second one returns 0 at once). Candidates are read without locks; each batch then
 * runs under PIPELINE_LOCK in one transaction that re-checks the rule, the STATE_VERSION read and
 * "not addressed by an open message" (its last_msg_id open, or its id named in the raw body of any PENDING/FAILED message), writes FLIGHT_HISTORY, tombstones ACTIVE flights,
 * raises the version floor and deletes; the Redis keys are deleted after the commit, still under
 * the lock (so the pump cannot write a reappeared FLID's key in between).
 * Also sets msgx_flights_without_operation_day.
 */
export async function purgeFlights(d: RetentionDeps, session: PurgeSession, o: PurgeOptions = {}): Promise<number> {
  const got = await Locks.tryLock(session.db, LOCKS.HISTORY_PURGE_LEADER);
  if (!got?.ok) {
    d.log.info('retention: another history purge is running; skipped');
    return 0;
  }
  try {
    await refreshFlightsWithoutOperationDay(d);
    const owed = await Flight.countPurgeRedisOwed(d.db);
    if (owed!.n > 0) await underPipelineLock(session, o, () => retryRedisDeletes(d));
    let after = '';
    const bodies = new Map<number, string[]>();
    await flightsOfOpenMessages(d, bodies); // read the backlog's bodies before taking the pipeline lock
    const n = await batches(o, 200, async (batch) => {
      const rule = historyRule(d);
      const c = await Flight.listPurgeCandidates(d.db, after, rule.deletedBefore, rule.dayBefore, [...IN_PROCESS], batch);
      if (c.length === 0) return [0, 0];
      after = c[c.length - 1].flid;
      await o.beforeLock?.(c);
      const purged = await underPipelineLock(session, o, async () => purgeBatch(d, session, c, rule, await flightsOfOpenMessages(d, bodies)));
      return [purged, c.length];
    });
    if (n) {
      const rule = historyRule(d);
      d.log.info(
        { purged: n, operationDayBefore: rule.dayBefore, deletedBefore: rule.deletedBefore, purgeAfterMs: d.retention.historyPurgeAfterMs },
        `retention: ${n} flight(s) archived to FLIGHT_HISTORY and deleted: operation day before ${rule.dayBefore} or DELETED before ${rule.deletedBefore.toISOString()} (msgx.history.purge-after); GET /flights/:flid answers 404 naming the purge, GET /flights/:flid/timeline shows their versions`,
      );
    }
    return n;
  } finally {
    await Locks.unlock(session.db, LOCKS.HISTORY_PURGE_LEADER).catch(() => {});
  }
}

class Doubt extends Error {}

type LockedFlight = Flight.PurgeFamilyRow;

/**
 * One purge transaction. Master/shared flights are decided per family (a master and the flights
 * whose MAID names it): a family is purged only when every ACTIVE member is history, so no live
 * MAFL or MAID is left pointing at a purged flight. Returns the number of flights purged; 0 when
 * in doubt (the transaction is rolled back).
 */
async function purgeBatch(d: RetentionDeps, session: PurgeSession, candidates: { flid: string; state_version: number }[], rule: HistoryRule, addressed: Set<string>): Promise<number> {
  const tz = d.airport.timezone;
  const now = rule.now;
  const read = new Map(candidates.map((c) => [c.flid, Number(c.state_version)]));
  let activePurged: string[] = [];
  let purged = 0;
  try {
    await session.db.transaction().execute(async (tx) => {
      const flids = [...read.keys()];
      const rows: LockedFlight[] = await Flight.lockPurgeFamilies(tx, flids, [...IN_PROCESS]);
      const ok = (f: LockedFlight) => historyReason(f, rule) !== null && !f.in_process && !addressed.has(f.flid) && (!read.has(f.flid) || read.get(f.flid) === Number(f.state_version));
      const families = new Map<string, LockedFlight[]>();
      for (const f of rows) {
        const root = f.maid ?? f.flid;
        families.set(root, [...(families.get(root) ?? []), f]);
      }
      const take: LockedFlight[] = [];
      for (const members of families.values()) {
        if (members.some((f) => f.state === 'ACTIVE' && !ok(f))) continue;
        take.push(...members.filter(ok));
      }
      const skipped = [...read.keys()].filter((f) => !take.some((t) => t.flid === f));
      if (skipped.length) d.log.debug({ flids: skipped }, 'retention: flights changed, in process or linked to a live flight; kept this round');
      if (take.length === 0) return;

      const states = await loadStates(
        tx,
        take.map((f) => f.flid),
        tz,
      );
      for (const f of take) {
        const s = states.get(f.flid);
        if (!s || s.STATE_VERSION !== Number(f.state_version)) throw new Doubt(`complete state of ${f.flid} not readable at version ${f.state_version}`);
      }
      // 1. history (D1: written and confirmed before anything is deleted)
      const h = await History.archive(
        tx,
        take.map((f) => f.flid),
        take.map((f) => Number(f.state_version)),
        take.map((f) => f.operation_day),
        take.map((f) => f.state),
        take.map((f) => historyReason(f, rule)!),
        take.map((f) => JSON.stringify(toJson(states.get(f.flid)!))),
        now,
      );
      if (h !== take.length) throw new Doubt('history rows not all written');

      // 2. ACTIVE flights purged by age: tombstone (version + 1, no MSG_ID) on the msg topic and
      // on the state topic (its state row at the same version: a Kafka tombstone), no pending schd row
      const active = take.filter((f) => f.state === 'ACTIVE');
      const tombstones: MsgEvent[] = active.map((f) => {
        const v = Number(f.state_version) + 1;
        return { flid: f.flid, stateVersion: v, payload: msgTombstone({ flid: f.flid, stateVersion: v, updatedAt: isoLocal(now, tz) }) };
      });
      await insertMsgEvents(tx, tombstones, now);
      await upsertStateRows(tx, tombstones, now);
      await removePendingSchdRows(
        tx,
        active.map((f) => f.flid),
      );
      if (tombstones.length) {
        await wake(tx, DISPATCH_TASK.msg);
        await wake(tx, DISPATCH_TASK.state);
      }

      // 3. version floor: a reappearing FLID continues above what consumers saw
      await raiseVersionFloors(
        tx,
        take.map((f) => ({ flid: f.flid, stateVersion: Number(f.state_version) + (f.state === 'ACTIVE' ? 1 : 0) })),
        now,
      );
      // 4. Redis keys owed (deleted after the commit; retried next round if that fails)
      if (active.length) {
        await Flight.owePurgeRedis(
          tx,
          active.map((f) => f.flid),
          now,
        );
      }
      // 5. delete (detail rows cascade), conditioned on the version re-checked above
      const del = await Flight.purgeDelete(
        tx,
        take.map((f) => f.flid),
        take.map((f) => Number(f.state_version)),
      );
      if (del !== take.length) throw new Doubt('flight rows changed under the purge');
      purged = take.length;
      activePurged = active.map((f) => f.flid);
    });
  } catch (e) {
    const doubt = e instanceof Doubt || (e as { code?: string }).code === '23505'; // e.g. a history row already there
    if (!doubt) throw e;
    if (candidates.length > 1) {
      // Isolate the flight in doubt: the others go one by one (still under the same lock).
      let n = 0;
      for (const c of candidates) n += await purgeBatch(d, session, [c], rule, addressed);
      return n;
    }
    d.log.error({ flid: candidates[0].flid, err: (e as Error).message }, 'retention: flight in doubt; not purged (D1), needs an operator');
    return 0;
  }
  count('flight_schd', purged);
  if (activePurged.length) await deleteRedisKeys(d, activePurged);
  return purged;
}

/** DEL the keys, then forget them; a Redis failure leaves them owed for the next round. */
async function deleteRedisKeys(d: RetentionDeps, flids: string[]): Promise<boolean> {
  if (flids.length === 0) return true;
  try {
    await d.redis.del(...flids.map(flightKey));
  } catch (e) {
    d.log.warn({ err: e, flids: flids.length }, 'retention: Redis keys of purged flights not deleted; retried next round');
    return false;
  }
  await Flight.forgetPurgeRedis(d.db, flids);
  return true;
}

/** Keys owed by an earlier round. A FLID that is ACTIVE again belongs to the pump's mirror: just forget it. */
async function retryRedisDeletes(d: RetentionDeps): Promise<void> {
  const r = await Flight.listPurgeRedisOwed(d.db);
  const live = r.filter((x) => x.live).map((x) => x.flid);
  if (live.length) await Flight.forgetPurgeRedis(d.db, live);
  await deleteRedisKeys(
    d,
    r.filter((x) => !x.live).map((x) => x.flid),
  );
}

/** msgx_flights_without_operation_day: ACTIVE flights with no day, untouched for longer than purge-after. */
export async function refreshFlightsWithoutOperationDay(d: RetentionDeps): Promise<number> {
  const r = await Flight.countWithoutOperationDay(d.db, historyRule(d).deletedBefore);
  const n = Number(r!.n);
  metrics.flightsWithoutOperationDay.set(n);
  return n;
}

// ---------------------------------------------------------------------------------------------
