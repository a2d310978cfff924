-- Up Migration
-- Indexes that keep the dispatchers' prepared statements on the same plan whatever the
-- parameter values (their generic plan, docs/decisions.md "SQL: plans of the prepared statements").
--
-- The msg round's blockers: the earlier events of a FLID that hold its later ones (DEAD, or
-- PENDING and backing off). Rare rows; outbox.freeze_msg_batch probes this index once per event
-- it picks instead of scanning every msg row of the outbox once per round.
CREATE INDEX msg_event_msg_blockers ON msg_event (flid, event_id)
  WHERE target = 'msg' AND (state = 'DEAD' OR (state = 'PENDING' AND next_attempt_at IS NOT NULL));
-- PENDING rows waiting on a backoff, per target: outbox.next_attempt_at takes the target as a
-- parameter, so its generic plan cannot use the per-target partial indexes above.
CREATE INDEX msg_event_backoff ON msg_event (target, next_attempt_at)
  WHERE state = 'PENDING' AND next_attempt_at IS NOT NULL;

-- Down Migration
DROP INDEX msg_event_backoff;
DROP INDEX msg_event_msg_blockers;
