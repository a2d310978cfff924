// Version floor of purged FLIDs (docs/lifecycle.md: "If the FLID reappears later, its STATE_VERSION
// continues above the archived one"). The history purge raises the floor in its transaction; the
// flight store starts a flight it does not know from the floor instead of 0.
import type { Executor } from '../db/statement.ts';
import * as Flight from '../sql/flight.ts';

/** The floor of each of these FLIDs that was purged before (absent = never purged: start at 0). */
export async function loadVersionFloors(db: Executor, flids: readonly string[]): Promise<Map<string, number>> {
  if (flids.length === 0) return new Map();
  const rows = await Flight.readVersionFloors(db, [...flids]);
  return new Map(rows.map((x) => [x.flid, Number(x.state_version)]));
}

/** Raise (never lower) the floor of these FLIDs. */
export async function raiseVersionFloors(tx: Executor, rows: readonly { flid: string; stateVersion: number }[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  await Flight.raiseVersionFloors(
    tx,
    rows.map((r) => r.flid),
    rows.map((r) => r.stateVersion),
    now,
  );
}
