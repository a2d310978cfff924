-- Up Migration
-- One `request` job = one request: the graphile-worker job that created a
-- request is recorded with it, so a retried job finds its own request and reconciles it
-- instead of creating (and sending) a second one. NULL for requests made by an operator
-- directly (CLI, POST /requests: their job carries the request id already).
ALTER TABLE req_track ADD COLUMN job_key text;
CREATE UNIQUE INDEX req_track_job_key ON req_track (job_key) WHERE job_key IS NOT NULL;

-- Down Migration
DROP INDEX req_track_job_key;
ALTER TABLE req_track DROP COLUMN job_key;
