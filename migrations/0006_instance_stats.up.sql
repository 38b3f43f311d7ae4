-- Stale completions are rejected without touching job data, so the replica
-- reports its own count with each heartbeat, for the shared /instances page.
ALTER TABLE vigil_instance ADD COLUMN stale_completions bigint NOT NULL DEFAULT 0;

-- /instances counts each replica's results of the last 5 minutes.
CREATE INDEX monitoring_job_result_observed_idx ON monitoring_job_result (observed_at);
-- /jobs?service= pages one service's jobs by id.
CREATE INDEX monitoring_job_service_id_idx ON monitoring_job (service_id, id);
