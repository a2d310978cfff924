-- Up Migration
-- What the latest snapshot said about each flight (lib/flight/digest.ts, docs/decisions.md
-- "Snapshot digest"): a stable hash of the record the snapshot carried, and the STATE_VERSION the
-- flight had once that record was applied. A later snapshot whose record hashes the same skips the
-- merge and write of that flight only while the flight is still at that version (any change since
-- — a FLOP, an operator action, a deletion — moved the version on). The row goes with its flight
-- (a purge deletes both); a restored database restores both together.
CREATE TABLE flight_snap_digest (
  flid           text PRIMARY KEY REFERENCES flight_schd (flid) ON DELETE CASCADE,
  digest         text NOT NULL,
  state_version  integer NOT NULL
);

-- Down Migration
DROP TABLE flight_snap_digest;
