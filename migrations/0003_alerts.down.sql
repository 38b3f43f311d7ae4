DROP TABLE IF EXISTS maintenance_window, alert_delivery;
DROP INDEX IF EXISTS alert_outbox_unrouted_idx;
ALTER TABLE alert_outbox DROP COLUMN IF EXISTS routed_at;
