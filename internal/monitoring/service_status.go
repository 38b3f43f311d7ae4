package monitoring

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ServiceStatus is a service with its latest stored result.
type ServiceStatus struct {
	Name         string
	Group        string
	URL          string
	Enabled      bool
	Interval     time.Duration
	Status       string // UP, DOWN, PENDING (no result yet) or PAUSED (disabled)
	LastSlot     *int64
	LastSlotTime *time.Time
	CheckedAt    *time.Time
	CheckedBy    string
	LatencyMS    *float64
}

// ServiceStatuses lists the active services, by group then name.
func (s *Store) ServiceStatuses(ctx context.Context) ([]ServiceStatus, error) {
	const q = `
SELECT m.name, coalesce(g.name, ''), m.url, m.enabled, m.interval_seconds,
       CASE WHEN NOT m.enabled THEN 'PAUSED' ELSE coalesce(st.status, 'PENDING') END,
       st.last_slot, to_timestamp(st.last_slot), st.checked_at, coalesce(st.checked_by, ''), st.latency_ms
FROM monitored_service m
LEFT JOIN monitoring_group g ON g.id = m.group_id
LEFT JOIN service_status st ON st.service_id = m.id
WHERE m.retired_at IS NULL
ORDER BY g.name NULLS LAST, m.name
LIMIT 5000`
	rows, err := s.pool.Query(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("service statuses: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ServiceStatus, error) {
		var v ServiceStatus
		var interval int
		err := row.Scan(&v.Name, &v.Group, &v.URL, &v.Enabled, &interval, &v.Status,
			&v.LastSlot, &v.LastSlotTime, &v.CheckedAt, &v.CheckedBy, &v.LatencyMS)
		v.Interval = time.Duration(interval) * time.Second
		return v, err
	})
	if err != nil {
		return nil, fmt.Errorf("service statuses: %w", err)
	}
	return out, nil
}
