-- The 50 most recent jobs (newest slot first) with their service, lease and result.
-- Usage: psql "$DATABASE_URL" -f scripts/recent-jobs.sql
-- Read-only. lease_left_s is negative when a RUNNING job's lease has expired;
-- result columns are empty until a replica completes the job.
\set QUIET on
\set ON_ERROR_STOP on
\pset null '-'
SET default_transaction_read_only = on;
SET statement_timeout = '30s';
\set QUIET off

\echo '== The 50 most recent jobs, newest slot first =='
SELECT j.id,
       s.name                                   AS service,
       to_timestamp(j.scheduled_slot)           AS slot,
       j.state,
       j.attempts || '/' || j.max_attempts      AS attempts,
       j.owner_instance,
       CASE WHEN j.state = 'RUNNING'
            THEN round(extract(epoch FROM j.lease_until - clock_timestamp())::numeric, 1)
       END                                      AS lease_left_s,
       r.status,
       round(r.latency_ms::numeric, 1)          AS latency_ms,
       r.http_status,
       r.error,
       r.probed_by,
       r.observed_at
FROM monitoring_job j
JOIN monitored_service s ON s.id = j.service_id
LEFT JOIN monitoring_job_result r ON r.job_id = j.id
ORDER BY j.scheduled_slot DESC, j.id DESC
LIMIT 50;
