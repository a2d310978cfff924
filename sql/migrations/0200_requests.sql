-- Up Migration
-- REQ_TRACK: outbound requests to the AODB (docs/reference-data.md "Requests").
-- PENDING → SENT → DONE | EXPIRED | FAILED; PENDING → EXPIRED. One open (PENDING/SENT)
-- slot per kind (RQRD, RQFD), enforced by a partial unique index.
CREATE TABLE req_track (
  id                bigserial PRIMARY KEY,
  kind              text NOT NULL CHECK (kind IN ('RQRD','RQFD')),
  rtype             text,                         -- RQRD: the requested reference TYPE (= outbound STYP)
  operation_day     date,                         -- RQFD: the requested operation day
  state             text NOT NULL DEFAULT 'PENDING'
                    CHECK (state IN ('PENDING','SENT','DONE','EXPIRED','FAILED')),
  seqn              integer NOT NULL CHECK (seqn BETWEEN 1 AND 999999),  -- META/SEQN sent
  body              text NOT NULL,                -- the exact COUTMSGS_CLOB_MSG (reconciliation compares it)
  routing_id        text NOT NULL,                -- COUTMSGS.ROUTINGID
  created_at        timestamptz NOT NULL,
  attempted_at      timestamptz,                  -- last COUTMSGS insert attempt; set = outcome may be unknown → reconcile first
  sent_at           timestamptz,                  -- set only after the COUTMSGS insert was confirmed
  closed_at         timestamptz,
  closed_by_msg_id  bigint,                       -- inbox message (RESP/DNLD/EROR) that closed it
  error_text        text,                         -- EROR text, or why it expired
  coutmsgs_id       bigint,                       -- COUTMSGS_ID of the confirmed insert
  CHECK ((kind = 'RQRD' AND rtype IS NOT NULL AND operation_day IS NULL)
      OR (kind = 'RQFD' AND operation_day IS NOT NULL AND rtype IS NULL)),
  CHECK ((state IN ('PENDING','SENT')) = (closed_at IS NULL))
);
-- At most one open request per kind (a new one expires the open one first).
CREATE UNIQUE INDEX req_track_one_open_per_kind ON req_track (kind) WHERE state IN ('PENDING','SENT');
-- G-RESP-GUARD: "a closed request for that day exists?"; retention of closed rows.
CREATE INDEX req_track_rqfd_day ON req_track (operation_day) WHERE kind = 'RQFD';
CREATE INDEX req_track_closed ON req_track (closed_at) WHERE closed_at IS NOT NULL;

-- Outbound META/SEQN: 6 digits, wraps after 999999.
CREATE SEQUENCE req_outbound_seqn AS integer MINVALUE 1 MAXVALUE 999999 START 1 CYCLE;

-- Down Migration
DROP SEQUENCE req_outbound_seqn;
DROP TABLE req_track;
