-- Data lifecycle (docs/lifecycle.md): per-service rollups kept far longer than raw
-- results, and the watermarks that make rollups incremental and retention safe.
--
-- Periods are epoch seconds like monitoring_job.scheduled_slot: an hour or a UTC day
-- holds the results whose slot starts in it. Latency figures cover every result of the
-- period, UP and DOWN, as the dashboard's charts do.

CREATE TABLE service_rollup_hourly (
    service_id      bigint NOT NULL REFERENCES monitored_service (id),
    hour_start      bigint NOT NULL CHECK (hour_start % 3600 = 0),
    checks          integer NOT NULL CHECK (checks > 0),
    up_count        integer NOT NULL CHECK (up_count BETWEEN 0 AND checks),
    latency_min_ms  double precision NOT NULL,
    latency_avg_ms  double precision NOT NULL,
    latency_p50_ms  double precision NOT NULL,
    latency_p95_ms  double precision NOT NULL,
    latency_max_ms  double precision NOT NULL,
    computed_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (service_id, hour_start)
);

-- Retention deletes by age across all services.
CREATE INDEX service_rollup_hourly_hour_idx ON service_rollup_hourly (hour_start);

CREATE TABLE service_rollup_daily (
    service_id      bigint NOT NULL REFERENCES monitored_service (id),
    day_start       bigint NOT NULL CHECK (day_start % 86400 = 0),
    checks          integer NOT NULL CHECK (checks > 0),
    up_count        integer NOT NULL CHECK (up_count BETWEEN 0 AND checks),
    latency_min_ms  double precision NOT NULL,
    latency_avg_ms  double precision NOT NULL,
    latency_p50_ms  double precision NOT NULL,
    latency_p95_ms  double precision NOT NULL,
    latency_max_ms  double precision NOT NULL,
    computed_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (service_id, day_start)
);

CREATE INDEX service_rollup_daily_day_idx ON service_rollup_daily (day_start);

-- How far the lifecycle has got, in epoch seconds:
--   rollup_hourly       every hour before it is rolled up and final
--   rollup_daily        every day before it is rolled up and final
--   raw_deleted_before  raw results (and DONE jobs) of slots before it may be gone;
--                       never later than either rollup watermark
CREATE TABLE lifecycle_watermark (
    name         text PRIMARY KEY CHECK (name IN ('rollup_hourly', 'rollup_daily', 'raw_deleted_before')),
    until_epoch  bigint NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Deleting a job makes PostgreSQL look for alert_outbox rows that reference it; without
-- this index every deleted job would scan the whole outbox.
CREATE INDEX IF NOT EXISTS alert_outbox_job_id_idx ON alert_outbox (job_id);
