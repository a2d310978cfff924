-- Up Migration
-- Every detail row of a flight has its flight_schd row, and every ledger roster row its schd_gen
-- row (docs/decisions.md "Child rows checked per statement"). Foreign keys checked this per
-- inserted row — one query each, about 40,000 for a 9,999-flight snapshot, ≈ 400 ms of a first
-- apply on the slowest machine measured. The same rule, checked once per statement over all of
-- its rows (transition tables), with the same outcomes:
--   a child row inserted or updated without its parent is refused, SQLSTATE 23503
--   (foreign_key_violation), naming the table and the key, at the end of the statement;
--   deleting or truncating parents deletes or truncates their child rows (ON DELETE CASCADE);
--   a parent's key is never changed (flight_schd.flid, schd_gen.operation_day).
-- The foreign keys' row locks guarded against a parent deleted by a concurrent transaction; every
-- writer of flights and ledgers holds PIPELINE_LOCK (docs/design.md), so there is none.
-- Static SQL (PL/pgSQL keeps its plan, one per table the trigger is on), one function per parent.
CREATE FUNCTION msgx_rows_have_flight() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  orphan text;
BEGIN
  SELECT n.flid INTO orphan FROM msgx_new_rows n WHERE NOT EXISTS (SELECT 1 FROM flight_schd p WHERE p.flid = n.flid) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert or update on table "%" violates its parent rule: every row needs its row in "flight_schd"', TG_TABLE_NAME
      USING ERRCODE = 'foreign_key_violation', DETAIL = format('Key (flid)=(%s) is not present in table "flight_schd".', orphan);
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION msgx_rows_have_ledger() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  orphan date;
BEGIN
  SELECT n.operation_day INTO orphan FROM msgx_new_rows n WHERE NOT EXISTS (SELECT 1 FROM schd_gen p WHERE p.operation_day = n.operation_day) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'insert or update on table "%" violates its parent rule: every row needs its row in "schd_gen"', TG_TABLE_NAME
      USING ERRCODE = 'foreign_key_violation', DETAIL = format('Key (operation_day)=(%s) is not present in table "schd_gen".', orphan);
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION msgx_delete_children() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  child text;
BEGIN
  -- TG_ARGV: the key column, then the child tables
  FOREACH child IN ARRAY TG_ARGV[1:] LOOP
    IF TG_OP = 'TRUNCATE' THEN
      -- DELETE, not TRUNCATE: the same TRUNCATE may list the child (it is in use by it then)
      EXECUTE format('DELETE FROM %I', child);
    ELSE
      EXECUTE format('DELETE FROM %1$I c USING msgx_old_rows o WHERE c.%2$I = o.%2$I', child, TG_ARGV[0]);
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

CREATE FUNCTION msgx_key_unchanged() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'update on table "%" changes its key %; its child rows refer to it', TG_TABLE_NAME, TG_ARGV[0] USING ERRCODE = 'foreign_key_violation';
END $$;

