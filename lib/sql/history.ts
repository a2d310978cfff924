// SQL of FLIGHT_HISTORY (the archive of purged flights). Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

/** Deletes up to $2 history records archived before $1, oldest first (the retention job's batch). */
export const deleteArchivedBefore = pgStatement<[cutoff: Date, batch: number]>(
  'history.delete_archived_before',
  `delete from flight_history h using (
     select flid, state_version from flight_history where archived_at < $1 order by archived_at limit $2) x
   where h.flid = x.flid and h.state_version = x.state_version`,
);
