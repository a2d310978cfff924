-- Up Migration
-- The service an INFRA failure of a message was on (postgres, mariadb, redis; null: none a probe
-- can tell, e.g. a lock or statement timeout). While such a message is the FAILED head, the pump
-- asks that service whether it answers again instead of waiting out the backoff
-- (lib/pipeline/failures.ts probeTarget). Kept as data: the reason text is for people.
ALTER TABLE proc_state ADD COLUMN error_service text CHECK (error_service IN ('postgres', 'mariadb', 'redis'));

-- Down Migration
ALTER TABLE proc_state DROP COLUMN error_service;