ALTER TABLE flight_gate DROP CONSTRAINT flight_gate_flid_fkey;
CREATE TRIGGER flight_gate_parent_on_insert AFTER INSERT ON flight_gate REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_gate_parent_on_update AFTER UPDATE ON flight_gate REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_checkin DROP CONSTRAINT flight_checkin_flid_fkey;
CREATE TRIGGER flight_checkin_parent_on_insert AFTER INSERT ON flight_checkin REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_checkin_parent_on_update AFTER UPDATE ON flight_checkin REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_carousel DROP CONSTRAINT flight_carousel_flid_fkey;
CREATE TRIGGER flight_carousel_parent_on_insert AFTER INSERT ON flight_carousel REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_carousel_parent_on_update AFTER UPDATE ON flight_carousel REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_chute DROP CONSTRAINT flight_chute_flid_fkey;
CREATE TRIGGER flight_chute_parent_on_insert AFTER INSERT ON flight_chute REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_chute_parent_on_update AFTER UPDATE ON flight_chute REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_planned_stand DROP CONSTRAINT flight_planned_stand_flid_fkey;
CREATE TRIGGER flight_planned_stand_parent_on_insert AFTER INSERT ON flight_planned_stand REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_planned_stand_parent_on_update AFTER UPDATE ON flight_planned_stand REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_chock DROP CONSTRAINT flight_chock_flid_fkey;
CREATE TRIGGER flight_chock_parent_on_insert AFTER INSERT ON flight_chock REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_chock_parent_on_update AFTER UPDATE ON flight_chock REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_delay DROP CONSTRAINT flight_delay_flid_fkey;
CREATE TRIGGER flight_delay_parent_on_insert AFTER INSERT ON flight_delay REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_delay_parent_on_update AFTER UPDATE ON flight_delay REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_airbridge DROP CONSTRAINT flight_airbridge_flid_fkey;
CREATE TRIGGER flight_airbridge_parent_on_insert AFTER INSERT ON flight_airbridge REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_airbridge_parent_on_update AFTER UPDATE ON flight_airbridge REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_pushback DROP CONSTRAINT flight_pushback_flid_fkey;
CREATE TRIGGER flight_pushback_parent_on_insert AFTER INSERT ON flight_pushback REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_pushback_parent_on_update AFTER UPDATE ON flight_pushback REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_tractor DROP CONSTRAINT flight_tractor_flid_fkey;
CREATE TRIGGER flight_tractor_parent_on_insert AFTER INSERT ON flight_tractor REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_tractor_parent_on_update AFTER UPDATE ON flight_tractor REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_route_point DROP CONSTRAINT flight_route_point_flid_fkey;
CREATE TRIGGER flight_route_point_parent_on_insert AFTER INSERT ON flight_route_point REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_route_point_parent_on_update AFTER UPDATE ON flight_route_point REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_raw_fragment DROP CONSTRAINT flight_raw_fragment_flid_fkey;
CREATE TRIGGER flight_raw_fragment_parent_on_insert AFTER INSERT ON flight_raw_fragment REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_raw_fragment_parent_on_update AFTER UPDATE ON flight_raw_fragment REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE flight_snap_digest DROP CONSTRAINT flight_snap_digest_flid_fkey;
CREATE TRIGGER flight_snap_digest_parent_on_insert AFTER INSERT ON flight_snap_digest REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();
CREATE TRIGGER flight_snap_digest_parent_on_update AFTER UPDATE ON flight_snap_digest REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_flight();

ALTER TABLE schd_gen_flid DROP CONSTRAINT schd_gen_flid_operation_day_fkey;
CREATE TRIGGER schd_gen_flid_parent_on_insert AFTER INSERT ON schd_gen_flid REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_ledger();
CREATE TRIGGER schd_gen_flid_parent_on_update AFTER UPDATE ON schd_gen_flid REFERENCING NEW TABLE AS msgx_new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_rows_have_ledger();

CREATE TRIGGER flight_schd_delete_children AFTER DELETE ON flight_schd REFERENCING OLD TABLE AS msgx_old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_delete_children('flid', 'flight_gate', 'flight_checkin', 'flight_carousel', 'flight_chute', 'flight_planned_stand', 'flight_chock', 'flight_delay', 'flight_airbridge', 'flight_pushback', 'flight_tractor', 'flight_route_point', 'flight_raw_fragment', 'flight_snap_digest');
CREATE TRIGGER flight_schd_truncate_children AFTER TRUNCATE ON flight_schd
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_delete_children('flid', 'flight_gate', 'flight_checkin', 'flight_carousel', 'flight_chute', 'flight_planned_stand', 'flight_chock', 'flight_delay', 'flight_airbridge', 'flight_pushback', 'flight_tractor', 'flight_route_point', 'flight_raw_fragment', 'flight_snap_digest');
CREATE TRIGGER flight_schd_key_unchanged BEFORE UPDATE OF flid ON flight_schd
  FOR EACH ROW WHEN (OLD.flid IS DISTINCT FROM NEW.flid) EXECUTE FUNCTION msgx_key_unchanged('flid');

CREATE TRIGGER schd_gen_delete_children AFTER DELETE ON schd_gen REFERENCING OLD TABLE AS msgx_old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_delete_children('operation_day', 'schd_gen_flid');
CREATE TRIGGER schd_gen_truncate_children AFTER TRUNCATE ON schd_gen
  FOR EACH STATEMENT EXECUTE FUNCTION msgx_delete_children('operation_day', 'schd_gen_flid');
