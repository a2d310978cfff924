-- Up Migration
-- Flight domain (docs/flight-state.md). Column names = SIS tags lower-cased; lib/flight/rules.ts is
-- the one table that maps tags to these columns (test/integration/flight-schema.test.ts checks
-- that every rule has its column).

-- FLIGHT_SCHD: one row per FLID (globally unique); complete state = this row + its detail rows.
CREATE TABLE flight_schd (
  flid           text PRIMARY KEY,
  state          text NOT NULL DEFAULT 'ACTIVE' CHECK (state IN ('ACTIVE','DELETED')),
  state_version  integer NOT NULL CHECK (state_version > 0),
  operation_day  date,                         -- NULL = not known yet
  last_msg_id    bigint,
  created_at     timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL,
  deleted_at     timestamptz,
  cancelled      boolean NOT NULL DEFAULT false,
  boarding       boolean NOT NULL DEFAULT false,
  last_call      boolean NOT NULL DEFAULT false,
  mafl           jsonb NOT NULL DEFAULT '[]',  -- derived [{FLID, FLNO}] of ACTIVE shared flights (G-MAFL)
  alcd           text,
  alsc           text,
  flno           text,
  mvin           text,
  sodt           timestamptz,
  flty           text,
  flin           text,
  acft           text,
  reno           text,
  taop           text,
  tafl           text,
  taid           text,
  trml           text,
  csop           text,
  csft           text,
  maid           text,
  estt           timestamptz,
  actt           timestamptz,
  botm           timestamptz,
  lacl           timestamptz,
  fint           timestamptz,
  appt           timestamptz,
  egsr           timestamptz,
  egst           timestamptz,
  padt           timestamptz,
  naat           timestamptz,
  neat           timestamptz,
  pedt           timestamptz,
  cobt           timestamptz,
  ctot           timestamptz,
  eobt           timestamptz,
  tobt           timestamptz,
  iest           timestamptz,
  cncl           timestamptz,
  ftss           text,
  runw           text,
  stnd           text,
  phag           text,
  fhag           text,
  mhag           text,
  remc           text,
  maxp           integer,
  vipp           text,
  vipr           text,
  lbno           text,
  lbwt           text,
  paxc           text,
  exsc           text,
  exsr           text,
  ddes           text,
  ddir           text,
  fdiv           text,
  reid           text,
  fret           text,
  ares           text,
  flab           text,
  port_open      timestamptz,
  port_close     timestamptz
);
CREATE INDEX flight_schd_maid ON flight_schd (maid) WHERE maid IS NOT NULL;
CREATE INDEX flight_schd_operation_day ON flight_schd (operation_day, flid);

-- Detail tables: one per collection, (flid, ordinal) key, replaced whole (delete-then-insert).
CREATE TABLE flight_gate (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  gate text, pgot timestamptz, pgct timestamptz, gotm timestamptz, gctm timestamptz, gtyp text,
  PRIMARY KEY (flid, ordinal)
);
CREATE TABLE flight_checkin (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  chkc text, ccls text, pcot timestamptz, pcct timestamptz, cotm timestamptz, cctm timestamptz, ctyp text,
  PRIMARY KEY (flid, ordinal)
);
CREATE TABLE flight_carousel (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  belt text, bcls text, pcot timestamptz, pcct timestamptz, fbag timestamptz, lbag timestamptz, btyp text,
  PRIMARY KEY (flid, ordinal)
);
CREATE TABLE flight_chute (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  chut text, ccls text, pcbt timestamptz, pcet timestamptz, cbtm timestamptz, cetm timestamptz, ctyp text,
  PRIMARY KEY (flid, ordinal)
);
CREATE TABLE flight_planned_stand (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  psst text, stst timestamptz, stet timestamptz,
  PRIMARY KEY (flid, ordinal)
);
CREATE TABLE flight_chock (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  chtm timestamptz, chid text, chst text,
  PRIMARY KEY (flid, ordinal)
);
CREATE TABLE flight_delay (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  code text, strt timestamptz, dura text, text text,
  PRIMARY KEY (flid, ordinal)
);
CREATE TABLE flight_airbridge (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  abdg text, abop text, aotm timestamptz,
  PRIMARY KEY (flid, ordinal)
);
CREATE TABLE flight_pushback (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  pstm timestamptz, psid text, pust text,
  PRIMARY KEY (flid, ordinal)
);
CREATE TABLE flight_tractor (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  ordinal     smallint NOT NULL,            -- 1.. in message order
  source_seq  integer,                      -- upstream number attribute; never a key
  trtm timestamptz, trst text,
  PRIMARY KEY (flid, ordinal)
);

