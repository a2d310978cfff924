-- Up Migration
-- Pump v2 (batches of consecutive messages) and the per-message change record.

-- The outcome a message reached in its business transaction, written in that transaction
-- (NULL = no business transaction of this message has committed since it was enqueued or
-- replayed). After a crash between the business commit and the terminal statement the pump
-- finds it here: the business effect is known committed, so the message is not applied again;
-- Redis is rewritten from Postgres for every flight it addresses and the outcome becomes its
-- terminal state. Replay clears it.
ALTER TABLE proc_state ADD COLUMN applied_state  text CHECK (applied_state IN ('SUCCEEDED','SKIPPED','DEAD'));
ALTER TABLE proc_state ADD COLUMN applied_reason text;

-- Every failed attempt of a message (time, class, detail): the message trace shows them.
-- Purged with PROC_STATE (msgx.proc-state.retention).
CREATE TABLE proc_attempt (
  msg_id       bigint NOT NULL,
  attempt_at   timestamptz NOT NULL,
  error_class  text NOT NULL,
  detail       text,
  next_state   text NOT NULL          -- FAILED or DEAD
);
CREATE INDEX proc_attempt_msg ON proc_attempt (msg_id, attempt_at);

-- FLIGHT_CHANGE: one row per message and flight it changed (the version it made), with the
-- fields changed, before -> after. Written in the business transaction (one statement per
-- batch). Kept msgx.pipeline.event-retention; the flight timeline and the message trace read it.
CREATE TABLE flight_change (
  flid           text NOT NULL,
  state_version  integer NOT NULL,        -- the version this change made
  msg_id         bigint NOT NULL,         -- the message that made it
  kind           text NOT NULL,           -- TYPE/STYP of that message
  op             text NOT NULL CHECK (op IN ('CREATE','UPDATE','DELETE','REVIVE')),
  cause          text NOT NULL CHECK (cause IN ('MESSAGE','CASCADE','MAFL','SNAPSHOT_DELETE')),
  changes        jsonb NOT NULL,          -- {"KEY": [before, after], ...}; JSON values as in the state JSON, null = absent
  created_at     timestamptz NOT NULL,
  PRIMARY KEY (flid, state_version)
);
CREATE INDEX flight_change_msg ON flight_change (msg_id);
CREATE INDEX flight_change_created ON flight_change (created_at);

-- Down Migration
DROP TABLE flight_change;
DROP TABLE proc_attempt;
ALTER TABLE proc_state DROP COLUMN applied_reason;
ALTER TABLE proc_state DROP COLUMN applied_state;
