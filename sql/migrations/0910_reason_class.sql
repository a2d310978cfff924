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

-- The rows written before: their class read once from the reason text as it was written then.
UPDATE proc_state SET
  reason_class = CASE
    WHEN reason = 'MALFORMED: raw-missing' THEN 'RAW_MISSING'
    WHEN reason LIKE 'EXHAUSTED%' THEN 'EXHAUSTED'
    WHEN reason LIKE 'MALFORMED%' THEN 'MALFORMED'
    WHEN reason LIKE 'PROTOCOL%' THEN 'PROTOCOL'
    WHEN reason LIKE 'INFRA%' THEN 'INFRA'
    WHEN reason LIKE 'CODEC_ERROR%' THEN 'CODEC_ERROR'
    WHEN reason LIKE 'INTERNAL%' THEN 'INTERNAL'
    WHEN reason LIKE 'duplicate-of:%' THEN 'DUPLICATE'
    WHEN reason = 'unsupported' THEN 'UNSUPPORTED'
    WHEN state = 'SKIPPED' THEN 'SKIPPED'
  END,
  applied_reason_class = CASE
    WHEN applied_reason = 'MALFORMED: raw-missing' THEN 'RAW_MISSING'
    WHEN applied_reason LIKE 'EXHAUSTED%' THEN 'EXHAUSTED'
    WHEN applied_reason LIKE 'MALFORMED%' THEN 'MALFORMED'
    WHEN applied_reason LIKE 'PROTOCOL%' THEN 'PROTOCOL'
    WHEN applied_reason LIKE 'INFRA%' THEN 'INFRA'
    WHEN applied_reason LIKE 'CODEC_ERROR%' THEN 'CODEC_ERROR'
    WHEN applied_reason LIKE 'INTERNAL%' THEN 'INTERNAL'
    WHEN applied_reason LIKE 'duplicate-of:%' THEN 'DUPLICATE'
    WHEN applied_reason = 'unsupported' THEN 'UNSUPPORTED'
    WHEN applied_state = 'SKIPPED' THEN 'SKIPPED'
  END
WHERE reason IS NOT NULL OR applied_reason IS NOT NULL;

-- Down Migration
ALTER TABLE proc_state DROP COLUMN applied_reason_class, DROP COLUMN reason_class;
