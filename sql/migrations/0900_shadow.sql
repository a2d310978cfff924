-- Up Migration
-- A shadow installation (docs/operations.md "Trying a rule change"): a read-only installation
-- that takes every inbox row by ID, processed by another installation or not. One row:
--  started_after  the inbox position it started from (rows up to it were never its own; null =
--                 not started yet). A flight whose history began at or before it is not
--                 comparable with the other installation's (npm run compare).
--  lost           inbox ID ranges [{lo, hi, at}] that retention deleted before it read them
--                 (below the oldest row carrying a processing time when intake moved past
--                 them; retention deletes only marked rows, oldest first): reported, never
--                 skipped silently.
CREATE TABLE shadow_intake (
  id             smallint PRIMARY KEY CHECK (id = 1),
  started_after  bigint,
  lost           jsonb NOT NULL DEFAULT '[]'
);
INSERT INTO shadow_intake (id) VALUES (1);

-- Down Migration
DROP TABLE shadow_intake;
