-- Up Migration
-- Static reference data (docs/reference-data.md): the logical REF_MASTER keyed (RTYPE, RKEY).
-- One table for every category (lib/refdata/keys.ts is the table of truth for types and keys);
-- the record is the whole SIS record as JSON (encoding in docs/reference-data.md), repeated
-- children included. admin-api reads one category by the primary-key prefix (rtype).
CREATE TABLE ref_master (
  rtype        text NOT NULL,        -- SIS TYPE (COUL, ARPT, …; CLST and CHLT are different rtypes)
  rkey         text NOT NULL,        -- the record's key field (COUC, ITCD, …)
  record       jsonb NOT NULL,       -- every field of the record; null = "not available"
  last_msg_id  bigint NOT NULL,      -- inbox message that last wrote the record
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (rtype, rkey)
);

-- Resource status (RSTA, SIS:3.14). Key (RTYP, RSID); the last message for a key wins.
-- Disabled at time t ⇔ stat = 'D' AND stdt <= t AND (eddt IS NULL OR t < eddt); otherwise enabled.
CREATE TABLE res_status (
  rtyp         text NOT NULL CHECK (rtyp IN ('BELT','CNTR','GATE','STND')),
  rsid         text NOT NULL,
  stat         text NOT NULL CHECK (stat IN ('E','D')),
  stdt         timestamptz,          -- D: window start (message time when STDT absent); E: NULL
  eddt         timestamptz,          -- D: window end, exclusive (NULL = until the next event); E: NULL
  remk         text,
  last_msg_id  bigint NOT NULL,
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (rtyp, rsid),
  CHECK (stat = 'D' OR (stdt IS NULL AND eddt IS NULL)),
  CHECK (eddt IS NULL OR stdt IS NULL OR eddt > stdt)
);

-- Seasonal schedule (SCHS), stored as received, replaced per season (SNAM, APCD).
CREATE TABLE schs_season (
  snam         text NOT NULL,        -- season name (e.g. Winter)
  apcd         text NOT NULL,        -- airport the season is for
  sdat         date NOT NULL,
  edat         date NOT NULL,
  recs         integer NOT NULL,
  flights      jsonb NOT NULL,       -- array of FLTR records, same JSON encoding as ref_master.record
  last_msg_id  bigint NOT NULL,
  updated_at   timestamptz NOT NULL,
  PRIMARY KEY (snam, apcd)
);

-- The stable read contract for admin-api (the physical layout behind it may change):
-- one row per record; filter by rtype (primary-key prefix), optionally rkey.
CREATE VIEW ref_master_view AS
SELECT m.rtype, m.rkey, m.record, m.last_msg_id, m.updated_at
  FROM ref_master m;

-- Down Migration
DROP VIEW ref_master_view;
DROP TABLE schs_season;
DROP TABLE res_status;
DROP TABLE ref_master;
