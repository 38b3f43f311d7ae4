-- Jobs that used up every attempt: Vigil itself failed (DB error, crash loop),
-- not the target; a DOWN target completes its job as DONE with a DOWN result.
-- Usage: psql "$DATABASE_URL" -f scripts/failed-jobs.sql
-- Read-only. Newest first, at most 100.
\set QUIET on
\set ON_ERROR_STOP on
\pset null '-'
SET default_transaction_read_only = on;
SET statement_timeout = '30s';
\set QUIET off

\echo '== FAILED jobs, newest first (at most 100) =='
SELECT j.id,
       s.name                                   AS service,
       to_timestamp(j.scheduled_slot)           AS slot,
       j.attempts || '/' || j.max_attempts      AS attempts,
       j.owner_instance                         AS last_owner,
       j.last_error,
       j.finished_at
FROM monitoring_job j
JOIN monitored_service s ON s.id = j.service_id
WHERE j.state = 'FAILED'
ORDER BY j.finished_at DESC, j.id DESC
LIMIT 100;
