package monitoring

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// ServiceDetailParams select a service page: its results page and the range
// of its charts.
type ServiceDetailParams struct {
	Name string
	// Range is the charts' time span, split into buckets of Bucket (whole
	// seconds) ending with the one that holds now. Whole hours or days read
	// the rollups where they are final (see serviceHistory).
	Range  time.Duration
	Bucket time.Duration
	// Results is the size of the results page (0: DefaultPageSize) and
	// BeforeSlot its cursor: only slots before it (0: from the newest).
	Results    int
	BeforeSlot int64
	Alerts     int // the latest alerts raised for the service (0: 20)
}

// ServiceDetail is everything the service page shows.
type ServiceDetail struct {
	Now     time.Time
	Service ServiceSummary
	Series  Series
	Results []Result // newest first
	// NextBeforeSlot is the cursor of the next (older) results page, 0 if none.
	NextBeforeSlot int64
	Alerts         []Alert
}

// Series is a service's results over a range, in buckets oldest first. A
// bucket without results has Total 0.
type Series struct {
	Start  time.Time
	Bucket time.Duration
	Points []SeriesPoint
}

// SeriesPoint aggregates one bucket's results.
type SeriesPoint struct {
	Start        time.Time
	Up, Total    int64
	AvgLatencyMS float64
	MaxLatencyMS float64
}

// ServiceDetail reads one service (retired ones too) with its chart series,
// a page of results and its latest alerts. ErrNotFound if no such service.
func (s *Store) ServiceDetail(ctx context.Context, p ServiceDetailParams) (ServiceDetail, error) {
	if p.Range <= 0 {
		p.Range = 24 * time.Hour
	}
	if p.Bucket < time.Second {
		p.Bucket = p.Range / 60
	}
	bucketSeconds := int64(p.Bucket / time.Second)
	buckets := int(max(int64(p.Range/time.Second)/bucketSeconds, 1))
	limit := pageSize(p.Results)
	if p.Alerts <= 0 {
		p.Alerts = 20
	}
	var d ServiceDetail
	err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&d.Now); err != nil {
			return err
		}
		q := fmt.Sprintf(serviceSelect, `(SELECT * FROM monitored_service WHERE name = $5) m`)
		args, err := uptimeArgs(ctx, tx, d.Now)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, q, append(args, p.Name)...)
		if err != nil {
			return fmt.Errorf("service: %w", err)
		}
		d.Service, err = pgx.CollectExactlyOneRow(rows, scanServiceSummary)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("service: %w", err)
		}

		// Buckets are aligned to their length, so a refresh shifts the chart
		// by whole buckets instead of reshuffling every bar.
		now := d.Now.Unix()
		start := now - now%bucketSeconds - int64(buckets-1)*bucketSeconds
		d.Series = Series{Start: SlotTime(start), Bucket: time.Duration(bucketSeconds) * time.Second}
		d.Series.Points, err = serviceHistory(ctx, tx, d.Service.ID, start, bucketSeconds, buckets)
		if err != nil {
			return err
		}

		d.Results, d.NextBeforeSlot, err = serviceResults(ctx, tx, d.Service.ID, p.BeforeSlot, limit)
		if err != nil {
			return err
		}
		d.Alerts, _, err = alertList(ctx, tx, alertFilter{serviceID: d.Service.ID, limit: p.Alerts})
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return ServiceDetail{}, ErrNotFound
	}
	if err != nil {
		return ServiceDetail{}, fmt.Errorf("read service %q: %w", p.Name, err)
	}
	return d, nil
}

// serviceResults pages a service's results newest first, keyed by slot
// (unique per service) on monitoring_job_result_service_slot_idx.
func serviceResults(ctx context.Context, tx pgx.Tx, serviceID, beforeSlot int64, limit int) ([]Result, int64, error) {
	const q = `
SELECT job_id, scheduled_slot, status, latency_ms, http_status, coalesce(error, ''), attempt, probed_by, observed_at,
       degraded, coalesce(failed_condition, '')
FROM monitoring_job_result
WHERE service_id = $1 AND scheduled_slot < $2
ORDER BY scheduled_slot DESC
LIMIT $3`
	if beforeSlot <= 0 {
		beforeSlot = math.MaxInt64
	}
	rows, err := tx.Query(ctx, q, serviceID, beforeSlot, limit+1)
	if err != nil {
		return nil, 0, fmt.Errorf("results: %w", err)
	}
	results, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Result, error) {
		var r Result
		err := row.Scan(&r.JobID, &r.Slot, &r.Status, &r.LatencyMS, &r.HTTPStatus, &r.Error, &r.Attempt, &r.ProbedBy, &r.ObservedAt,
			&r.Degraded, &r.FailedCondition)
		return r, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("results: %w", err)
	}
	var next int64
	if len(results) > limit {
		results = results[:limit]
		next = results[limit-1].Slot
	}
	return results, next, nil
}
