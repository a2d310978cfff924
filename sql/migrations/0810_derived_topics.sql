-- Up Migration
-- The derived topics' checks (lib/dispatch/topic-watch.ts, docs/operations.md "Derived stores").
-- The state topic's recorded positions: the highest acknowledged offset per partition of a SENT
-- state row (outbox.state_positions, one index probe per partition, as msg_event_msg_sent_offset
-- does for the msg topic).
CREATE INDEX msg_event_state_sent_offset ON msg_event (kafka_partition, ((kafka_offset)::bigint))
  WHERE target = 'state' AND state = 'SENT' AND kafka_offset IS NOT NULL;
-- Losses of the msg topic found by msg-dispatch: records the outbox had marked SENT that the
-- topic no longer holds (deleted, or its end offsets below the recorded ones). Open (resolved_at
-- null) until the operator resends the range or acknowledges it (scripts/dispatch-resend.ts).
CREATE TABLE topic_loss (
  id              bigserial PRIMARY KEY,
  topic           text NOT NULL,
  detected_at     timestamptz NOT NULL,
  detail          text NOT NULL,
  partitions      integer[] NOT NULL,
  first_event_id  bigint NOT NULL,
  last_event_id   bigint NOT NULL,
  events          integer NOT NULL,
  resolved_at     timestamptz,
  resolution      text
);
CREATE INDEX topic_loss_open ON topic_loss (topic) WHERE resolved_at IS NULL;

-- Down Migration
DROP TABLE topic_loss;
DROP INDEX msg_event_state_sent_offset;
