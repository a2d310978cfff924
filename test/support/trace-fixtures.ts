// Hand-written records of the kind the pump writes for the trace and the timeline:
// PROC_STATE rows, PROC_ATTEMPT rows, FLIGHT_CHANGE rows and their outbox events, a live flight,
// a deleted one and an archived (purged) one. Used by the API and browser tests until the pump
// writes them itself (the corpus test checks the pump's own records).
import { sql } from 'kysely';
import type { QueryDb } from '../../lib/db/kysely.ts';
import type { ReasonClass } from '../../lib/core/errors.ts';
import { insertInboxRow } from '../../lib/pipeline/inbox.ts';
import { sisMessage, type TestServices } from './services.ts';

export const T0 = new Date('2026-12-01T00:30:00Z'); // 08:30 in Asia/Shanghai

export interface TraceFixture {
  /** SCHD/DNLD that created flights 16 and 17 (and 99, purged since). */
  create: number;
  /** FLOP/STND that moved 16 from stand 504 to 21: two failed attempts first. */
  stand: number;
  /** FLOP/FDEL that deleted 16: a tombstone event, sent. */
  fdel: number;
  /** DEAD(PROTOCOL). */
  protocol: number;
  /** DEAD(EXHAUSTED). */
  exhausted: number;
  /** SKIPPED. */
  skipped: number;
}

const at = (min: number) => new Date(T0.getTime() + min * 60_000);

async function proc(db: QueryDb, id: number, state: string, why: [reason: string, reasonClass: ReasonClass] | null, kind: string, min: number, extra: Record<string, unknown> = {}) {
  await db
    .insertInto('proc_state')
    .values({
      msg_id: id,
      state: state as never,
      reason: why?.[0] ?? null,
      reason_class: why?.[1] ?? null,
      kind,
      identity_key: `AODB|${id}|${kind}`,
      received_at: '2026-12-01 08:30:00' as never,
      enqueued_at: at(min),
      terminal_at: state === 'PENDING' || state === 'FAILED' ? null : at(min + 1),
      backfill_next_at: null,
      updated_at: at(min + 1),
      ...extra,
    } as never)
    .execute();
}

async function change(db: QueryDb, flid: string, v: number, msgId: number, kind: string, op: string, cause: string, changes: Record<string, [unknown, unknown]>, min: number) {
  await sql`insert into flight_change (flid, state_version, msg_id, kind, op, cause, changes, created_at)
            values (${flid}, ${v}, ${msgId}, ${kind}, ${op}, ${cause}, ${JSON.stringify(changes)}::json, ${at(min)})`.execute(db);
}

async function event(db: QueryDb, target: 'msg' | 'schd', flid: string, v: number, payload: Record<string, unknown>, sent: { partition: number; offset: string } | null, min: number) {
  await sql`insert into msg_event (target, flid, state_version, payload, state, sent_at, kafka_partition, kafka_offset, created_at)
            values (${target}, ${flid}, ${v}, ${JSON.stringify(payload)}::jsonb, ${sent ? 'SENT' : 'PENDING'}, ${sent ? at(min + 1) : null},
                    ${sent?.partition ?? null}, ${sent?.offset ?? null}, ${at(min)})`.execute(db);
}

async function flight(db: QueryDb, flid: string, state: 'ACTIVE' | 'DELETED', v: number, lastMsg: number, min: number) {
  await sql`insert into flight_schd (flid, state, state_version, operation_day, last_msg_id, created_at, updated_at, deleted_at, flno, stnd)
            values (${flid}, ${state}, ${v}, '2026-12-01', ${lastMsg}, ${at(0)}, ${at(min)}, ${state === 'DELETED' ? at(min) : null}, 'YG9061', '21')`.execute(db);
}

