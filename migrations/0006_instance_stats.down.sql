DROP INDEX IF EXISTS monitoring_job_service_id_idx;
DROP INDEX IF EXISTS monitoring_job_result_observed_idx;
ALTER TABLE vigil_instance DROP COLUMN IF EXISTS stale_completions;
