package monitoring

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ServiceSummary is a service with its latest status and uptime, as the
// overview and the service page show it.
type ServiceSummary struct {
	ID          int64
	Name        string
	Group       string // "" when the service has none
	URL         string
	Enabled     bool
	Interval    time.Duration
	Timeout     time.Duration
	RetiredAt   *time.Time
	Status      string     // UP, DOWN, PENDING (no result yet) or PAUSED (disabled)
	StatusSince *time.Time // when the stored status last changed
	LastSlot    *int64
	CheckedAt   *time.Time
	CheckedBy   string
	LatencyMS   *float64
	HTTPStatus  *int
	Error       string // the latest result's reason, "" when UP
	Degraded    bool   // the latest result was UP but slower than degraded_above
	// Probe is the service's probe definition. Header, body and auth values are ${NAME}
	// templates at most; pages still show only header names and the kind of auth.
	Probe  ProbeSpec
	Uptime Uptime
	Recent []Result // the latest results, oldest first (overview only)
}

// Overdue says whether an enabled service has gone unchecked for well over
// its interval: every replica is down, stuck or behind.
func (s ServiceSummary) Overdue(now time.Time) bool {
	return s.Enabled && s.CheckedAt != nil && now.Sub(*s.CheckedAt) > 3*s.Interval+30*time.Second
}

// Uptime is the share of UP results by slot start: Day over the current UTC
// hour and the 23 before it, Week and Month over the current UTC day and the
// 6 or 29 before it (see serviceSelect).
type Uptime struct {
	Day, Week, Month Ratio
}

// Ratio counts UP results among all results of a window.
type Ratio struct {
	Up, Total int64
}

// Percent is the UP share in percent; false when the window has no result.
func (r Ratio) Percent() (float64, bool) {
	if r.Total == 0 {
		return 0, false
	}
	return 100 * float64(r.Up) / float64(r.Total), true
}

// StatusCounts counts active services by status.
type StatusCounts struct {
	Up, Down, Pending, Paused int
}

// JobCounts counts the queue's claimable and failed jobs.
type JobCounts struct {
	Ready, Running, Failed int64
	ExpiredRunning         int64 // RUNNING with a lapsed lease: owner dead or stalled
}

// Overview is the dashboard's front page.
type Overview struct {
	Now           time.Time // the database clock when read
	Services      []ServiceSummary
	Total         int // active services, including any beyond the limit
	Counts        StatusCounts
	Jobs          JobCounts
	LiveInstances int
}

// Truncated says whether services were left off the page.
func (o Overview) Truncated() bool { return o.Total > len(o.Services) }

// OverviewParams bound the overview.
type OverviewParams struct {
	Services int // at most this many services; 0 means MaxOverviewServices
	Recent   int // results per service in the strip; 0 means RecentResults
}

