-- Up Migration
-- A wake-up that is never lost (docs/decisions.md "Duties"). graphile-worker's add_jobs first
-- clears the key of a locked job of that key, then inserts with `on conflict (key) do update …
-- where locked_at is null`: a worker that locks the waiting job between those two statements
-- makes the insert do nothing and return no row, and the wake-up is dropped (the job that ran may
-- have read the queue before the waking transaction committed; seen as a pump that stayed idle
-- for a minute, until the keep-alive, after a Postgres half-open). msgx_wake calls add_jobs again
-- for every task it returned no row for: the next statement sees the lock, moves the key to a new
-- job and inserts it. A task still not woken after five calls is an error (the caller's
-- transaction rolls back and is retried), never a silent loss.
CREATE FUNCTION msgx_wake(tasks text[], at timestamptz DEFAULT NULL) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  left_over text[] := array(SELECT DISTINCT t FROM unnest(tasks) AS t);
  woken int := cardinality(left_over);
BEGIN
  FOR attempt IN 1..5 LOOP
    WITH added AS (
      SELECT j.key FROM graphile_worker.add_jobs(
        array(SELECT (t, '{}'::json, NULL, at, NULL, t, NULL, NULL)::graphile_worker.job_spec FROM unnest(left_over) AS t)) AS j
    )
    SELECT coalesce(array_agg(t), '{}') INTO left_over FROM unnest(left_over) AS t WHERE t NOT IN (SELECT key FROM added WHERE key IS NOT NULL);
    IF cardinality(left_over) = 0 THEN
      RETURN woken;
    END IF;
  END LOOP;
  RAISE EXCEPTION 'msgx_wake: % not woken after 5 calls of graphile_worker.add_jobs', left_over;
END $$;

-- Down Migration
DROP FUNCTION msgx_wake(text[], timestamptz);
