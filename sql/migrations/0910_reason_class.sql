-- Up Migration
-- The class of a message's reason, as data (the reason text is for people; the replay whitelist,
-- backfill-resume and the console decide on the class). Written with the reason:
--   EXHAUSTED                      DEAD: counted attempts used up
--   MALFORMED, PROTOCOL            DEAD: the message's own failure
--   RAW_MISSING                    DEAD: its inbox row was gone when the pump read it (never applied)
--   INFRA, CODEC_ERROR, INTERNAL   FAILED: the class of the failure
--   DUPLICATE, UNSUPPORTED, SKIPPED  SKIPPED: a duplicate identity, no handler, a handler's skip
-- applied_reason_class: the same for APPLIED_REASON (copied with it at the terminal step).
ALTER TABLE proc_state
  ADD COLUMN reason_class text CHECK (reason_class IN ('EXHAUSTED', 'MALFORMED', 'PROTOCOL', 'RAW_MISSING', 'INFRA', 'CODEC_ERROR', 'INTERNAL', 'DUPLICATE', 'UNSUPPORTED', 'SKIPPED')),
  ADD COLUMN applied_reason_class text CHECK (applied_reason_class IN ('EXHAUSTED', 'MALFORMED', 'PROTOCOL', 'RAW_MISSING', 'INFRA', 'CODEC_ERROR', 'INTERNAL', 'DUPLICATE', 'UNSUPPORTED', 'SKIPPED'));

-- The rows written before: their class read once from the reason text as it was written then
-- (the first pattern that matches, by rank; any other reason of a SKIPPED message is a handler's skip).
WITH classes (pattern, cls, rank) AS (VALUES
    ('MALFORMED: raw-missing', 'RAW_MISSING', 1), ('EXHAUSTED%', 'EXHAUSTED', 2), ('MALFORMED%', 'MALFORMED', 3), ('PROTOCOL%', 'PROTOCOL', 4),
    ('INFRA%', 'INFRA', 5), ('CODEC_ERROR%', 'CODEC_ERROR', 6), ('INTERNAL%', 'INTERNAL', 7), ('duplicate-of:%', 'DUPLICATE', 8), ('unsupported', 'UNSUPPORTED', 9))
UPDATE proc_state p SET
  reason_class = coalesce((SELECT cls FROM classes WHERE p.reason LIKE pattern ORDER BY rank LIMIT 1),
                          CASE WHEN p.state = 'SKIPPED' AND p.reason IS NOT NULL THEN 'SKIPPED' END),
  applied_reason_class = coalesce((SELECT cls FROM classes WHERE p.applied_reason LIKE pattern ORDER BY rank LIMIT 1),
                                  CASE WHEN p.applied_state = 'SKIPPED' AND p.applied_reason IS NOT NULL THEN 'SKIPPED' END)
WHERE p.reason IS NOT NULL OR p.applied_reason IS NOT NULL;

-- Down Migration
ALTER TABLE proc_state DROP COLUMN applied_reason_class, DROP COLUMN reason_class;