// serviceSelect reads services with status and uptime. The caller supplies
// the FROM list as "m" (already limited, so uptime is computed only for the
// rows shown) and appends ORDER BY; its own parameters start at $5 (see
// uptimeArgs for $1 to $4).
//
// Uptime windows are whole UTC periods: 24 h is the current hour and the 23
// before it, 7 d and 30 d the current day and the 6 or 29 before it. Each
// service's figures read its daily rollups for days before the daily
// watermark, hourly rollups up to the hourly watermark, and raw results only
// after that: a few dozen rows per service however long the history, and
// still right after retention has pruned old results (see rollup.go).
const serviceSelect = `
SELECT m.id, m.name, coalesce(g.name, ''), m.url, m.enabled, m.interval_seconds, m.timeout_ms, m.retired_at,
       CASE WHEN NOT m.enabled THEN 'PAUSED' ELSE coalesce(st.status, 'PENDING') END,
       st.status_since, st.last_slot, st.checked_at, coalesce(st.checked_by, ''), st.latency_ms, st.http_status,
       coalesce(st.error, ''), coalesce(st.degraded, false), m.probe,
       u.day_up, u.day_total, u.week_up, u.week_total, u.month_up, u.month_total
FROM %s
LEFT JOIN monitoring_group g ON g.id = m.group_id
LEFT JOIN service_status st ON st.service_id = m.id
CROSS JOIN LATERAL (
    SELECT coalesce(sum(p.up) FILTER (WHERE p.kind < 2 AND p.t >= $1 - 23 * 3600), 0)   AS day_up,
           coalesce(sum(p.n) FILTER (WHERE p.kind < 2 AND p.t >= $1 - 23 * 3600), 0)    AS day_total,
           coalesce(sum(p.up) FILTER (WHERE p.for_days AND p.t >= $2 - 6 * 86400), 0)   AS week_up,
           coalesce(sum(p.n) FILTER (WHERE p.for_days AND p.t >= $2 - 6 * 86400), 0)    AS week_total,
           coalesce(sum(p.up) FILTER (WHERE p.for_days), 0)                             AS month_up,
           coalesce(sum(p.n) FILTER (WHERE p.for_days), 0)                              AS month_total
    FROM (
        -- kind 2: final days; they count for 7 d and 30 d.
        SELECT 2 AS kind, day_start AS t, up_count AS up, checks AS n, true AS for_days
        FROM service_rollup_daily
        WHERE service_id = m.id AND day_start >= $2 - 29 * 86400 AND day_start < $4
        UNION ALL
        -- kind 1: final hours; those before the daily watermark only for 24 h.
        SELECT 1, hour_start, up_count, checks, hour_start >= $4
        FROM service_rollup_hourly
        WHERE service_id = m.id AND hour_start >= greatest(least($4, $1 - 23 * 3600), $2 - 29 * 86400)
          AND hour_start < $3
        UNION ALL
        -- kind 0: results not rolled up yet.
        SELECT 0, scheduled_slot, (status = 'UP')::int, 1, true
        FROM monitoring_job_result
        WHERE service_id = m.id AND scheduled_slot >= greatest($3, $2 - 29 * 86400)
    ) p
) u`

// uptimeArgs are serviceSelect's $1 to $4: the start of the current UTC hour
// and day, and the hourly and daily rollup watermarks.
func uptimeArgs(ctx context.Context, tx pgx.Tx, now time.Time) ([]any, error) {
	w, err := readWatermarks(ctx, tx)
	if err != nil {
		return nil, err
	}
	e := now.Unix()
	// A day is final only once its hours are; never let the two overlap.
	return []any{e - e%3600, e - e%86400, w.HourlyUntil, min(w.DailyUntil, w.HourlyUntil)}, nil
}

func scanServiceSummary(row pgx.CollectableRow) (ServiceSummary, error) {
	var v ServiceSummary
	var interval, timeoutMS int
	err := row.Scan(&v.ID, &v.Name, &v.Group, &v.URL, &v.Enabled, &interval, &timeoutMS, &v.RetiredAt,
		&v.Status, &v.StatusSince, &v.LastSlot, &v.CheckedAt, &v.CheckedBy, &v.LatencyMS, &v.HTTPStatus,
		&v.Error, &v.Degraded, &v.Probe,
		&v.Uptime.Day.Up, &v.Uptime.Day.Total, &v.Uptime.Week.Up, &v.Uptime.Week.Total,
		&v.Uptime.Month.Up, &v.Uptime.Month.Total)
	v.Interval = time.Duration(interval) * time.Second
	v.Timeout = time.Duration(timeoutMS) * time.Millisecond
	return v, err
}

