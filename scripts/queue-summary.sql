-- The queue at a glance: jobs by state, work per replica, replica heartbeats.
-- Usage: psql "$DATABASE_URL" -f scripts/queue-summary.sql
-- Read-only. "Completed" counts results a replica wrote (probed_by) in the
-- last 5 minutes by the database clock.
\set QUIET on
\set ON_ERROR_STOP on
\pset null '-'
SET default_transaction_read_only = on;
SET statement_timeout = '60s';
-- One snapshot, so the sections add up.
BEGIN ISOLATION LEVEL REPEATABLE READ;
\set QUIET off

\echo '== Jobs by state =='
SELECT st.state,
       count(j.id)                                         AS jobs,
       count(j.id) FILTER (WHERE st.state = 'READY' AND j.available_at <= clock_timestamp())
                                                           AS due_now,
       count(j.id) FILTER (WHERE st.state = 'RUNNING' AND j.lease_until < clock_timestamp())
                                                           AS lease_expired
FROM (VALUES (1, 'READY'), (2, 'RUNNING'), (3, 'DONE'), (4, 'FAILED')) AS st(ord, state)
LEFT JOIN monitoring_job j ON j.state = st.state
GROUP BY st.ord, st.state
ORDER BY st.ord;

\echo '== Work per replica: RUNNING now, results written in the last 5 minutes =='
WITH running AS (
    SELECT owner_instance AS name,
           count(*)                                             AS running_now,
           count(*) FILTER (WHERE lease_until < clock_timestamp()) AS running_lease_expired
    FROM monitoring_job
    WHERE state = 'RUNNING'
    GROUP BY owner_instance
), completed AS (
    SELECT probed_by AS name,
           count(*)                                   AS completed_5m,
           count(*) FILTER (WHERE status = 'DOWN')    AS down_5m,
           round(avg(latency_ms)::numeric, 1)         AS avg_latency_ms_5m,
           max(observed_at)                           AS last_completed_at
    FROM monitoring_job_result
    WHERE observed_at > clock_timestamp() - interval '5 minutes'
    GROUP BY probed_by
), names AS (
    SELECT name FROM vigil_instance
    UNION SELECT name FROM running
    UNION SELECT name FROM completed
)
SELECT n.name                                    AS replica,
       coalesce(r.running_now, 0)                AS running_now,
       coalesce(r.running_lease_expired, 0)      AS lease_expired,
       coalesce(c.completed_5m, 0)               AS completed_5m,
       coalesce(c.down_5m, 0)                    AS down_5m,
       c.avg_latency_ms_5m,
       c.last_completed_at
FROM names n
LEFT JOIN running r ON r.name = n.name
LEFT JOIN completed c ON c.name = n.name
ORDER BY n.name;

\echo '== Replicas (vigil_instance) by heartbeat age =='
SELECT name,
       addr,
       version,
       started_at,
       heartbeat_at,
       date_trunc('second', clock_timestamp() - heartbeat_at) AS heartbeat_age,
       stopped_at
FROM vigil_instance
ORDER BY stopped_at IS NOT NULL, heartbeat_at DESC, name;

\set QUIET on
COMMIT;
