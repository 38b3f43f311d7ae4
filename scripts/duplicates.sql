-- Checks Vigil's promise of one job and one result per (service, slot).
-- Usage: psql "$DATABASE_URL" -f scripts/duplicates.sql
-- Read-only. Every check below must report 0 rows; anything else is a bug in
-- Vigil (or a dropped constraint) and is worth an issue with the rows attached.
\set QUIET on
\set ON_ERROR_STOP on
\pset null '-'
SET default_transaction_read_only = on;
SET statement_timeout = '60s';
-- One snapshot, so the summary and the details agree.
BEGIN ISOLATION LEVEL REPEATABLE READ;
\set QUIET off

\echo '== Summary: every count must be 0 =='
SELECT check_name, violations, CASE WHEN violations = 0 THEN 'ok' ELSE 'VIOLATION' END AS verdict
FROM (VALUES
    ('(service, slot) pairs with more than one job',
     (SELECT count(*) FROM (SELECT 1 FROM monitoring_job
                            GROUP BY service_id, scheduled_slot HAVING count(*) > 1) d)),
    ('jobs with more than one result',
     (SELECT count(*) FROM (SELECT 1 FROM monitoring_job_result
                            GROUP BY job_id HAVING count(*) > 1) d)),
    ('(service, slot) pairs with more than one result',
     (SELECT count(*) FROM (SELECT 1 FROM monitoring_job_result
                            GROUP BY service_id, scheduled_slot HAVING count(*) > 1) d)),
    ('DONE jobs without a result, or results of jobs that are not DONE',
     (SELECT count(*) FROM monitoring_job j
      FULL JOIN monitoring_job_result r ON r.job_id = j.id
      WHERE (j.state = 'DONE') IS DISTINCT FROM (r.job_id IS NOT NULL)))
) AS c(check_name, violations);

\echo '== (service, slot) pairs with more than one job: must be empty =='
SELECT s.name                         AS service,
       j.scheduled_slot,
       to_timestamp(j.scheduled_slot) AS slot,
       count(*)                       AS jobs,
       array_agg(j.id ORDER BY j.id)  AS job_ids,
       array_agg(j.state ORDER BY j.id) AS states
FROM monitoring_job j
JOIN monitored_service s ON s.id = j.service_id
GROUP BY s.name, j.scheduled_slot
HAVING count(*) > 1
ORDER BY j.scheduled_slot DESC, s.name;

\echo '== Jobs with more than one result: must be empty =='
SELECT r.job_id,
       count(*)                                        AS results,
       array_agg(r.probed_by ORDER BY r.observed_at)   AS probed_by,
       array_agg(r.owner_token ORDER BY r.observed_at) AS owner_tokens
FROM monitoring_job_result r
GROUP BY r.job_id
HAVING count(*) > 1
ORDER BY r.job_id DESC;

\echo '== (service, slot) pairs with more than one result: must be empty =='
SELECT s.name                                     AS service,
       r.scheduled_slot,
       to_timestamp(r.scheduled_slot)             AS slot,
       count(*)                                   AS results,
       array_agg(r.job_id ORDER BY r.job_id)      AS job_ids,
       array_agg(r.probed_by ORDER BY r.job_id)   AS probed_by
FROM monitoring_job_result r
JOIN monitored_service s ON s.id = r.service_id
GROUP BY s.name, r.scheduled_slot
HAVING count(*) > 1
ORDER BY r.scheduled_slot DESC, s.name;

\echo '== DONE jobs without a result, or results of jobs that are not DONE: must be empty =='
SELECT coalesce(j.id, r.job_id) AS job_id,
       j.state,
       r.status                 AS result_status,
       r.probed_by,
       CASE WHEN r.job_id IS NULL THEN 'DONE without a result'
            ELSE 'result for a ' || coalesce(j.state, 'missing') || ' job' END AS problem
FROM monitoring_job j
FULL JOIN monitoring_job_result r ON r.job_id = j.id
WHERE (j.state = 'DONE') IS DISTINCT FROM (r.job_id IS NOT NULL)
ORDER BY 1 DESC
LIMIT 100;

\set QUIET on
COMMIT;
