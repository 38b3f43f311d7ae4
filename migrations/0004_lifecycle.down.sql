DROP INDEX IF EXISTS alert_outbox_job_id_idx;
DROP TABLE IF EXISTS lifecycle_watermark, service_rollup_daily, service_rollup_hourly;
