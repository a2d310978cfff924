-- Up Migration
-- Lifecycle (docs/lifecycle.md): the flight history store and what the purge leaves behind.

-- FLIGHT_HISTORY: one row per purged flight = its complete state JSON (the shape of Redis, the schd
-- topic and HTTP) at the version it had when archived. Written in the same transaction that
-- deletes the flight rows (D1). Kept msgx.history.retention.
CREATE TABLE flight_history (
  flid           text NOT NULL,
  state_version  integer NOT NULL,               -- the archived state's STATE_VERSION
  operation_day  date,
  flight_state   text NOT NULL CHECK (flight_state IN ('ACTIVE','DELETED')),  -- STATE when archived
  purge_rule     text NOT NULL CHECK (purge_rule IN ('DELETED','AGE')),        -- which history rule applied
  state          jsonb NOT NULL,                 -- complete state JSON (lib/flight/state.ts toJson)
  archived_at    timestamptz NOT NULL,
  PRIMARY KEY (flid, state_version)
);
CREATE INDEX flight_history_archived ON flight_history (archived_at);
CREATE INDEX flight_history_day ON flight_history (operation_day);

-- FLIGHT_VERSION_FLOOR: the last STATE_VERSION consumers saw of a purged FLID (the archived
-- version, or the purge tombstone's version + 1 for an ACTIVE flight purged by age). A FLID that
-- reappears continues above it (INV-8; consumers reject a restart at 1). Never deleted by
-- retention: one small row per purged FLID.
CREATE TABLE flight_version_floor (
  flid           text PRIMARY KEY,
  state_version  integer NOT NULL CHECK (state_version > 0),
  purged_at      timestamptz NOT NULL
);

-- FLIGHT_PURGE_REDIS: Redis keys still to delete after a purge commit (written in the purge
-- transaction, removed once the DEL succeeded; a failed DEL is retried by the next round).
CREATE TABLE flight_purge_redis (
  flid       text PRIMARY KEY,
  purged_at  timestamptz NOT NULL
);

-- Down Migration
DROP TABLE flight_purge_redis;
DROP TABLE flight_version_floor;
DROP TABLE flight_history;
