package monitoring

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Job is one claimed check: a service's slot, held by one owner token until
// lease_until (DB clock).
type Job struct {
	ID          int64
	ServiceID   int64
	Slot        int64 // slot start, epoch seconds
	TargetURL   string
	Timeout     time.Duration
	Probe       ProbeSpec // snapshot of the service's probe definition at enqueue time
	Attempt     int       // 1 for the first claim
	MaxAttempts int
	Token       uuid.UUID
	LeaseUntil  time.Time
}

const enqueueDueSQL = `
WITH db_now AS (SELECT floor(extract(epoch FROM clock_timestamp()))::bigint AS epoch)
INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, probe, max_attempts, available_at)
SELECT s.id, slot.start, s.url, s.timeout_ms, s.probe, $1,
       to_timestamp(slot.start) + (s.id * 2654435761 % 4294967296) * slot.window_ms / 4294967296 * interval '1 millisecond'
FROM monitored_service s
CROSS JOIN db_now
CROSS JOIN LATERAL (SELECT db_now.epoch - db_now.epoch % s.interval_seconds AS start,
                           least($2::bigint, s.interval_seconds * 800) AS window_ms) slot
LEFT JOIN LATERAL (SELECT 1 AS found FROM monitoring_job j
                   WHERE j.service_id = s.id AND j.scheduled_slot = slot.start LIMIT 1) existing ON true
WHERE s.enabled AND s.retired_at IS NULL AND existing.found IS NULL
ON CONFLICT (service_id, scheduled_slot) DO NOTHING`

