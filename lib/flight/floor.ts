// Version floor of purged FLIDs (lifecycle.md: "If the FLID reappears later, its STATE_VERSION
// continues above the archived one"). The history purge raises the floor in its transaction; the
// flight store starts a flight it does not know from the floor instead of 0.
import { sql, type Kysely } from 'kysely';

type Q = Kysely<any>;

/** The floor of each of these FLIDs that was purged before (absent = never purged: start at 0). */
export async function loadVersionFloors(db: Q, flids: readonly string[]): Promise<Map<string, number>> {
  if (flids.length === 0) return new Map();
  const r = await sql<{ flid: string; state_version: number }>`
    select flid, state_version from flight_version_floor where flid = any(${[...flids]}::text[])`.execute(db);
  return new Map(r.rows.map((x) => [x.flid, Number(x.state_version)]));
}

/** Raise (never lower) the floor of these FLIDs. */
export async function raiseVersionFloors(tx: Q, rows: readonly { flid: string; stateVersion: number }[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    insert into flight_version_floor (flid, state_version, purged_at)
    select u.flid, u.v, ${now} from unnest(${rows.map((r) => r.flid)}::text[], ${rows.map((r) => r.stateVersion)}::integer[]) as u(flid, v)
    on conflict (flid) do update set state_version = greatest(flight_version_floor.state_version, excluded.state_version),
                                     purged_at = excluded.purged_at`.execute(tx);
}
