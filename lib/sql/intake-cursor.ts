// SQL of INTAKE_CURSOR: intake's watermark and the gaps it waits on (lib/pipeline/intake.ts), one
// row. Statement conventions: lib/db/statement.ts.
import { type Executor, pgOne, pgRun, pgStatement } from '../db/statement.ts';

export interface IntakeCursorRow {
  watermark: number;
  full_scan_from: number | null;
  full_scan_at: Date | null;
  gap_id: number | null;
  gap_seen_at: Date | null;
  /** Open gaps, each with its first sighting (ISO time). */
  gaps: { lo: number; hi: number; seen: string }[];
  /** Gaps moved past (ISO time), rechecked for late rows. */
  passed_gaps: { lo: number; hi: number; at: string }[];
}

const intakeCursorStatement = pgStatement<[], IntakeCursorRow>(
  'intake_cursor.read',
  'select watermark, full_scan_from, full_scan_at, gap_id, gap_seen_at, gaps, passed_gaps from intake_cursor where id = 1',
);
/** Intake's cursor (its one row). */
export function readIntakeCursor(db: Executor): Promise<IntakeCursorRow | undefined> {
  return pgOne(db, intakeCursorStatement);
}

const saveIntakeCursorStatement = pgStatement<
  [watermark: number, fullScanFrom: number | null, fullScanAt: Date | null, gapId: number | null, gapSeenAt: Date | null, gapsJson: string, passedGapsJson: string, readWatermark: number]
>(
  'intake_cursor.save',
  // only over the watermark the round read: 0 rows when it moved under the round (a restore)
  `update intake_cursor set watermark = $1::bigint, full_scan_from = $2::bigint, full_scan_at = $3::timestamptz, gap_id = $4::bigint,
                            gap_seen_at = $5::timestamptz, gaps = $6::jsonb, passed_gaps = $7::jsonb
    where id = 1 and watermark = $8::bigint`,
);
/** Saves intake's cursor (gaps as JSON text). */
export function saveIntakeCursor(
  db: Executor,
  watermark: number,
  fullScanFrom: number | null,
  fullScanAt: Date | null,
  gapId: number | null,
  gapSeenAt: Date | null,
  gapsJson: string,
  passedGapsJson: string,
  readWatermark: number,
): Promise<number> {
  return pgRun(db, saveIntakeCursorStatement, watermark, fullScanFrom, fullScanAt, gapId, gapSeenAt, gapsJson, passedGapsJson, readWatermark);
}
