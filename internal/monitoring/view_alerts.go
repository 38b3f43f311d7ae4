package monitoring

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// Alert is one alert_outbox event: a service's announced transition.
type Alert struct {
	ID          int64
	Service     string
	Kind        string // DOWN or UP
	Reason      string
	DownSeconds *float64 // for a recovery: how long the outage lasted
	Slot        int64
	JobID       int64
	CreatedAt   time.Time
	// RoutedAt is when a dispatcher split the event into one delivery per
	// matching webhook (see outbox.go); nil while it waits for one.
	RoutedAt *time.Time
}

// AlertListParams filter and page the alert list, newest first.
type AlertListParams struct {
	Service string // "" for all services
	Limit   int    // 0: DefaultPageSize
	Before  int64  // cursor: only ids below it (0: from the newest)
}

// AlertPage is one page of alerts.
type AlertPage struct {
	Alerts []Alert
	Next   int64 // cursor of the next page, 0 if none
}

// AlertList pages the alert outbox by id. ErrNotFound if Service names no
// service.
func (s *Store) AlertList(ctx context.Context, p AlertListParams) (AlertPage, error) {
	var page AlertPage
	err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		f := alertFilter{limit: pageSize(p.Limit), before: p.Before}
		if p.Service != "" {
			id, err := serviceID(ctx, tx, p.Service)
			if err != nil {
				return err
			}
			f.serviceID = id
		}
		var err error
		page.Alerts, page.Next, err = alertList(ctx, tx, f)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return AlertPage{}, fmt.Errorf("service %q: %w", p.Service, ErrNotFound)
	}
	if err != nil {
		return AlertPage{}, fmt.Errorf("read alerts: %w", err)
	}
	return page, nil
}

type alertFilter struct {
	serviceID int64 // 0 for all
	before    int64 // 0 for the newest
	limit     int
}

// alertList reads newest first: by the primary key for all services, from
// alert_outbox_service_idx for one service (a service has few alerts).
func alertList(ctx context.Context, tx pgx.Tx, f alertFilter) ([]Alert, int64, error) {
	const all = `
SELECT a.id, m.name, a.kind, coalesce(a.reason, ''), a.down_seconds, a.scheduled_slot, a.job_id, a.created_at, a.routed_at
FROM alert_outbox a
JOIN monitored_service m ON m.id = a.service_id
WHERE a.id < $1
ORDER BY a.id DESC
LIMIT $2`
	const oneService = `
SELECT a.id, m.name, a.kind, coalesce(a.reason, ''), a.down_seconds, a.scheduled_slot, a.job_id, a.created_at, a.routed_at
FROM alert_outbox a
JOIN monitored_service m ON m.id = a.service_id
WHERE a.id < $1 AND a.service_id = $3
ORDER BY a.id DESC
LIMIT $2`
	q, args := all, []any{0, f.limit + 1}
	if f.serviceID != 0 {
		q, args = oneService, append(args, f.serviceID)
	}
	args[0] = f.before
	if f.before <= 0 {
		args[0] = int64(math.MaxInt64)
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("alerts: %w", err)
	}
	alerts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Alert, error) {
		var a Alert
		err := row.Scan(&a.ID, &a.Service, &a.Kind, &a.Reason, &a.DownSeconds, &a.Slot, &a.JobID, &a.CreatedAt, &a.RoutedAt)
		return a, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("alerts: %w", err)
	}
	var next int64
	if len(alerts) > f.limit {
		alerts = alerts[:f.limit]
		next = alerts[f.limit-1].ID
	}
	return alerts, next, nil
}