// Overview reads the front page: active services by group then name, each
// with status, uptime and its latest results, plus the summary counts.
func (s *Store) Overview(ctx context.Context, p OverviewParams) (Overview, error) {
	if p.Services <= 0 || p.Services > MaxOverviewServices {
		p.Services = MaxOverviewServices
	}
	if p.Recent <= 0 {
		p.Recent = RecentResults
	}
	var o Overview
	err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		const counts = `
SELECT now(),
       count(*),
       count(*) FILTER (WHERE m.enabled AND st.status = 'UP'),
       count(*) FILTER (WHERE m.enabled AND st.status = 'DOWN'),
       count(*) FILTER (WHERE m.enabled AND st.status IS NULL),
       count(*) FILTER (WHERE NOT m.enabled),
       (SELECT count(*) FROM monitoring_job WHERE state = 'READY'),
       (SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING'),
       (SELECT count(*) FROM monitoring_job WHERE state = 'FAILED'),
       (SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING' AND lease_until <= now()),
       (SELECT count(*) FROM vigil_instance
        WHERE stopped_at IS NULL AND heartbeat_at > now() - $1 * interval '1 millisecond')
FROM monitored_service m
LEFT JOIN service_status st ON st.service_id = m.id
WHERE m.retired_at IS NULL`
		err := tx.QueryRow(ctx, counts, LiveWithin.Milliseconds()).Scan(&o.Now, &o.Total,
			&o.Counts.Up, &o.Counts.Down, &o.Counts.Pending, &o.Counts.Paused,
			&o.Jobs.Ready, &o.Jobs.Running, &o.Jobs.Failed, &o.Jobs.ExpiredRunning, &o.LiveInstances)
		if err != nil {
			return fmt.Errorf("summary: %w", err)
		}

		q := fmt.Sprintf(serviceSelect, `(
    SELECT s.* FROM monitored_service s
    LEFT JOIN monitoring_group sg ON sg.id = s.group_id
    WHERE s.retired_at IS NULL
    ORDER BY sg.name NULLS LAST, s.name
    LIMIT $5
) m`) + `
ORDER BY g.name NULLS LAST, m.name`
		args, err := uptimeArgs(ctx, tx, o.Now)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, q, append(args, p.Services)...)
		if err != nil {
			return fmt.Errorf("services: %w", err)
		}
		o.Services, err = pgx.CollectRows(rows, scanServiceSummary)
		if err != nil {
			return fmt.Errorf("services: %w", err)
		}

		ids := make([]int64, len(o.Services))
		byID := make(map[int64]int, len(o.Services))
		for i, svc := range o.Services {
			ids[i] = svc.ID
			byID[svc.ID] = i
		}
		// The newest results of each service, from the (service_id,
		// scheduled_slot DESC) index; reasons are cut short for the strip.
		const recent = `
SELECT s.id, r.job_id, r.scheduled_slot, r.status, r.latency_ms, r.http_status, coalesce(left(r.error, 160), ''),
       r.attempt, r.probed_by, r.observed_at, r.degraded, coalesce(r.failed_condition, '')
FROM unnest($1::bigint[]) AS s(id)
CROSS JOIN LATERAL (
    SELECT * FROM monitoring_job_result
    WHERE service_id = s.id
    ORDER BY scheduled_slot DESC
    LIMIT $2
) r`
		rows, err = tx.Query(ctx, recent, ids, p.Recent)
		if err != nil {
			return fmt.Errorf("recent results: %w", err)
		}
		var serviceID int64
		var r Result
		_, err = pgx.ForEachRow(rows, []any{&serviceID, &r.JobID, &r.Slot, &r.Status, &r.LatencyMS, &r.HTTPStatus,
			&r.Error, &r.Attempt, &r.ProbedBy, &r.ObservedAt, &r.Degraded, &r.FailedCondition}, func() error {
			i := byID[serviceID]
			o.Services[i].Recent = append(o.Services[i].Recent, r)
			return nil
		})
		if err != nil {
			return fmt.Errorf("recent results: %w", err)
		}
		for i := range o.Services {
			reverse(o.Services[i].Recent)
		}
		return nil
	})
	if err != nil {
		return Overview{}, fmt.Errorf("read overview: %w", err)
	}
	return o, nil
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}