// EnqueueDue creates the current slot's job for every enabled service in one
// statement. Every replica calls it every tick; the unique (service_id,
// scheduled_slot) key makes all but the first insert of a slot a no-op. The
// slot is the DB clock floored to the service's interval, so replicas whose
// own clocks disagree still agree on the slot. Past slots are never created.
//
// Slots whose job already exists are skipped before the insert. ON CONFLICT
// alone would make the insert wait for any open transaction that touched the
// existing job (a completion in progress; a replica frozen halfway through
// one), and since one statement enqueues every service, every replica's
// producer would stop creating jobs for every service until that transaction
// ended. ON CONFLICT still settles two producers inserting a new slot at once.
// The check is a LATERAL lookup with LIMIT 1, not NOT EXISTS: the planner
// turned NOT EXISTS into a hash anti-join that read the whole job table,
// history included, on every tick of every replica.
//
// With spread > 0 each service's job is due at a fixed place in its slot: an
// offset from the slot's start taken from a hash of the service id, below
// min(spread, 80% of the interval). A fleet's checks then arrive evenly rather
// than all at the slot's first second, and a service is still checked at the
// same phase every slot. The job is created at the slot's start either way.
func (s *Store) EnqueueDue(ctx context.Context, maxAttempts int, spread time.Duration) (int64, error) {
	tag, err := s.pool.Exec(ctx, enqueueDueSQL, maxAttempts, spread.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("enqueue due jobs: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ClaimParams says who claims how many jobs for how long.
type ClaimParams struct {
	Instance string
	Limit    int
	Lease    time.Duration
}

const claimSQL = `
WITH expired AS MATERIALIZED (
    SELECT id FROM monitoring_job
    WHERE state = 'RUNNING' AND lease_until <= (SELECT clock_timestamp()) AND attempts < max_attempts
    ORDER BY lease_until
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), ready AS MATERIALIZED (
    SELECT id FROM monitoring_job
    WHERE state = 'READY' AND available_at <= (SELECT clock_timestamp())
    ORDER BY available_at, id
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), picked AS MATERIALIZED (
    SELECT id FROM expired
    UNION ALL
    SELECT id FROM ready
    LIMIT $1
)
UPDATE monitoring_job j
SET state = 'RUNNING',
    attempts = j.attempts + 1,
    owner_token = gen_random_uuid(),
    owner_instance = $2,
    lease_until = clock_timestamp() + $3 * interval '1 millisecond',
    claimed_at = clock_timestamp()
WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
RETURNING j.id, j.service_id, j.scheduled_slot, j.target_url, j.timeout_ms, j.probe,
          j.attempts, j.max_attempts, j.owner_token, j.lease_until`

// Claim takes up to Limit jobs: RUNNING jobs whose lease expired (with
// attempts left) first, then due READY jobs. Each gets a fresh owner token and
// a lease on the DB clock. The statement is its own transaction, committed
// before any probe starts.
//
// The picks are MATERIALIZED CTEs: PostgreSQL runs them exactly once, so the
// LIMIT holds. An `UPDATE ... WHERE id IN (SELECT ... LIMIT n)` can be
// re-executed under a nested-loop plan and claim more than n rows. The update
// finds the picked rows through the primary key (= ANY of an array); a join
// with the CTE lets the planner hash the whole table for a large batch.
// The clock is read as (SELECT clock_timestamp()), a value fixed for the
// statement, so it bounds the index scans: compared with the volatile call
// itself it is only a filter, and a claim walked every READY job not yet due
// (with due times spread over the slot, most of a fleet's jobs).
func (s *Store) Claim(ctx context.Context, p ClaimParams) ([]Job, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, claimSQL, p.Limit, p.Instance, p.Lease.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Job, error) {
		var j Job
		var timeoutMS int
		err := row.Scan(&j.ID, &j.ServiceID, &j.Slot, &j.TargetURL, &timeoutMS, &j.Probe,
			&j.Attempt, &j.MaxAttempts, &j.Token, &j.LeaseUntil)
		j.Timeout = time.Duration(timeoutMS) * time.Millisecond
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	return jobs, nil
}

// The guard every owner-only write repeats: same job, still RUNNING, same
// token, lease not yet expired on the DB clock.
const ownerGuard = `id = $1 AND state = 'RUNNING' AND owner_token = $2 AND lease_until > clock_timestamp()`

// RetryParams hands a job back after a failure of Vigil itself (not a DOWN).
type RetryParams struct {
	JobID     int64
	Token     uuid.UUID
	Error     string
	RetryBase time.Duration
	RetryCap  time.Duration
}

const retrySQL = `
UPDATE monitoring_job
SET state = CASE WHEN attempts >= max_attempts THEN 'FAILED' ELSE 'READY' END,
    available_at = CASE WHEN attempts >= max_attempts THEN available_at
                   ELSE clock_timestamp() + LEAST($4::float8, $3::float8 * power(2, attempts - 1)) * interval '1 millisecond' END,
    finished_at = CASE WHEN attempts >= max_attempts THEN clock_timestamp() END,
    owner_token = NULL, lease_until = NULL, last_error = $5
WHERE ` + ownerGuard + `
RETURNING state`

// Retry makes the job READY again after min(cap, base * 2^(attempt-1)) on the
// DB clock, or FAILED when it has used its last attempt. It returns the new
// state.
func (s *Store) Retry(ctx context.Context, p RetryParams) (string, error) {
	var state string
	err := s.pool.QueryRow(ctx, retrySQL, p.JobID, p.Token, p.RetryBase.Milliseconds(), p.RetryCap.Milliseconds(), p.Error).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrStaleOwner
	}
	if err != nil {
		return "", fmt.Errorf("retry job %d: %w", p.JobID, err)
	}
	return state, nil
}

const renewSQL = `
UPDATE monitoring_job SET lease_until = clock_timestamp() + $3 * interval '1 millisecond'
WHERE ` + ownerGuard + `
RETURNING lease_until`

// Renew extends a held lease; it needs the token and an unexpired lease, so a
// stalled owner cannot renew its way back into a job that was taken over.
func (s *Store) Renew(ctx context.Context, jobID int64, token uuid.UUID, lease time.Duration) (time.Time, error) {
	var until time.Time
	err := s.pool.QueryRow(ctx, renewSQL, jobID, token, lease.Milliseconds()).Scan(&until)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, ErrStaleOwner
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("renew job %d: %w", jobID, err)
	}
	return until, nil
}

const releaseSQL = `
UPDATE monitoring_job
SET state = 'READY', attempts = attempts - 1, available_at = clock_timestamp(),
    owner_token = NULL, lease_until = NULL
WHERE ` + ownerGuard

// Release gives a held job back at shutdown: READY now, and the attempt it
// used is returned, since the probe was interrupted rather than failed.
func (s *Store) Release(ctx context.Context, jobID int64, token uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, releaseSQL, jobID, token)
	if err != nil {
		return fmt.Errorf("release job %d: %w", jobID, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrStaleOwner
	}
	return nil
}

const failExhaustedSQL = `
WITH exhausted AS MATERIALIZED (
    SELECT id FROM monitoring_job
    WHERE state = 'RUNNING' AND lease_until <= (SELECT clock_timestamp()) AND attempts >= max_attempts
    LIMIT 1000
    FOR UPDATE SKIP LOCKED
)
UPDATE monitoring_job j
SET state = 'FAILED', owner_token = NULL, lease_until = NULL, finished_at = clock_timestamp(),
    last_error = format('lease expired on attempt %s of %s (owner %s)', j.attempts, j.max_attempts, coalesce(j.owner_instance, 'unknown'))
FROM exhausted
WHERE j.id = exhausted.id`

// FailExhausted moves RUNNING jobs whose lease expired on their last attempt
// to FAILED: their owners died or stalled max_attempts times. Bounded per call.
func (s *Store) FailExhausted(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, failExhaustedSQL)
	if err != nil {
		return 0, fmt.Errorf("fail exhausted jobs: %w", err)
	}
	return tag.RowsAffected(), nil
}

// QueueHealth is what /metrics reports about the shared queue.
type QueueHealth struct {
	Ready, Running, Failed int64
	ExpiredRunning         int64
	OldestReadyAge         time.Duration // age of the oldest due READY job, 0 if none
}

// QueueHealth reads counts from the partial indexes of the claimable states.
func (s *Store) QueueHealth(ctx context.Context) (QueueHealth, error) {
	const q = `
SELECT
    (SELECT count(*) FROM monitoring_job WHERE state = 'READY'),
    (SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING'),
    (SELECT count(*) FROM monitoring_job WHERE state = 'FAILED'),
    (SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING' AND lease_until <= (SELECT clock_timestamp())),
    coalesce((SELECT extract(epoch FROM clock_timestamp() - min(available_at))::float8
              FROM monitoring_job WHERE state = 'READY' AND available_at <= (SELECT clock_timestamp())), 0)`
	var h QueueHealth
	var oldest float64
	err := s.pool.QueryRow(ctx, q).Scan(&h.Ready, &h.Running, &h.Failed, &h.ExpiredRunning, &oldest)
	if err != nil {
		return h, fmt.Errorf("queue health: %w", err)
	}
	h.OldestReadyAge = time.Duration(oldest * float64(time.Second))
	return h, nil
}

func latencyMS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func nullInt(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}

func nullString(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}
