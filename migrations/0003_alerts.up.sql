-- Alert delivery: each outbox event becomes one delivery row per matching webhook, claimed
-- by any replica like a job (lease, owner token, DB clock); and the maintenance windows that
-- hold alerts back. See docs/alerts.md.

-- routed_at: when a dispatcher split the event into its deliveries (NULL: not yet).
ALTER TABLE alert_outbox ADD COLUMN routed_at timestamptz;
-- Events written before deliveries existed are history, not news: they are not sent now.
UPDATE alert_outbox SET routed_at = created_at;
CREATE INDEX alert_outbox_unrouted_idx ON alert_outbox (id) WHERE routed_at IS NULL;

CREATE TABLE alert_delivery (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Pruning an event takes its deliveries with it.
    event_id          bigint NOT NULL REFERENCES alert_outbox (id) ON DELETE CASCADE,
    -- The webhook's name in the config file.
    webhook           text NOT NULL CHECK (webhook <> ''),
    state             text NOT NULL DEFAULT 'PENDING'
                      CHECK (state IN ('PENDING', 'SENDING', 'DELIVERED', 'FAILED')),
    attempts          integer NOT NULL DEFAULT 0,
    max_attempts      integer NOT NULL CHECK (max_attempts >= 1),
    available_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    owner_token       uuid,
    owner_instance    text,
    lease_until       timestamptz,
    last_error        text,
    last_http_status  integer,
    created_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    claimed_at        timestamptz,
    finished_at       timestamptz,
    CONSTRAINT alert_delivery_once_per_webhook UNIQUE (event_id, webhook),
    CONSTRAINT alert_delivery_attempts_bounded CHECK (attempts BETWEEN 0 AND max_attempts),
    -- SENDING if and only if a dispatcher holds it under a token and a lease.
    CONSTRAINT alert_delivery_sending_has_owner
        CHECK ((state = 'SENDING') = (owner_token IS NOT NULL)
           AND (state = 'SENDING') = (lease_until IS NOT NULL)),
    CONSTRAINT alert_delivery_finished CHECK ((state IN ('DELIVERED', 'FAILED')) = (finished_at IS NOT NULL))
);

CREATE INDEX alert_delivery_pending_idx ON alert_delivery (available_at, id) WHERE state = 'PENDING';
CREATE INDEX alert_delivery_sending_idx ON alert_delivery (lease_until) WHERE state = 'SENDING';
CREATE INDEX alert_delivery_failed_idx ON alert_delivery (finished_at) WHERE state = 'FAILED';

-- Maintenance windows from the config file: results are recorded as usual, alerts are held
-- back. A window is one-off (starts_at..ends_at) or recurring (opens at each match of a
-- five-field cron expression in a time zone and stays open for duration_seconds).
CREATE TABLE maintenance_window (
    name              text PRIMARY KEY CHECK (name <> ''),
    service_names     text[] NOT NULL DEFAULT '{}',
    group_names       text[] NOT NULL DEFAULT '{}',
    starts_at         timestamptz,
    ends_at           timestamptz,
    cron              text,
    duration_seconds  integer,
    timezone          text,
    updated_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT maintenance_window_one_kind CHECK (
        (starts_at IS NOT NULL AND ends_at > starts_at
         AND cron IS NULL AND duration_seconds IS NULL AND timezone IS NULL)
     OR (cron IS NOT NULL AND duration_seconds > 0 AND timezone IS NOT NULL
         AND starts_at IS NULL AND ends_at IS NULL)),
    CONSTRAINT maintenance_window_has_targets CHECK (cardinality(service_names) + cardinality(group_names) > 0)
);
