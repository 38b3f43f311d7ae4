-- Jobs that should be moving but are not: RUNNING with an expired lease, and
-- READY jobs that are due but unclaimed.
-- Usage: psql "$DATABASE_URL" -f scripts/stuck-jobs.sql
-- Read-only. An expired lease is normal for a moment after a replica crashes or
-- stalls: any replica re-claims it with a new token on its next poll. Rows that
-- stay here, or a due backlog that keeps growing, mean no replica is claiming.
\set QUIET on
\set ON_ERROR_STOP on
\pset null '-'
SET default_transaction_read_only = on;
SET statement_timeout = '30s';
\set QUIET off

\echo '== RUNNING jobs whose lease has expired (oldest expiry first) =='
SELECT j.id,
       s.name                                   AS service,
       to_timestamp(j.scheduled_slot)           AS slot,
       j.attempts || '/' || j.max_attempts      AS attempts,
       j.owner_instance,
       j.claimed_at,
       j.lease_until,
       date_trunc('second', clock_timestamp() - j.lease_until) AS expired_ago,
       j.last_error
FROM monitoring_job j
JOIN monitored_service s ON s.id = j.service_id
WHERE j.state = 'RUNNING'
  AND j.lease_until < clock_timestamp()
ORDER BY j.lease_until, j.id;

\echo '== READY jobs: due now, and the oldest waiting =='
SELECT count(*) FILTER (WHERE j.available_at <= clock_timestamp())  AS ready_due_now,
       count(*) FILTER (WHERE j.available_at > clock_timestamp())   AS ready_in_backoff,
       date_trunc('second', clock_timestamp()
                 - min(j.available_at) FILTER (WHERE j.available_at <= clock_timestamp()))
                                                                    AS oldest_due_waiting
FROM monitoring_job j
WHERE j.state = 'READY';

\echo '== The oldest due READY job =='
SELECT j.id,
       s.name                                   AS service,
       to_timestamp(j.scheduled_slot)           AS slot,
       j.attempts || '/' || j.max_attempts      AS attempts,
       j.available_at,
       date_trunc('second', clock_timestamp() - j.available_at) AS due_for,
       j.last_error
FROM monitoring_job j
JOIN monitored_service s ON s.id = j.service_id
WHERE j.state = 'READY'
  AND j.available_at <= clock_timestamp()
ORDER BY j.available_at, j.id
LIMIT 1;
