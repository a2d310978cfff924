-- Up Migration
-- The state topic's outbox rows (target 'state', lib/dispatch/state.ts, docs/consumers.md
-- "state topic"): one row per FLID, upserted with every new version of the flight (deletion and
-- purge included), each upsert taking a new EVENT_ID, like the schd rows. One unique index serves
-- both coalesced targets, so that the batch write's one outbox insert (flight.write_batch) has one
-- ON CONFLICT arbiter for schd and state rows taken in one EVENT_ID order.
ALTER TABLE msg_event DROP CONSTRAINT msg_event_target_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_target_check CHECK (target IN ('msg', 'schd', 'state'));
DROP INDEX msg_event_schd_flid;
CREATE UNIQUE INDEX msg_event_coalesced_flid ON msg_event (target, flid) WHERE target IN ('schd', 'state');
CREATE INDEX msg_event_state_pending ON msg_event (event_id) WHERE target = 'state' AND state = 'PENDING';
-- The msg topic position of GET /all/flights: the highest acknowledged offset per partition
-- (outbox.msg_positions, one index probe per partition).
CREATE INDEX msg_event_msg_sent_offset ON msg_event (kafka_partition, ((kafka_offset)::bigint))
  WHERE target = 'msg' AND state = 'SENT' AND kafka_offset IS NOT NULL;

-- Down Migration
DROP INDEX msg_event_msg_sent_offset;
DROP INDEX msg_event_state_pending;
DELETE FROM msg_event WHERE target = 'state';
DROP INDEX msg_event_coalesced_flid;
CREATE UNIQUE INDEX msg_event_schd_flid ON msg_event (flid) WHERE target = 'schd';
ALTER TABLE msg_event DROP CONSTRAINT msg_event_target_check;
ALTER TABLE msg_event ADD CONSTRAINT msg_event_target_check CHECK (target IN ('msg', 'schd'));
