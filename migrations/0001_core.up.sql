-- Core schema: services, the job queue, results, latest status, the alert outbox,
-- singleton locks and replica heartbeats. See shared/DESIGN.md for the lifecycle.

CREATE TABLE monitoring_group (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> ''),
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE monitored_service (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name              text NOT NULL UNIQUE CHECK (name <> ''),
    group_id          bigint REFERENCES monitoring_group (id),
    url               text NOT NULL CHECK (url ~* '^https?://'),
    interval_seconds  integer NOT NULL CHECK (interval_seconds >= 1),
    timeout_ms        integer NOT NULL CHECK (timeout_ms > 0),
    enabled           boolean NOT NULL DEFAULT true,
    -- 'config' rows are owned by the config file; a later admin UI adds 'admin'.
    source            text NOT NULL DEFAULT 'config' CHECK (source IN ('config', 'admin')),
    -- Set when the service left the config file: no new jobs, history kept.
    retired_at        timestamptz,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE monitoring_job (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    service_id      bigint NOT NULL REFERENCES monitored_service (id),
    -- Slot start in epoch seconds (DB clock, floored to the interval).
    scheduled_slot  bigint NOT NULL,
    -- Snapshot of the target at enqueue time: a config change affects the next slot only.
    target_url      text NOT NULL,
    timeout_ms      integer NOT NULL CHECK (timeout_ms > 0),
    state           text NOT NULL DEFAULT 'READY'
                    CHECK (state IN ('READY', 'RUNNING', 'DONE', 'FAILED')),
    attempts        integer NOT NULL DEFAULT 0,
    max_attempts    integer NOT NULL CHECK (max_attempts >= 1),
    available_at    timestamptz NOT NULL,
    owner_token     uuid,
    owner_instance  text,
    lease_until     timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_at      timestamptz,
    finished_at     timestamptz,
    CONSTRAINT monitoring_job_one_per_slot UNIQUE (service_id, scheduled_slot),
    CONSTRAINT monitoring_job_attempts_bounded CHECK (attempts BETWEEN 0 AND max_attempts),
    -- A job is RUNNING if and only if it has an owner token and a lease.
    CONSTRAINT monitoring_job_running_has_owner
        CHECK ((state = 'RUNNING') = (owner_token IS NOT NULL)
           AND (state = 'RUNNING') = (lease_until IS NOT NULL)),
    CONSTRAINT monitoring_job_finished CHECK ((state IN ('DONE', 'FAILED')) = (finished_at IS NOT NULL))
);

-- The hot path: due READY jobs, and RUNNING jobs whose lease may have expired.
CREATE INDEX monitoring_job_ready_idx ON monitoring_job (available_at, id) WHERE state = 'READY';
CREATE INDEX monitoring_job_running_idx ON monitoring_job (lease_until) WHERE state = 'RUNNING';
CREATE INDEX monitoring_job_failed_idx ON monitoring_job (finished_at) WHERE state = 'FAILED';
CREATE INDEX monitoring_job_slot_idx ON monitoring_job (scheduled_slot);

CREATE TABLE monitoring_job_result (
    job_id          bigint PRIMARY KEY REFERENCES monitoring_job (id),
    service_id      bigint NOT NULL REFERENCES monitored_service (id),
    scheduled_slot  bigint NOT NULL,
    status          text NOT NULL CHECK (status IN ('UP', 'DOWN')),
    latency_ms      double precision NOT NULL CHECK (latency_ms >= 0),
    http_status     integer,
    error           text,
    attempt         integer NOT NULL,
    -- Which claim wrote this row: the token and replica that held the lease.
    owner_token     uuid NOT NULL,
    probed_by       text NOT NULL,
    observed_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX monitoring_job_result_service_slot_idx
    ON monitoring_job_result (service_id, scheduled_slot DESC);

CREATE TABLE service_status (
    service_id            bigint PRIMARY KEY REFERENCES monitored_service (id),
    status                text NOT NULL CHECK (status IN ('UP', 'DOWN')),
    last_slot             bigint NOT NULL,
    last_job_id           bigint NOT NULL,
    checked_at            timestamptz NOT NULL,
    checked_by            text NOT NULL,
    latency_ms            double precision NOT NULL,
    http_status           integer,
    error                 text,
    consecutive_failures  integer NOT NULL DEFAULT 0,
    consecutive_successes integer NOT NULL DEFAULT 0,
    -- When status last changed.
    status_since          timestamptz NOT NULL,
    -- The state alerts last announced: UNKNOWN until the first UP.
    alert_state           text NOT NULL DEFAULT 'UNKNOWN'
                          CHECK (alert_state IN ('UNKNOWN', 'UP', 'DOWN')),
    alert_since           timestamptz
);

CREATE TABLE alert_outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Derived from the job id: one transition per completed job at most.
    event_key       text NOT NULL UNIQUE,
    service_id      bigint NOT NULL REFERENCES monitored_service (id),
    job_id          bigint NOT NULL REFERENCES monitoring_job (id),
    scheduled_slot  bigint NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('DOWN', 'UP')),
    reason          text,
    -- For a recovery: how long the service was down, in seconds.
    down_seconds    double precision,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX alert_outbox_service_idx ON alert_outbox (service_id, created_at DESC);

CREATE TABLE scheduler_lock (
    name        text PRIMARY KEY,
    lock_until  timestamptz NOT NULL,
    locked_at   timestamptz NOT NULL,
    locked_by   text NOT NULL
);

CREATE TABLE vigil_instance (
    name          text PRIMARY KEY,
    addr          text NOT NULL,
    version       text NOT NULL,
    started_at    timestamptz NOT NULL,
    heartbeat_at  timestamptz NOT NULL,
    stopped_at    timestamptz
);
