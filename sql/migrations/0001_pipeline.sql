-- Up Migration
-- PROC_STATE: one row per inbox message (docs/design.md). Head of queue =
-- smallest msg_id whose state is PENDING or FAILED.
CREATE TABLE proc_state (
  msg_id                    bigint PRIMARY KEY,              -- = CMINMSGS_ID
  identity_key              text UNIQUE,                     -- C-3, bound once (INV-6)
  state                     text NOT NULL DEFAULT 'PENDING'
                            CHECK (state IN ('PENDING','FAILED','SUCCEEDED','SKIPPED','DEAD')),
  reason                    text,                            -- error class / skip reason with detail
  error_class               text,                            -- last failure class (INFRA, CODEC_ERROR, …)
  kind                      text,                            -- TYPE/STYP once decoded
  attempts                  integer NOT NULL DEFAULT 0,      -- counted failures (INFRA not counted)
  failures_in_row           integer NOT NULL DEFAULT 0,      -- current streak, INFRA included
  failing_since             timestamptz,
  next_attempt_at           timestamptz,
  received_at               timestamp,                       -- inbox CMINMSGS_DATE_RECEIVED (local, zone-less)
  enqueued_at               timestamptz NOT NULL,
  terminal_at               timestamptz,
  backfill_next_at          timestamptz,                     -- NOT NULL = a backfill is owed
  backfill_at               timestamptz,
  backfill_attempts         integer NOT NULL DEFAULT 0,
  backfill_abandoned_at     timestamptz,
  backfill_abandoned_reason text CHECK (backfill_abandoned_reason IN ('MISSING_ROW','TRANSIENT_DEADLINE')),
  updated_at                timestamptz NOT NULL
);
-- head of queue
CREATE INDEX proc_state_open ON proc_state (msg_id) WHERE state IN ('PENDING','FAILED');
-- backfill scan predicate
CREATE INDEX proc_state_backfill_due ON proc_state (backfill_attempts, msg_id)
  WHERE backfill_at IS NULL AND backfill_abandoned_at IS NULL AND state IN ('SUCCEEDED','SKIPPED','DEAD');
CREATE INDEX proc_state_state ON proc_state (state, updated_at);

-- Intake bookkeeping: watermark and the resumable full-scan cursor (one row).
CREATE TABLE intake_cursor (
  id              smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  watermark       bigint NOT NULL DEFAULT 0,
  full_scan_from  bigint,                 -- NULL = no full scan in progress
  full_scan_at    timestamptz,            -- when the last full scan started
  gap_id          bigint,                 -- lowest missing ID currently waited for
  gap_seen_at     timestamptz
);
INSERT INTO intake_cursor (id) VALUES (1);

-- Down Migration
DROP TABLE intake_cursor;
DROP TABLE proc_state;
