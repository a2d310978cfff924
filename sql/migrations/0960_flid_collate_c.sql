-- Up Migration
-- FLIDs compare byte by byte (COLLATE "C"), whatever the database's own collation
-- (docs/decisions.md "FLIDs compare byte by byte"): every index on a FLID column compared through
-- the server's locale (C.UTF-8 here: strcoll and a collation lookup per comparison), ≈ 10 % of the
-- Postgres work of a 9,999-flight snapshot's first apply. FLID and MAID columns of every table
-- change together; a comparison with any other text (a parameter, a JSON field) takes "C". On a
-- database whose collation is C or C.UTF-8 no order changes; on another, FLIDs sort by bytes.
-- Indexes on these columns are rebuilt (no table is rewritten).
DROP TRIGGER flight_schd_key_unchanged ON flight_schd;
ALTER TABLE flight_airbridge ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_carousel ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_change ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_checkin ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_chock ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_chute ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_delay ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_gate ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_history ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_planned_stand ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_purge_redis ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_pushback ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_raw_fragment ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_route_point ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_schd ALTER COLUMN flid TYPE text COLLATE "C", ALTER COLUMN maid TYPE text COLLATE "C";
ALTER TABLE flight_snap_digest ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_tractor ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE flight_version_floor ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE msg_event ALTER COLUMN flid TYPE text COLLATE "C";
ALTER TABLE schd_gen_flid ALTER COLUMN flid TYPE text COLLATE "C";
CREATE TRIGGER flight_schd_key_unchanged BEFORE UPDATE OF flid ON flight_schd
  FOR EACH ROW WHEN (OLD.flid IS DISTINCT FROM NEW.flid) EXECUTE FUNCTION msgx_key_unchanged('flid');

-- Down Migration
DROP TRIGGER flight_schd_key_unchanged ON flight_schd;
ALTER TABLE flight_airbridge ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_carousel ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_change ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_checkin ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_chock ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_chute ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_delay ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_gate ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_history ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_planned_stand ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_purge_redis ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_pushback ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_raw_fragment ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_route_point ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_schd ALTER COLUMN flid TYPE text COLLATE "default", ALTER COLUMN maid TYPE text COLLATE "default";
ALTER TABLE flight_snap_digest ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_tractor ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE flight_version_floor ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE msg_event ALTER COLUMN flid TYPE text COLLATE "default";
ALTER TABLE schd_gen_flid ALTER COLUMN flid TYPE text COLLATE "default";
CREATE TRIGGER flight_schd_key_unchanged BEFORE UPDATE OF flid ON flight_schd
  FOR EACH ROW WHEN (OLD.flid IS DISTINCT FROM NEW.flid) EXECUTE FUNCTION msgx_key_unchanged('flid');
