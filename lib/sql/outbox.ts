// SQL of MSG_EVENT (the outbox of both dispatchers). Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/flight/store.ts
// (The pump's batch write also writes MSG_EVENT, inside flight.write_batch: lib/sql/flight.ts.)

/** msg topic events for the FLIDs $2 at versions $3 with payloads $4, created at $1: EVENT_IDs taken from the global sequence in array order. */
export const insertMsgEvents = pgStatement<[now: Date, flids: string[], versions: number[], payloads: string[]]>(
  'outbox.insert_msg_events',
  `insert into msg_event (event_id, target, flid, state_version, payload, created_at)
   select x.id, 'msg', x.flid, x.ver, x.p || jsonb_build_object('EVENT_ID', x.id), $1::timestamptz
   from (select nextval('msg_event_id_seq') as id, u.flid, u.ver, u.p
         from (select * from unnest($2::text[], $3::integer[], $4::jsonb[]) with ordinality as t(flid, ver, p, ord)
               order by ord) u) x`,
);

/** schd topic: one row per FLID ($2, versions $3), upserted back to PENDING with a new EVENT_ID and the latest version, at $1. */
export const upsertSchdRows = pgStatement<[now: Date, flids: string[], versions: number[]]>(
  'outbox.upsert_schd_rows',
  `insert into msg_event (target, flid, state_version, payload, created_at)
   select 'schd', t.flid, t.ver, jsonb_build_object('FLID', t.flid, 'STATE_VERSION', t.ver), $1::timestamptz
   from unnest($2::text[], $3::integer[]) with ordinality as t(flid, ver, ord)
   order by t.ord
   on conflict (flid) where target = 'schd' do update set
     event_id = excluded.event_id, state_version = excluded.state_version, payload = excluded.payload,
     state = 'PENDING', attempts = 0, next_attempt_at = null, sent_at = null,
     kafka_partition = null, kafka_offset = null, last_error = null, created_at = excluded.created_at`,
);

/** Deleted flights never go to schd: drop the pending (or dead) schd rows of the FLIDs $1. */
export const removePendingSchd = pgStatement<[flids: string[]]>(
  'outbox.remove_pending_schd',
  "delete from msg_event where target = 'schd' and state in ('PENDING', 'DEAD') and flid = any($1::text[])",
);

// ---- lib/flight/timeline.ts

/** The msg outbox events of flight $1 in EVENT_ID order (what is left of versions whose change record is gone). */
export const timelineEvents = pgStatement<[flid: string], { state_version: number; payload: Record<string, unknown>; created_at: Date }>(
  'outbox.timeline_events',
  "select state_version, payload, created_at from msg_event where target = 'msg' and flid = $1::text order by event_id",
);