/** Write the fixture; pipeline and domain tables must be empty (resetPipeline + resetDomain). */
export async function writeTraceFixture(s: TestServices): Promise<TraceFixture> {
  const db = s.db;
  const ids: number[] = [];
  const kinds = ['SCHD/DNLD', 'FLOP/STND', 'FLOP/FDEL', 'FLOP/GATE', 'FLOP/GATE', 'ZZZZ/UPD'];
  for (const k of kinds) {
    const [type, styp] = k.split('/');
    ids.push(await insertInboxRow(s.inbox, { body: sisMessage({ type, styp }), received: '2026-12-01 08:30:00', type, styp, sndr: 'AODB' }));
  }
  const [create, stand, fdel, protocol, exhausted, skipped] = ids;
  await s.inbox.query('UPDATE cminmsgs SET CMINMSGS_DATE_PROCESSED = ? WHERE CMINMSGS_ID = ?', ['2026-12-01 08:32:00', create]);
  await proc(db, create, 'SUCCEEDED', null, kinds[0], 0, { backfill_at: at(2) });
  await proc(db, stand, 'SUCCEEDED', null, kinds[1], 5, { attempts: 2 });
  await proc(db, fdel, 'SUCCEEDED', null, kinds[2], 10);
  await proc(db, protocol, 'DEAD', ['PROTOCOL: GATE: GTYP="TOO" is not one of D, I', 'PROTOCOL'], kinds[3], 12);
  await proc(db, exhausted, 'DEAD', ['EXHAUSTED(INTERNAL): TypeError: handler bug', 'EXHAUSTED'], kinds[4], 13);
  await proc(db, skipped, 'SKIPPED', ['unsupported', 'UNSUPPORTED'], kinds[5], 14);
  await sql`insert into proc_attempt (msg_id, attempt_at, error_class, detail, next_state) values
            (${stand}, ${at(5)}, 'INTERNAL', 'TypeError: boom', 'FAILED'),
            (${stand}, ${at(6)}, 'INTERNAL', 'TypeError: boom again', 'FAILED'),
            (${protocol}, ${at(12)}, 'PROTOCOL', 'GATE: GTYP="TOO" is not one of D, I', 'DEAD')`.execute(db);

  // flight 16: created, stand changed, deleted by the FDEL
  await flight(db, '16', 'DELETED', 3, fdel, 10);
  await change(db, '16', 1, create, kinds[0], 'CREATE', 'MESSAGE', { FLNO: [null, 'YG9061'], STND: [null, '504'] }, 0);
  await change(db, '16', 2, stand, kinds[1], 'UPDATE', 'MESSAGE', { STND: ['504', '21'] }, 5);
  await change(db, '16', 3, fdel, kinds[2], 'DELETE', 'MESSAGE', { STATE: ['ACTIVE', 'DELETED'] }, 10);
  await event(db, 'msg', '16', 1, { FLID: '16', STATE_VERSION: 1, OP: 'UPSERT', MSG_ID: create, TYPE: 'SCHD', STYP: 'DNLD', CHANGED: ['FLNO', 'STND'] }, { partition: 2, offset: '40' }, 0);
  await event(db, 'msg', '16', 2, { FLID: '16', STATE_VERSION: 2, OP: 'UPSERT', MSG_ID: stand, TYPE: 'FLOP', STYP: 'STND', CHANGED: ['STND'] }, { partition: 2, offset: '41' }, 5);
  await event(db, 'msg', '16', 3, { FLID: '16', DELETED: true, STATE_VERSION: 3, MSG_ID: fdel }, { partition: 2, offset: '42' }, 10);

  // flight 17: version 1's change record is gone (only its event is left), version 2 a cascade (MAFL)
  await flight(db, '17', 'ACTIVE', 2, stand, 5);
  await event(db, 'msg', '17', 1, { FLID: '17', STATE_VERSION: 1, OP: 'UPSERT', MSG_ID: create, TYPE: 'SCHD', STYP: 'DNLD', CHANGED: ['FLNO', 'MAID'] }, { partition: 1, offset: '7' }, 0);
  await change(db, '17', 2, stand, kinds[1], 'UPDATE', 'MAFL', { MAFL: [[], [{ FLID: '18', FLNO: 'CA101' }]] }, 5);
  await event(db, 'msg', '17', 2, { FLID: '17', STATE_VERSION: 2, OP: 'UPSERT', MSG_ID: stand, TYPE: 'FLOP', STYP: 'STND', CHANGED: ['MAFL'] }, null, 5);
  await event(db, 'schd', '17', 2, { FLID: '17', STATE_VERSION: 2 }, null, 5);

  // flight 99: purged by a snapshot delete and archived
  await change(db, '99', 1, create, kinds[0], 'CREATE', 'MESSAGE', { FLNO: [null, 'MU5101'] }, 0);
  await change(db, '99', 2, create, kinds[0], 'DELETE', 'SNAPSHOT_DELETE', { STATE: ['ACTIVE', 'DELETED'] }, 10);
  await sql`insert into flight_history (flid, state_version, operation_day, flight_state, purge_rule, state, archived_at)
            values ('99', 2, '2026-12-01', 'DELETED', 'DELETED', ${JSON.stringify({ FLID: '99', STATE: 'DELETED', STATE_VERSION: 2 })}::jsonb, ${at(30)})`.execute(db);
  return { create, stand, fdel, protocol, exhausted, skipped };
}
