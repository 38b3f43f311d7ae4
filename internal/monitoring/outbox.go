package monitoring

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The outbox side of alerts. An alert_outbox event (written by Complete) is routed into one
// alert_delivery row per matching webhook; deliveries are claimed by any replica's
// dispatcher like jobs: a short claim statement with a lease and a fresh owner token on the
// DB clock, the POST outside any transaction, then a write guarded by id + token +
// unexpired lease. A dispatcher that stalls past its lease loses the delivery to another,
// which sends it again with the same Idempotency-Key.

var (
	// ErrStaleDelivery is returned by the guarded delivery writes when the caller no longer
	// holds the delivery: its lease expired or another dispatcher took it over.
	ErrStaleDelivery = errors.New("delivery no longer held by this dispatcher")
	// ErrDeliveryNotFailed is returned when an operator retries a delivery that is not
	// FAILED.
	ErrDeliveryNotFailed = errors.New("delivery is not FAILED")
)

// Delivery states.
const (
	DeliveryPending   = "PENDING"
	DeliverySending   = "SENDING"
	DeliveryDelivered = "DELIVERED"
	DeliveryFailed    = "FAILED"
)

// AlertEvent is an outbox event with what a message about it needs.
type AlertEvent struct {
	ID          int64
	Key         string // unique, derived from the job that raised it
	Kind        string // DOWN or UP
	Service     string
	Group       string // "" when ungrouped
	Slot        int64  // the slot whose result raised it, epoch seconds
	Reason      string // why the check failed; "" for UP
	LatencyMS   *float64
	HTTPStatus  *int
	DownSeconds *float64 // for UP: how long the service was down
	TargetURL   string
	CreatedAt   time.Time
}

// SlotTime is the event's slot start.
func (e AlertEvent) SlotTime() time.Time { return time.Unix(e.Slot, 0).UTC() }

// Delivery is one (event, webhook) pair claimed by a dispatcher.
type Delivery struct {
	ID          int64
	Webhook     string
	Attempt     int // 1 for the first claim
	MaxAttempts int
	Token       uuid.UUID
	LeaseUntil  time.Time
	Event       AlertEvent
}

// WebhookRoute is what routing needs to know about a webhook.
type WebhookRoute struct {
	Name        string
	Down, Up    bool // which event kinds it receives
	MaxAttempts int
}

// RouteEvents splits events that have not been routed yet into one PENDING delivery per
// matching webhook, and marks them routed, in one statement. ON CONFLICT makes a repeat
// harmless and SKIP LOCKED lets replicas route different events at once. An event that no
// webhook wants is marked routed with no deliveries. It returns the numbers of events
// routed and deliveries created.
func (s *Store) RouteEvents(ctx context.Context, routes []WebhookRoute) (events, deliveries int64, err error) {
	const q = `
WITH events AS MATERIALIZED (
    SELECT id, kind FROM alert_outbox
    WHERE routed_at IS NULL
    ORDER BY id
    LIMIT 500
    FOR UPDATE SKIP LOCKED
), created AS (
    INSERT INTO alert_delivery (event_id, webhook, max_attempts, available_at)
    SELECT e.id, w.name, w.max_attempts, clock_timestamp()
    FROM events e
    JOIN unnest($1::text[], $2::bool[], $3::bool[], $4::int[]) AS w(name, down, up, max_attempts)
      ON (e.kind = 'DOWN' AND w.down) OR (e.kind = 'UP' AND w.up)
    ON CONFLICT (event_id, webhook) DO NOTHING
    RETURNING 1
), routed AS (
    UPDATE alert_outbox o SET routed_at = clock_timestamp()
    FROM events WHERE o.id = events.id
    RETURNING 1
)
SELECT (SELECT count(*) FROM routed), (SELECT count(*) FROM created)`
	names := make([]string, len(routes))
	down := make([]bool, len(routes))
	up := make([]bool, len(routes))
	attempts := make([]int32, len(routes))
	for i, r := range routes {
		names[i], down[i], up[i], attempts[i] = r.Name, r.Down, r.Up, int32(max(r.MaxAttempts, 1))
	}
	if err := s.pool.QueryRow(ctx, q, names, down, up, attempts).Scan(&events, &deliveries); err != nil {
		return 0, 0, fmt.Errorf("route alert events: %w", err)
	}
	return events, deliveries, nil
}

// DeliveryClaimParams says who claims how many deliveries of which webhooks for how long.
type DeliveryClaimParams struct {
	Instance string
	Limit    int
	Lease    time.Duration
	// Webhooks this replica knows: a delivery for a webhook missing from its config file
	// is left for a replica that has it.
	Webhooks []string
}

