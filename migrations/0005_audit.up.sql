-- What the reliability audit (scripts/chaos, docs/reliability.md) checks every write of an
-- owner against. Rows written before this migration keep NULLs: "not recorded".

-- The lease the writer held when its guarded UPDATE passed, and the DB-clock time it
-- passed, with the job row locked. The guarded UPDATE clears lease_until on the job, so
-- the result keeps it: guarded_at < lease_until must hold for every row.
ALTER TABLE monitoring_job_result
    ADD COLUMN lease_until timestamptz,
    ADD COLUMN guarded_at timestamptz;

-- The transaction that wrote an alert event. The dispatcher updates outbox rows later
-- (routed_at), which changes their xmin; this column keeps the writer, so an audit can tell
-- that the event was written by the transaction that stored its job's result (that row's
-- xmin). Added without a default first so existing rows stay NULL instead of getting the
-- migration's own transaction id.
ALTER TABLE alert_outbox ADD COLUMN written_xid xid8;
ALTER TABLE alert_outbox ALTER COLUMN written_xid SET DEFAULT pg_current_xact_id();