CREATE TRIGGER schd_gen_key_unchanged BEFORE UPDATE OF operation_day ON schd_gen
  FOR EACH ROW WHEN (OLD.operation_day IS DISTINCT FROM NEW.operation_day) EXECUTE FUNCTION msgx_key_unchanged('operation_day');

-- Down Migration
DROP TRIGGER schd_gen_key_unchanged ON schd_gen;
DROP TRIGGER schd_gen_truncate_children ON schd_gen;
DROP TRIGGER schd_gen_delete_children ON schd_gen;
DROP TRIGGER flight_schd_key_unchanged ON flight_schd;
DROP TRIGGER flight_schd_truncate_children ON flight_schd;
DROP TRIGGER flight_schd_delete_children ON flight_schd;
DROP TRIGGER flight_gate_parent_on_update ON flight_gate;
DROP TRIGGER flight_gate_parent_on_insert ON flight_gate;
ALTER TABLE flight_gate ADD CONSTRAINT flight_gate_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_checkin_parent_on_update ON flight_checkin;
DROP TRIGGER flight_checkin_parent_on_insert ON flight_checkin;
ALTER TABLE flight_checkin ADD CONSTRAINT flight_checkin_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_carousel_parent_on_update ON flight_carousel;
DROP TRIGGER flight_carousel_parent_on_insert ON flight_carousel;
ALTER TABLE flight_carousel ADD CONSTRAINT flight_carousel_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_chute_parent_on_update ON flight_chute;
DROP TRIGGER flight_chute_parent_on_insert ON flight_chute;
ALTER TABLE flight_chute ADD CONSTRAINT flight_chute_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_planned_stand_parent_on_update ON flight_planned_stand;
DROP TRIGGER flight_planned_stand_parent_on_insert ON flight_planned_stand;
ALTER TABLE flight_planned_stand ADD CONSTRAINT flight_planned_stand_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_chock_parent_on_update ON flight_chock;
DROP TRIGGER flight_chock_parent_on_insert ON flight_chock;
ALTER TABLE flight_chock ADD CONSTRAINT flight_chock_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_delay_parent_on_update ON flight_delay;
DROP TRIGGER flight_delay_parent_on_insert ON flight_delay;
ALTER TABLE flight_delay ADD CONSTRAINT flight_delay_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_airbridge_parent_on_update ON flight_airbridge;
DROP TRIGGER flight_airbridge_parent_on_insert ON flight_airbridge;
ALTER TABLE flight_airbridge ADD CONSTRAINT flight_airbridge_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_pushback_parent_on_update ON flight_pushback;
DROP TRIGGER flight_pushback_parent_on_insert ON flight_pushback;
ALTER TABLE flight_pushback ADD CONSTRAINT flight_pushback_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_tractor_parent_on_update ON flight_tractor;
DROP TRIGGER flight_tractor_parent_on_insert ON flight_tractor;
ALTER TABLE flight_tractor ADD CONSTRAINT flight_tractor_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_route_point_parent_on_update ON flight_route_point;
DROP TRIGGER flight_route_point_parent_on_insert ON flight_route_point;
ALTER TABLE flight_route_point ADD CONSTRAINT flight_route_point_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_raw_fragment_parent_on_update ON flight_raw_fragment;
DROP TRIGGER flight_raw_fragment_parent_on_insert ON flight_raw_fragment;
ALTER TABLE flight_raw_fragment ADD CONSTRAINT flight_raw_fragment_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER flight_snap_digest_parent_on_update ON flight_snap_digest;
DROP TRIGGER flight_snap_digest_parent_on_insert ON flight_snap_digest;
ALTER TABLE flight_snap_digest ADD CONSTRAINT flight_snap_digest_flid_fkey FOREIGN KEY (flid) REFERENCES flight_schd (flid) ON DELETE CASCADE;
DROP TRIGGER schd_gen_flid_parent_on_update ON schd_gen_flid;
DROP TRIGGER schd_gen_flid_parent_on_insert ON schd_gen_flid;
ALTER TABLE schd_gen_flid ADD CONSTRAINT schd_gen_flid_operation_day_fkey FOREIGN KEY (operation_day) REFERENCES schd_gen (operation_day) ON DELETE CASCADE;
DROP FUNCTION msgx_key_unchanged();
DROP FUNCTION msgx_delete_children();
DROP FUNCTION msgx_rows_have_ledger();
DROP FUNCTION msgx_rows_have_flight();
