// SQL of MSG_EVENT (the outbox of the three dispatchers): the msg events the pump writes outside
// its batch write, and a flight's events for its timeline. Statement conventions: lib/db/statement.ts.
import { type Executor, pgRows, pgRun, pgStatement, type RowOf } from '../../db/statement.ts';

// ---- lib/flight/store.ts
// (The pump's batch write also writes MSG_EVENT, inside flight.write_batch: lib/sql/flight.ts.)

const insertMsgEventsStatement = pgStatement<[now: Date, flids: string[], versions: number[], payloads: string[]]>(
  'outbox.insert_msg_events',
  `insert into msg_event (event_id, target, flid, state_version, payload, created_at)
   select x.id, 'msg', x.flid, x.ver, x.p || jsonb_build_object('EVENT_ID', x.id), $1::timestamptz
   from (select nextval('msg_event_id_seq') as id, u.flid, u.ver, u.p
         from (select * from unnest($2::text[], $3::integer[], $4::jsonb[]) with ordinality as t(flid, ver, p, ord)
               order by ord) u) x`,
);
/** msg topic events for the FLIDs $2 at versions $3 with payloads $4, created at $1: EVENT_IDs taken from the global sequence in array order. */
export function insertMsgEvents(db: Executor, now: Date, flids: string[], versions: number[], payloads: string[]): Promise<number> {
  return pgRun(db, insertMsgEventsStatement, now, flids, versions, payloads);
}

const removePendingSchdStatement = pgStatement<[flids: string[]]>(
  'outbox.remove_pending_schd',
  "delete from msg_event where target = 'schd' and state in ('PENDING', 'DEAD') and flid = any($1::text[])",
);
/** Deleted flights never go to schd: drop the pending (or dead) schd rows of the FLIDs $1. */
export function removePendingSchd(db: Executor, flids: string[]): Promise<number> {
  return pgRun(db, removePendingSchdStatement, flids);
}

// ---- lib/flight/timeline.ts

const timelineEventsStatement = pgStatement<[flid: string], { state_version: number; payload: Record<string, unknown>; created_at: Date }>(
  'outbox.timeline_events',
  "select state_version, payload, created_at from msg_event where target = 'msg' and flid = $1::text order by event_id",
);
/** The msg outbox events of flight $1 in EVENT_ID order (what is left of versions whose change record is gone). */
export function readTimelineEvents(db: Executor, flid: string): Promise<RowOf<typeof timelineEventsStatement>[]> {
  return pgRows(db, timelineEventsStatement, flid);
}
