package monitoring

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

type statusUpdate struct {
	serviceID, jobID, slot int64
	result                 ProbeResult
	checkedAt              time.Time
	checkedBy              string
}

// serviceState is a service_status row as it stands after an update.
type serviceState struct {
	status               string
	consecutiveFailures  int
	consecutiveSuccesses int
	statusSince          time.Time
	checkedAt            time.Time
	alertState           string // UNKNOWN, UP or DOWN: what alerts last announced
	alertSince           *time.Time
	reason               string
}

// upsertStatus stores the latest status only when this slot is newer than the
// stored one, so a slow old slot completing late cannot overwrite a newer
// result or flip the alert state. It reports false when it changed nothing.
func upsertStatus(ctx context.Context, tx pgx.Tx, u statusUpdate) (serviceState, bool, error) {
	const q = `
INSERT INTO service_status AS s
    (service_id, status, last_slot, last_job_id, checked_at, checked_by, latency_ms, http_status, error,
     consecutive_failures, consecutive_successes, status_since, degraded)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,
        CASE WHEN $2 = 'DOWN' THEN 1 ELSE 0 END, CASE WHEN $2 = 'UP' THEN 1 ELSE 0 END, $5, $10)
ON CONFLICT (service_id) DO UPDATE SET
    status = EXCLUDED.status,
    last_slot = EXCLUDED.last_slot,
    last_job_id = EXCLUDED.last_job_id,
    checked_at = EXCLUDED.checked_at,
    checked_by = EXCLUDED.checked_by,
    latency_ms = EXCLUDED.latency_ms,
    http_status = EXCLUDED.http_status,
    error = EXCLUDED.error,
    degraded = EXCLUDED.degraded,
    consecutive_failures = CASE WHEN EXCLUDED.status = 'DOWN' THEN s.consecutive_failures + 1 ELSE 0 END,
    consecutive_successes = CASE WHEN EXCLUDED.status = 'UP' THEN s.consecutive_successes + 1 ELSE 0 END,
    status_since = CASE WHEN EXCLUDED.status = s.status THEN s.status_since ELSE EXCLUDED.checked_at END
WHERE s.last_slot < EXCLUDED.last_slot
RETURNING status, consecutive_failures, consecutive_successes, status_since, checked_at, alert_state, alert_since`
	r := u.result
	var st serviceState
	err := tx.QueryRow(ctx, q, u.serviceID, r.Status, u.slot, u.jobID, u.checkedAt, u.checkedBy,
		latencyMS(r.Latency), nullInt(r.HTTPStatus), nullString(r.Error), r.Degraded).
		Scan(&st.status, &st.consecutiveFailures, &st.consecutiveSuccesses, &st.statusSince,
			&st.checkedAt, &st.alertState, &st.alertSince)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil // an older slot: the stored status is newer
	}
	if err != nil {
		return st, false, fmt.Errorf("update service status: %w", err)
	}
	st.reason = r.Error
	return st, true, nil
}

type alertDecision struct {
	state    string // the alert state after this result
	event    string // DOWN or UP when an alert is due, "" when the change is silent
	heldBack string // the maintenance window that held an alert back, if one did
}

// alertPolicy is the alerts section of the config file, as far as deciding goes.
type alertPolicy struct {
	failureThreshold int
	successThreshold int
	beforeFirstUp    bool // announce DOWN for a service never seen UP
}

// decideAlert is nextAlert with maintenance windows applied: a transition that would be
// announced for a slot inside a window covering the service is held back, and the alert
// state stays as it was, so the transition is announced after the window if it still
// holds then (and never, if the service recovered inside the window).
func decideAlert(ctx context.Context, tx pgx.Tx, serviceID, slot int64, st serviceState, p alertPolicy) (alertDecision, error) {
	next := nextAlert(st, p)
	if next.event == "" {
		return next, nil
	}
	window, err := maintenanceWindowAt(ctx, tx, serviceID, slot)
	if err != nil {
		return alertDecision{}, err
	}
	if window != "" {
		return alertDecision{state: st.alertState, heldBack: window}, nil
	}
	return next, nil
}

// nextAlert decides the alert state after a result. A service must have been
// seen UP before a DOWN is announced (a service that never worked is not an
// outage) unless the policy says beforeFirstUp; DOWN needs failureThreshold
// consecutive DOWN results, and recovery successThreshold consecutive UPs.
func nextAlert(st serviceState, p alertPolicy) alertDecision {
	failureThreshold := max(p.failureThreshold, 1)
	successThreshold := max(p.successThreshold, 1)
	switch st.alertState {
	case "UNKNOWN":
		if st.status == "UP" {
			return alertDecision{state: "UP"} // first sight of the service working: nothing to announce
		}
		if p.beforeFirstUp && st.consecutiveFailures >= failureThreshold {
			return alertDecision{state: "DOWN", event: "DOWN"}
		}
	case "UP":
		if st.status == "DOWN" && st.consecutiveFailures >= failureThreshold {
			return alertDecision{state: "DOWN", event: "DOWN"}
		}
	case "DOWN":
		if st.status == "UP" && st.consecutiveSuccesses >= successThreshold {
			return alertDecision{state: "UP", event: "UP"}
		}
	}
	return alertDecision{state: st.alertState}
}

// recordAlert moves the service's alert state and, for an announced
// transition, writes the outbox row in the completing transaction. The event
// key is derived from the job id: one job completes once, so one event.
func recordAlert(ctx context.Context, tx pgx.Tx, serviceID, jobID, slot int64, st serviceState, next alertDecision) error {
	// A DOWN period starts with the first failing check, not when the
	// threshold was reached, so a recovery can say how long it really lasted.
	since := st.checkedAt
	if next.state == "DOWN" {
		since = st.statusSince
	}
	const update = `UPDATE service_status SET alert_state = $2, alert_since = $3 WHERE service_id = $1`
	if _, err := tx.Exec(ctx, update, serviceID, next.state, since); err != nil {
		return fmt.Errorf("update alert state: %w", err)
	}
	if next.event == "" {
		return nil
	}
	var downSeconds *float64
	if next.event == "UP" && st.alertSince != nil {
		d := st.checkedAt.Sub(*st.alertSince).Seconds()
		downSeconds = &d
	}
	const insert = `
INSERT INTO alert_outbox (event_key, service_id, job_id, scheduled_slot, kind, reason, down_seconds)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	key := fmt.Sprintf("job-%d-%s", jobID, next.event)
	if _, err := tx.Exec(ctx, insert, key, serviceID, jobID, slot, next.event, nullString(st.reason), downSeconds); err != nil {
		return fmt.Errorf("insert alert event: %w", err)
	}
	return nil
}
