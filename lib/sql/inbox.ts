// SQL of the AODB inbox (MariaDB CMINMSGS). Statement conventions: lib/db/statement.ts.
import { myStatement } from '../db/statement.ts';

// ---- lib/lifecycle/proc-state.ts

/** The inbox rows of these IDs that still exist, with their processed time (PROC_STATE purge evidence). */
export const retentionPresence = myStatement<[ids: number[]], { id: number; p: string | null }>(
  'inbox.retention_presence',
  'SELECT CMINMSGS_ID AS id, CMINMSGS_DATE_PROCESSED AS p FROM cminmsgs WHERE CMINMSGS_ID IN (?)',
);

// ---- lib/api/message-trace.ts

export interface InboxTraceRow {
  received: string | null;
  processed: string | null;
  sndr: string | null;
  seqn: number | string | null;
  type: string | null;
  styp: string | null;
  status: string | null;
  chars: number | string;
  excerpt: string | null;
}

/** One inbox row as the message trace shows it: times, sender, kind, status, size and the first 4,000 characters. */
export const traceRow = myStatement<[id: number], InboxTraceRow>(
  'inbox.trace_row',
  `SELECT CMINMSGS_DATE_RECEIVED AS received, CMINMSGS_DATE_PROCESSED AS processed, CMINMSGS_SUBSYSTEM_NAME AS sndr,
          CMINMSGS_SUBSYSTEM_SEQUENCE AS seqn, CMINMSGS_SUBSYSTEM_TYPE AS type, CMINMSGS_SUBSYSTEM_SUBTYPE AS styp,
          CMINMSGS_STATUS AS status, CHAR_LENGTH(CMINMSGS_CLOB_MSG) AS chars, LEFT(CMINMSGS_CLOB_MSG, 4000) AS excerpt
     FROM cminmsgs WHERE CMINMSGS_ID = ?`,
);
