package monitoring

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

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

// alertChange is one service's move of alert state, with the outbox event
// when the move is announced.
type alertChange struct {
	serviceID, jobID, slot int64
	st                     serviceState
	next                   alertDecision
}

// recordAlerts moves the services' alert states and writes an outbox row for
// each announced transition, in the completing transaction: two statements
// however many services changed (a fleet's first slot moves every service
// from UNKNOWN to UP at once). The event key is derived from the job id: one
// job completes once, so one event.
func recordAlerts(ctx context.Context, tx pgx.Tx, changes []alertChange) error {
	if len(changes) == 0 {
		return nil
	}
	var (
		services, jobs, slots []int64
		states, kinds         []string
		sinces                []time.Time
		keys                  []string
		reasons               []*string
		downSeconds           []*float64
		eventServices         []int64
	)
	for _, c := range changes {
		// A DOWN period starts with the first failing check, not when the
		// threshold was reached, so a recovery can say how long it really lasted.
		since := c.st.checkedAt
		if c.next.state == "DOWN" {
			since = c.st.statusSince
		}
		services, states, sinces = append(services, c.serviceID), append(states, c.next.state), append(sinces, since)
		if c.next.event == "" {
			continue
		}
		var down *float64
		if c.next.event == "UP" && c.st.alertSince != nil {
			d := c.st.checkedAt.Sub(*c.st.alertSince).Seconds()
			down = &d
		}
		keys = append(keys, fmt.Sprintf("job-%d-%s", c.jobID, c.next.event))
		eventServices, jobs, slots = append(eventServices, c.serviceID), append(jobs, c.jobID), append(slots, c.slot)
		kinds, reasons, downSeconds = append(kinds, c.next.event), append(reasons, nullString(c.st.reason)), append(downSeconds, down)
	}
	const update = `
UPDATE service_status s SET alert_state = u.state, alert_since = u.since
FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) AS u(service_id, state, since)
WHERE s.service_id = u.service_id`
	if _, err := tx.Exec(ctx, update, services, states, sinces); err != nil {
		return fmt.Errorf("update alert state: %w", err)
	}
	if len(keys) == 0 {
		return nil
	}
	const insert = `
INSERT INTO alert_outbox (event_key, service_id, job_id, scheduled_slot, kind, reason, down_seconds)
SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::float8[])`
	if _, err := tx.Exec(ctx, insert, keys, eventServices, jobs, slots, kinds, reasons, downSeconds); err != nil {
		return fmt.Errorf("insert alert event: %w", err)
	}
	return nil
}
