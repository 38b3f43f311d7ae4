package monitoring

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// JobStates are the states a job can be in, in lifecycle order.
var JobStates = []string{"READY", "RUNNING", "DONE", "FAILED"}

// ErrInvalidState is returned for a job state filter outside JobStates.
var ErrInvalidState = errors.New("state must be one of READY, RUNNING, DONE, FAILED")

// JobRow is one job as the jobs page shows it, with its result if it has one.
type JobRow struct {
	ID            int64
	Service       string
	Slot          int64
	State         string
	Attempts      int
	MaxAttempts   int
	OwnerInstance string // the replica that last claimed it
	LeaseUntil    *time.Time
	// LeaseRemaining is measured on the database clock (negative: lapsed), so
	// a viewer's or replica's clock skew does not distort it.
	LeaseRemaining *time.Duration
	AvailableAt    time.Time
	LastError      string
	Result         *Result
}

// JobListParams filter and page the queue, newest job first.
type JobListParams struct {
	State   string // "" or one of JobStates
	Service string // "" for all services
	Limit   int    // 0: DefaultPageSize
	Before  int64  // cursor: only ids below it (0: from the newest)
}

// JobPage is one page of jobs.
type JobPage struct {
	Now  time.Time
	Jobs []JobRow
	Next int64 // cursor of the next page, 0 if none
}

// JobList pages monitoring_job by id, newest first. The state is written into
// the statement as a literal (it is checked against JobStates) so the planner
// can use the partial index of that state; a service filter is resolved to
// its id first. ErrInvalidState for an unknown state, ErrNotFound for an
// unknown service.
func (s *Store) JobList(ctx context.Context, p JobListParams) (JobPage, error) {
	var where []string
	args := []any{int64(math.MaxInt64), pageSize(p.Limit) + 1}
	if p.Before > 0 {
		args[0] = p.Before
	}
	if p.State != "" {
		if !slices.Contains(JobStates, p.State) {
			return JobPage{}, ErrInvalidState
		}
		where = append(where, "j.state = '"+p.State+"'")
	}
	var page JobPage
	err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&page.Now); err != nil {
			return err
		}
		if p.Service != "" {
			id, err := serviceID(ctx, tx, p.Service)
			if err != nil {
				return err
			}
			args = append(args, id)
			where = append(where, fmt.Sprintf("j.service_id = $%d", len(args)))
		}
		q := `
SELECT j.id, m.name, j.scheduled_slot, j.state, j.attempts, j.max_attempts, coalesce(j.owner_instance, ''),
       j.lease_until, (extract(epoch FROM j.lease_until - now()) * 1000)::bigint, j.available_at,
       coalesce(left(j.last_error, 500), ''),
       r.job_id, r.scheduled_slot, r.status, r.latency_ms, r.http_status, coalesce(left(r.error, 500), ''),
       r.attempt, r.probed_by, r.observed_at
FROM monitoring_job j
JOIN monitored_service m ON m.id = j.service_id
LEFT JOIN monitoring_job_result r ON r.job_id = j.id
WHERE j.id < $1` + prefixAll(" AND ", where) + `
ORDER BY j.id DESC
LIMIT $2`
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		page.Jobs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (JobRow, error) {
			var j JobRow
			var leaseMS *int64
			var r struct {
				jobID, slot      *int64
				status, probedBy *string
				latency          *float64
				httpStatus       *int
				reason           string
				attempt          *int
				observedAt       *time.Time
			}
			err := row.Scan(&j.ID, &j.Service, &j.Slot, &j.State, &j.Attempts, &j.MaxAttempts, &j.OwnerInstance,
				&j.LeaseUntil, &leaseMS, &j.AvailableAt, &j.LastError,
				&r.jobID, &r.slot, &r.status, &r.latency, &r.httpStatus, &r.reason, &r.attempt, &r.probedBy, &r.observedAt)
			if leaseMS != nil {
				d := time.Duration(*leaseMS) * time.Millisecond
				j.LeaseRemaining = &d
			}
			if r.jobID != nil {
				j.Result = &Result{JobID: *r.jobID, Slot: *r.slot, Status: *r.status, LatencyMS: *r.latency,
					HTTPStatus: r.httpStatus, Error: r.reason, Attempt: *r.attempt, ProbedBy: *r.probedBy,
					ObservedAt: *r.observedAt}
			}
			return j, err
		})
		if err != nil {
			return fmt.Errorf("jobs: %w", err)
		}
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return JobPage{}, fmt.Errorf("service %q: %w", p.Service, ErrNotFound)
	}
	if err != nil {
		return JobPage{}, fmt.Errorf("read jobs: %w", err)
	}
	if limit := pageSize(p.Limit); len(page.Jobs) > limit {
		page.Jobs = page.Jobs[:limit]
		page.Next = page.Jobs[limit-1].ID
	}
	return page, nil
}

func prefixAll(sep string, conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return sep + strings.Join(conds, sep)
}
