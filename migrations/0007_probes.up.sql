-- Probe definitions beyond "GET, 2xx is UP" (issue 9): the probe type, HTTP options and
-- conditions as one jsonb document. Secrets stay out of it: header, body and auth values
-- are stored as templates ("Bearer ${TOKEN}") and resolved by the probing replica.
-- The job keeps a snapshot, like target_url, so a config change affects the next slot only.
ALTER TABLE monitored_service ADD COLUMN probe jsonb NOT NULL DEFAULT '{}';
ALTER TABLE monitoring_job ADD COLUMN probe jsonb NOT NULL DEFAULT '{}';

-- tcp://, tls:// and dns:// targets besides http(s)://.
ALTER TABLE monitored_service DROP CONSTRAINT monitored_service_url_check;
ALTER TABLE monitored_service ADD CONSTRAINT monitored_service_url_check
    CHECK (url ~* '^(https?|tcp|tls|dns)://');

-- An UP result slower than the service's degraded_above, and the condition that made a
-- result DOWN (the observed value is in error).
ALTER TABLE monitoring_job_result ADD COLUMN degraded boolean NOT NULL DEFAULT false;
ALTER TABLE monitoring_job_result ADD COLUMN failed_condition text;
ALTER TABLE service_status ADD COLUMN degraded boolean NOT NULL DEFAULT false;
