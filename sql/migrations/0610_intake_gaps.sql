-- Up Migration
-- Intake ID gaps, each with its own settle time:
--   gaps         open gaps above the watermark, [{"lo":n,"hi":n,"seen":iso}] — each waited for
--                msgx.intake.gap-settle from its own first sighting;
--   passed_gaps  gaps intake moved past, [{"lo":n,"hi":n,"at":iso}] — rechecked for rows that
--                commit late (every round while recent, at each full scan until the inbox
--                retention horizon). gap_id / gap_seen_at keep showing the lowest open gap.
ALTER TABLE intake_cursor ADD COLUMN gaps jsonb NOT NULL DEFAULT '[]';
ALTER TABLE intake_cursor ADD COLUMN passed_gaps jsonb NOT NULL DEFAULT '[]';

-- Down Migration
ALTER TABLE intake_cursor DROP COLUMN passed_gaps;
ALTER TABLE intake_cursor DROP COLUMN gaps;
