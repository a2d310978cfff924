-- Up Migration
-- Change records are kept as json, not jsonb (docs/decisions.md "Change records as json"): a
-- snapshot's first apply writes one per flight, and jsonb's input rebuilt each into its binary
-- form — ≈ 10 % of that apply's business step — for a column that is only ever read whole (the
-- trace, the timeline, a flight as of a moment) or for its keys (the shadow). json checks the text
-- and keeps it as written (≈ 20 % fewer bytes a record). The table is rewritten once, here.
ALTER TABLE flight_change ALTER COLUMN changes TYPE json USING changes::json;

-- Down Migration
ALTER TABLE flight_change ALTER COLUMN changes TYPE jsonb USING changes::jsonb;
