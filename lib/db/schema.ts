// Kysely table types of PROC_STATE and INTAKE_CURSOR, for the tests' and bench scripts' own
// queries only: lib/ runs no builder query, every statement of lib/ is static text in lib/sql/
// with its own row type (docs/decisions.md "SQL").
import type { ColumnType, Generated } from 'kysely';
import type { ReasonClass } from '../core/errors.ts';

type Ts = ColumnType<Date, Date | string, Date | string>;

export interface ProcStateTable {
  msg_id: number;
  identity_key: string | null;
  state: Generated<'PENDING' | 'FAILED' | 'SUCCEEDED' | 'SKIPPED' | 'DEAD'>;
  reason: string | null;
  error_class: string | null;
  error_service: 'postgres' | 'mariadb' | 'redis' | null;
  kind: string | null;
  attempts: Generated<number>;
  failures_in_row: Generated<number>;
  failing_since: Ts | null;
  next_attempt_at: Ts | null;
  received_at: Ts | null;
  enqueued_at: Ts;
  terminal_at: Ts | null;
  backfill_next_at: Ts | null;
  backfill_at: Ts | null;
  backfill_attempts: Generated<number>;
  backfill_abandoned_at: Ts | null;
  backfill_abandoned_reason: 'MISSING_ROW' | 'TRANSIENT_DEADLINE' | null;
  /** Outcome reached in the message's business transaction (NULL: none committed since enqueue/replay). */
  applied_state: 'SUCCEEDED' | 'SKIPPED' | 'DEAD' | null;
  applied_reason: string | null;
  reason_class: ReasonClass | null;
  applied_reason_class: ReasonClass | null;
  updated_at: Ts;
}

export interface IntakeCursorTable {
  id: Generated<number>;
  watermark: Generated<number>;
  full_scan_from: number | null;
  full_scan_at: Ts | null;
  gap_id: number | null;
  gap_seen_at: Ts | null;
  /** Open gaps, each with its first sighting (ISO time); written as JSON text. */
  gaps: ColumnType<{ lo: number; hi: number; seen: string }[], string, string>;
  /** Gaps moved past (ISO time), rechecked for late rows; written as JSON text. */
  passed_gaps: ColumnType<{ lo: number; hi: number; at: string }[], string, string>;
}

export interface Database {
  proc_state: ProcStateTable;
  intake_cursor: IntakeCursorTable;
}