// ClaimDeliveries takes up to Limit deliveries: SENDING ones whose lease expired (attempts
// left) first, then due PENDING ones, each with a new owner token and a lease on the DB
// clock, and returns them with their events. One statement, committed before any POST.
// The picks are MATERIALIZED CTEs so the LIMIT holds (see Store.Claim).
func (s *Store) ClaimDeliveries(ctx context.Context, p DeliveryClaimParams) ([]Delivery, error) {
	const q = `
WITH expired AS MATERIALIZED (
    SELECT id FROM alert_delivery
    WHERE state = 'SENDING' AND lease_until <= (SELECT clock_timestamp()) AND attempts < max_attempts
      AND webhook = ANY($4::text[])
    ORDER BY lease_until
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), due AS MATERIALIZED (
    SELECT id FROM alert_delivery
    WHERE state = 'PENDING' AND available_at <= (SELECT clock_timestamp()) AND webhook = ANY($4::text[])
    ORDER BY available_at, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), picked AS MATERIALIZED (
    SELECT id FROM expired
    UNION ALL
    SELECT id FROM due
    LIMIT $1
)
UPDATE alert_delivery d
SET state = 'SENDING',
    attempts = d.attempts + 1,
    owner_token = gen_random_uuid(),
    owner_instance = $2,
    lease_until = clock_timestamp() + $3 * interval '1 millisecond',
    claimed_at = clock_timestamp()
FROM picked, alert_outbox e
JOIN monitored_service m ON m.id = e.service_id
LEFT JOIN monitoring_group g ON g.id = m.group_id
LEFT JOIN monitoring_job j ON j.id = e.job_id
LEFT JOIN monitoring_job_result r ON r.job_id = e.job_id
WHERE d.id = picked.id AND e.id = d.event_id
RETURNING d.id, d.webhook, d.attempts, d.max_attempts, d.owner_token, d.lease_until,
          e.id, e.event_key, e.kind, m.name, coalesce(g.name, ''), e.scheduled_slot, coalesce(e.reason, ''),
          r.latency_ms, r.http_status, e.down_seconds, coalesce(j.target_url, m.url), e.created_at`
	if p.Limit <= 0 || len(p.Webhooks) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, q, p.Limit, p.Instance, p.Lease.Milliseconds(), p.Webhooks)
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Delivery, error) {
		var d Delivery
		e := &d.Event
		err := row.Scan(&d.ID, &d.Webhook, &d.Attempt, &d.MaxAttempts, &d.Token, &d.LeaseUntil,
			&e.ID, &e.Key, &e.Kind, &e.Service, &e.Group, &e.Slot, &e.Reason,
			&e.LatencyMS, &e.HTTPStatus, &e.DownSeconds, &e.TargetURL, &e.CreatedAt)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	return out, nil
}

// The guard every dispatcher write repeats: same delivery, still SENDING, same token,
// lease not yet expired on the DB clock.
const deliveryGuard = `id = $1 AND state = 'SENDING' AND owner_token = $2 AND lease_until > clock_timestamp()`

// MarkDelivered records a 2xx answer. ErrStaleDelivery when the caller no longer holds
// the delivery: another dispatcher has it (or will), and sends it again with the same key.
func (s *Store) MarkDelivered(ctx context.Context, id int64, token uuid.UUID, httpStatus int) error {
	const q = `
UPDATE alert_delivery
SET state = 'DELIVERED', owner_token = NULL, lease_until = NULL, finished_at = clock_timestamp(),
    last_http_status = $3, last_error = NULL
WHERE ` + deliveryGuard
	tag, err := s.pool.Exec(ctx, q, id, token, nullInt(httpStatus))
	if err != nil {
		return fmt.Errorf("mark delivery %d delivered: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrStaleDelivery
	}
	return nil
}

// DeliveryRetryParams hands a delivery back after a failed attempt.
type DeliveryRetryParams struct {
	ID         int64
	Token      uuid.UUID
	Error      string
	HTTPStatus int           // 0 when no response arrived
	Delay      time.Duration // backoff before the next attempt, from now on the DB clock
}

// RetryDeliveryLater makes the delivery PENDING again after Delay, or FAILED when it used
// its last attempt. It returns the new state.
func (s *Store) RetryDeliveryLater(ctx context.Context, p DeliveryRetryParams) (string, error) {
	const q = `
UPDATE alert_delivery
SET state = CASE WHEN attempts >= max_attempts THEN 'FAILED' ELSE 'PENDING' END,
    available_at = CASE WHEN attempts >= max_attempts THEN available_at
                   ELSE clock_timestamp() + $3 * interval '1 millisecond' END,
    finished_at = CASE WHEN attempts >= max_attempts THEN clock_timestamp() END,
    owner_token = NULL, lease_until = NULL, last_error = $4, last_http_status = $5
WHERE ` + deliveryGuard + `
RETURNING state`
	var state string
	err := s.pool.QueryRow(ctx, q, p.ID, p.Token, p.Delay.Milliseconds(), p.Error, nullInt(p.HTTPStatus)).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrStaleDelivery
	}
	if err != nil {
		return "", fmt.Errorf("retry delivery %d: %w", p.ID, err)
	}
	return state, nil
}

