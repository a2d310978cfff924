// SQL of PROC_STATE, PROC_ATTEMPT and INTAKE_CURSOR. Statement conventions: lib/db/statement.ts.
import { pgStatement } from '../db/statement.ts';

// ---- lib/flight/timeline.ts

/** Kind, state and reception time (the zone-less local DATETIME as text) of the messages $1. */
export const timelineMessages = pgStatement<[msgIds: number[]], { msg_id: number; kind: string | null; state: string; received: string | null }>(
  'proc_state.timeline_messages',
  'select msg_id, kind, state, received_at::text as received from proc_state where msg_id = any($1::bigint[])',
);

// ---- lib/lifecycle/flights.ts

/** The messages in one of the states $1 (the open ones: PENDING/FAILED). */
export const idsInStates = pgStatement<[states: string[]], { msg_id: number }>('proc_state.ids_in_states', 'select msg_id from proc_state where state = any($1::text[])');
