-- Up Migration
-- The state topic's outbox rows (target 'state', lib/dispatch/state.ts, docs/consumers.md
-- "state topic"): one row per FLID, upserted with every new version of the flight (deletion and
-- purge included), each upsert taking a new EVENT_ID, like the schd rows.
ALTER TABLE msg_event DROP CONSTRAINT msg_event_target_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_target_check CHECK (target IN ('msg', 'schd', 'state'));
CREATE UNIQUE INDEX msg_event_state_flid ON msg_event (flid) WHERE target = 'state';
CREATE INDEX msg_event_state_pending ON msg_event (event_id) WHERE target = 'state' AND state = 'PENDING';
-- The msg topic position of GET /all/flights: the highest acknowledged offset per partition
-- (outbox.msg_positions, one index probe per partition).
CREATE INDEX msg_event_msg_sent_offset ON msg_event (kafka_partition, ((kafka_offset)::bigint))
  WHERE target = 'msg' AND state = 'SENT' AND kafka_offset IS NOT NULL;

-- Down Migration
DROP INDEX msg_event_msg_sent_offset;
DROP INDEX msg_event_state_pending;
DROP INDEX msg_event_state_flid;
DELETE FROM msg_event WHERE target = 'state';
ALTER TABLE msg_event DROP CONSTRAINT msg_event_target_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_target_check CHECK (target IN ('msg', 'schd'));
