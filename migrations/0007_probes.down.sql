ALTER TABLE service_status DROP COLUMN IF EXISTS degraded;
ALTER TABLE monitoring_job_result DROP COLUMN IF EXISTS failed_condition;
ALTER TABLE monitoring_job_result DROP COLUMN IF EXISTS degraded;
-- NOT VALID: rows with tcp://, tls:// or dns:// urls may remain; new ones are refused.
ALTER TABLE monitored_service DROP CONSTRAINT IF EXISTS monitored_service_url_check;
ALTER TABLE monitored_service ADD CONSTRAINT monitored_service_url_check
    CHECK (url ~* '^https?://') NOT VALID;
ALTER TABLE monitoring_job DROP COLUMN IF EXISTS probe;
ALTER TABLE monitored_service DROP COLUMN IF EXISTS probe;