-- Route points: ROUT (route without the home airport) and ERUT (entire route); first 4 kept.
CREATE TABLE flight_route_point (
  flid        text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  route_kind  text NOT NULL CHECK (route_kind IN ('ROUT','ERUT')),
  ordinal     smallint NOT NULL,
  source_seq  integer,                      -- RTNO
  apcd text, scat timestamptz, scdt timestamptz,
  PRIMARY KEY (flid, route_kind, ordinal)
);

-- SRVT / VIPF: raw XML fragments, one row per element, canonical re-serialisation.
CREATE TABLE flight_raw_fragment (
  flid           text NOT NULL REFERENCES flight_schd (flid) ON DELETE CASCADE,
  fragment_kind  text NOT NULL CHECK (fragment_kind IN ('SRVT','VIPF')),
  ordinal        smallint NOT NULL,
  source_seq     integer,
  xml            text NOT NULL,
  PRIMARY KEY (flid, fragment_kind, ordinal)
);

-- Snapshot ledger (docs/flight-state.md "Snapshot ledger"): per operation day the snapshot version, the
-- latest snapshot's message, and the roster of that snapshot.
CREATE TABLE schd_gen (
  operation_day    date PRIMARY KEY,
  version          integer NOT NULL,
  last_message_id  bigint NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE TABLE schd_gen_flid (
  operation_day  date NOT NULL REFERENCES schd_gen (operation_day) ON DELETE CASCADE,
  flid           text NOT NULL,
  PRIMARY KEY (operation_day, flid)
);
CREATE INDEX schd_gen_flid_flid ON schd_gen_flid (flid);

-- Append-only log of applied snapshots (rebuildable, never used for decisions; retention
-- msgx.snap-log.retention).
CREATE TABLE schd_snap_log (
  id             bigserial PRIMARY KEY,
  msg_id         bigint NOT NULL,
  styp           text NOT NULL,
  operation_day  date,
  version        integer,                   -- SCHD_GEN.VERSION after the snapshot (NULL: replay)
  outcome        text NOT NULL,             -- APPLIED | REPLAY
  recs           integer NOT NULL,
  written        integer NOT NULL,          -- flights whose state changed
  unchanged      integer NOT NULL,
  deleted        integer NOT NULL,
  created_at     timestamptz NOT NULL
);
CREATE INDEX schd_snap_log_created ON schd_snap_log (created_at);

-- Outbox (docs/flight-state.md "Outbox"). EVENT_ID from one global sequence; every writer holds
-- PIPELINE_LOCK, so ID order = commit order.
CREATE SEQUENCE msg_event_id_seq START 1;
CREATE TABLE msg_event (
  event_id         bigint PRIMARY KEY DEFAULT nextval('msg_event_id_seq'),
  target           text NOT NULL CHECK (target IN ('msg','schd')),
  flid             text NOT NULL,
  state_version    integer NOT NULL,
  payload          jsonb NOT NULL,
  state            text NOT NULL DEFAULT 'PENDING' CHECK (state IN ('PENDING','SENT','DEAD','SKIPPED')),
  attempts         integer NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz,
  sent_at          timestamptz,
  kafka_partition  integer,
  kafka_offset     text,
  last_error       text,
  created_at       timestamptz NOT NULL
);
ALTER SEQUENCE msg_event_id_seq OWNED BY msg_event.event_id;
-- schd: one row per FLID, upserted (each upsert takes a new event_id).
CREATE UNIQUE INDEX msg_event_schd_flid ON msg_event (flid) WHERE target = 'schd';
-- dispatcher scans: PENDING msg events in event_id order; PENDING schd rows in event_id order.
CREATE INDEX msg_event_msg_pending ON msg_event (event_id) WHERE target = 'msg' AND state = 'PENDING';
CREATE INDEX msg_event_schd_pending ON msg_event (event_id) WHERE target = 'schd' AND state = 'PENDING';
-- retention of SENT rows, dead-letter listing
CREATE INDEX msg_event_state_sent ON msg_event (target, state, sent_at) WHERE state <> 'PENDING';
CREATE INDEX msg_event_flid ON msg_event (flid, event_id);

-- Down Migration
DROP TABLE msg_event;
DROP TABLE schd_snap_log;
DROP TABLE schd_gen_flid;
DROP TABLE schd_gen;
DROP TABLE flight_raw_fragment;
DROP TABLE flight_route_point;
DROP TABLE flight_tractor;
DROP TABLE flight_pushback;
DROP TABLE flight_airbridge;
DROP TABLE flight_delay;
DROP TABLE flight_chock;
DROP TABLE flight_planned_stand;
DROP TABLE flight_chute;
DROP TABLE flight_carousel;
DROP TABLE flight_checkin;
DROP TABLE flight_gate;
DROP TABLE flight_schd;
