ALTER TABLE alert_outbox DROP COLUMN written_xid;
ALTER TABLE monitoring_job_result DROP COLUMN guarded_at, DROP COLUMN lease_until;
