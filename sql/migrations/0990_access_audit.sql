-- Up Migration
-- The audit trail of the HTTP routes (docs/operations.md "Access and roles"): every action and
-- every refusal (refusals at most one row per caller a minute, the rest counted in `suppressed`),
-- naming the person (`subject`: the token's sub, the API key's name, `dev`; `subject_name`: the
-- token's name or e-mail claim) and the role they had. Kept msgx.audit.retention
-- (lib/lifecycle/access-audit.ts).
CREATE TABLE access_audit (
  id            bigserial PRIMARY KEY,
  at            timestamptz NOT NULL,
  process       text NOT NULL,
  request_id    text,
  via           text,            -- oidc, key, dev; null: anonymous
  subject       text,
  subject_name  text,
  role          text,
  ip            text,
  method        text NOT NULL,
  route         text NOT NULL,
  action        text NOT NULL,   -- replay, dispatch-skip, …, or refused
  status        integer NOT NULL,
  outcome       text NOT NULL,   -- done, failed, refused
  touched       jsonb,           -- {"msgIds": […]} / {"eventIds": […]} / {"requestIds": […]}
  selection     jsonb,
  result        jsonb,
  suppressed    integer NOT NULL DEFAULT 0
);
CREATE INDEX access_audit_at ON access_audit (at);

-- Down Migration
DROP TABLE access_audit;
