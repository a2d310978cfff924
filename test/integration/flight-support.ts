// Helpers of the flight integration tests: apply a message through the flight handlers inside a
// Kysely transaction as the pump would (skipped → rollback), mirror, reset, inspect.
import { sql } from 'kysely';
import { applyMessage, type ApplyResult } from '../support/refdata-ctx.ts';
import { HandlerRegistry } from '../../lib/domain/handlers.ts';
import { registerFlightHandlers } from '../../lib/flight/handlers.ts';
import { scheduleResponseGuard } from '../../lib/requests/schedule-guard.ts';
import { createFlightMirror } from '../../lib/flight/mirror.ts';
import type { QueryDb } from '../../lib/db/kysely.ts';
import type { Redis } from '../../lib/db/redis.ts';
import { testConfig } from '../support/env.ts';

export const TZ = 'Asia/Shanghai';
export const config = testConfig();
export const registry = registerFlightHandlers(new HandlerRegistry(), { responseGuard: scheduleResponseGuard });

let seqn = 1;
export function sis(type: string, styp: string, body: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>${seqn++}</SEQN><DTTM>20261201080000</DTTM><TYPE>${type}</TYPE><STYP>${styp}</STYP></META>${body}</MSG>`;
}
export const fltr = (flid: string, inner: string) => `<FLTR><FLID>${flid}</FLID>${inner}</FLTR>`;
export const schd = (styp: string, records: string[], recs = records.length) => sis('SCHD', styp, `<SCHD><RECS>${recs}</RECS>${records.join('')}</SCHD>`);
export const flop = (styp: string, flid: string, inner: string) => sis('FLOP', styp, `<FLOP><FLID>${flid}</FLID><FFID>X</FFID>${inner}</FLOP>`);
/** A record of day 2026-12-DD at HH:MM. */
export const rec = (flid: string, day: number, extra = '', hhmm = '0800') => fltr(flid, `<FLNO>XX${flid}</FLNO><SODT>${String(day).padStart(2, '0')}DEC26${hhmm}</SODT><ACFT>320</ACFT>${extra}`);

let msgId = 1000;
export const nextMsgId = () => ++msgId;

/** Apply through the handlers (business transaction), then mirror unless told not to (crash). */
export async function apply(db: QueryDb, redis: Redis, xml: string, o: { msgId?: number; now?: Date; mirror?: boolean } = {}): Promise<ApplyResult & { msgId: number }> {
  const id = o.msgId ?? nextMsgId();
  const r = await applyMessage(db, { xml, msgId: id, now: o.now ?? new Date('2026-12-01T00:00:00Z'), config, registry });
  if (r.outcome === 'applied' && r.mirror && o.mirror !== false) await createFlightMirror(db, redis, { timeZone: TZ }).sync(r.mirror);
  return { ...r, msgId: id };
}

export async function resetFlights(db: QueryDb, redis: Redis): Promise<void> {
  await sql`truncate flight_schd, flight_snap_digest, flight_gate, flight_checkin, flight_carousel, flight_chute, flight_planned_stand, flight_chock,
            flight_delay, flight_airbridge, flight_pushback, flight_tractor, flight_route_point, flight_raw_fragment,
            schd_gen, schd_gen_flid, schd_snap_log, msg_event, req_track`.execute(db);
  // the flight keys and what the versioned mirror keeps beside them (removals' versions)
  const keys = [...(await redis.keys('msgx:flight:*')), ...(await redis.keys('msgx:mirror:*'))];
  if (keys.length) await redis.del(...keys);
}

export async function flightRow(db: QueryDb, flid: string) {
  const r = await sql<
    Record<string, unknown>
  >`select flid, state, state_version, operation_day::text as operation_day, last_msg_id, maid, mafl, stnd, deleted_at from flight_schd where flid = ${flid}`.execute(db);
  return r.rows[0];
}

export async function events(db: QueryDb, target?: 'msg' | 'schd' | 'state') {
  const r = await sql<{ event_id: number; target: string; flid: string; state_version: number; payload: Record<string, unknown>; state: string }>`
    select event_id, target, flid, state_version, payload, state from msg_event ${target ? sql`where target = ${target}` : sql``} order by event_id`.execute(db);
  return r.rows;
}

export async function redisState(redis: Redis, flid: string): Promise<Record<string, unknown> | null> {
  const v = await redis.get(`msgx:flight:${flid}`);
  return v === null ? null : JSON.parse(v);
}

export async function count(db: QueryDb, table: string): Promise<number> {
  const r = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db);
  return r.rows[0].n;
}