// ReleaseDelivery gives a held delivery back at shutdown: PENDING now, with its attempt
// returned, since the POST was interrupted rather than answered.
func (s *Store) ReleaseDelivery(ctx context.Context, id int64, token uuid.UUID) error {
	const q = `
UPDATE alert_delivery
SET state = 'PENDING', attempts = attempts - 1, available_at = clock_timestamp(),
    owner_token = NULL, lease_until = NULL
WHERE ` + deliveryGuard
	tag, err := s.pool.Exec(ctx, q, id, token)
	if err != nil {
		return fmt.Errorf("release delivery %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrStaleDelivery
	}
	return nil
}

// FailExhaustedDeliveries moves SENDING deliveries whose lease expired on their last
// attempt to FAILED: their dispatchers died or stalled every time. Bounded per call.
func (s *Store) FailExhaustedDeliveries(ctx context.Context) (int64, error) {
	const q = `
WITH exhausted AS MATERIALIZED (
    SELECT id FROM alert_delivery
    WHERE state = 'SENDING' AND lease_until <= (SELECT clock_timestamp()) AND attempts >= max_attempts
    LIMIT 1000
    FOR UPDATE SKIP LOCKED
)
UPDATE alert_delivery d
SET state = 'FAILED', owner_token = NULL, lease_until = NULL, finished_at = clock_timestamp(),
    last_error = format('lease expired on attempt %s of %s (dispatcher %s)', d.attempts, d.max_attempts, coalesce(d.owner_instance, 'unknown'))
FROM exhausted
WHERE d.id = exhausted.id`
	tag, err := s.pool.Exec(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("fail exhausted deliveries: %w", err)
	}
	return tag.RowsAffected(), nil
}

// RetryFailedDelivery is an operator's retry: a FAILED delivery becomes PENDING now with
// a fresh series of attempts. Its last error stays visible until the next attempt. The
// Idempotency-Key is unchanged, so a receiver that did get an earlier attempt can drop it.
// ErrNotFound if there is no such delivery, ErrDeliveryNotFailed if it is not FAILED.
func (s *Store) RetryFailedDelivery(ctx context.Context, id int64) error {
	const q = `
UPDATE alert_delivery
SET state = 'PENDING', attempts = 0, available_at = clock_timestamp(), finished_at = NULL
WHERE id = $1 AND state = 'FAILED'`
	tag, err := s.pool.Exec(ctx, q, id)
	if err != nil {
		return fmt.Errorf("retry delivery %d: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var state string
	err = s.pool.QueryRow(ctx, `SELECT state FROM alert_delivery WHERE id = $1`, id).Scan(&state)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("delivery %d: %w", id, ErrNotFound)
	case err != nil:
		return fmt.Errorf("retry delivery %d: %w", id, err)
	}
	return fmt.Errorf("delivery %d is %s: %w", id, state, ErrDeliveryNotFailed)
}

// OutboxHealth is what /metrics reports about alert delivery.
type OutboxHealth struct {
	Pending  int64 // deliveries PENDING or SENDING
	Failed   int64 // deliveries that gave up; an operator may retry them
	Unrouted int64 // events not yet split into deliveries
	// OldestUndeliveredAge is the age of the oldest event that is unrouted or has a
	// delivery still PENDING or SENDING; 0 if none.
	OldestUndeliveredAge time.Duration
}

// OutboxHealth reads the delivery counts from the partial indexes.
func (s *Store) OutboxHealth(ctx context.Context) (OutboxHealth, error) {
	const q = `
SELECT
    (SELECT count(*) FROM alert_delivery WHERE state IN ('PENDING', 'SENDING')),
    (SELECT count(*) FROM alert_delivery WHERE state = 'FAILED'),
    (SELECT count(*) FROM alert_outbox WHERE routed_at IS NULL),
    coalesce(extract(epoch FROM clock_timestamp() - least(
        (SELECT min(created_at) FROM alert_outbox WHERE routed_at IS NULL),
        (SELECT min(e.created_at) FROM alert_delivery d JOIN alert_outbox e ON e.id = d.event_id
         WHERE d.state IN ('PENDING', 'SENDING'))
    ))::float8, 0)`
	var h OutboxHealth
	var oldest float64
	if err := s.pool.QueryRow(ctx, q).Scan(&h.Pending, &h.Failed, &h.Unrouted, &oldest); err != nil {
		return h, fmt.Errorf("outbox health: %w", err)
	}
	h.OldestUndeliveredAge = time.Duration(oldest * float64(time.Second))
	return h, nil
}
