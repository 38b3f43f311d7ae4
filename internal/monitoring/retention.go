package monitoring

import (
	"context"
	"fmt"
	"time"
)

// Retention deletes history that is past its horizon, in bounded batches: each
// batch is one statement (its own short transaction) that picks at most
// BatchSize rows by an index and deletes them, so no lock is held for long and
// claims, which only touch READY and RUNNING rows, never wait on it.
//
//   - DONE jobs of slots older than retention.raw go with their results, results
//     first (the foreign key), in the same statement. Only slots that are rolled
//     up (hourly and daily) are eligible, so raw results are never lost before
//     their rollups exist, and raw_deleted_before is advanced before deleting so
//     history reads switch to rollups first.
//   - FAILED jobs go retention.failed_jobs after they failed (kept longer, for
//     inspection).
//   - READY and RUNNING jobs are never deleted, however old.
//   - Jobs an alert_outbox event points at are kept while the event is.
//   - Rollups go after retention.rollups.
//
// Deleting a job frees its (service, slot) key, but the producer only ever
// creates the current slot (EnqueueDue), so a deleted past slot is never
// recreated: retention and scheduling cannot collide.

// Retention defaults, used when a RetentionPolicy field is zero.
const (
	DefaultRetentionRaw        = 7 * 24 * time.Hour
	DefaultRetentionRollups    = 400 * 24 * time.Hour
	DefaultRetentionFailedJobs = 30 * 24 * time.Hour
	DefaultRetentionBatchSize  = 5000
)

// RetentionPolicy says how long each kind of history is kept.
type RetentionPolicy struct {
	Raw        time.Duration // DONE jobs and their results, by slot
	Rollups    time.Duration // hourly and daily rollups, by period
	FailedJobs time.Duration // FAILED jobs, by when they failed
	BatchSize  int           // jobs (or rollup rows) per delete statement
}

func (p *RetentionPolicy) setDefaults() {
	if p.Raw <= 0 {
		p.Raw = DefaultRetentionRaw
	}
	if p.Rollups <= 0 {
		p.Rollups = DefaultRetentionRollups
	}
	if p.FailedJobs <= 0 {
		p.FailedJobs = DefaultRetentionFailedJobs
	}
	if p.BatchSize <= 0 {
		p.BatchSize = DefaultRetentionBatchSize
	}
}

// Kinds of rows retention deletes, as RetentionBatch.Kind and metric labels.
const (
	PrunedResults       = "results"
	PrunedJobs          = "jobs"
	PrunedFailedJobs    = "failed_jobs"
	PrunedHourlyRollups = "hourly_rollups"
	PrunedDailyRollups  = "daily_rollups"
)

// RetentionBatch is one delete statement, reported as it finishes.
type RetentionBatch struct {
	Kind    string // PrunedJobs (with Results), PrunedFailedJobs, PrunedHourlyRollups, PrunedDailyRollups
	Rows    int64
	Results int64 // results deleted with the jobs
	Took    time.Duration
}

// RetentionReport adds up one PruneExpired pass.
type RetentionReport struct {
	RawCutoff     int64 // DONE jobs of slots before it were eligible; 0: none (rollups not there yet)
	FailedCutoff  time.Time
	RollupCutoff  int64
	Results       int64
	Jobs          int64
	FailedJobs    int64
	HourlyRollups int64
	DailyRollups  int64
	Batches       int
}

// Deleted is the number of rows the pass deleted.
func (r RetentionReport) Deleted() int64 {
	return r.Results + r.Jobs + r.FailedJobs + r.HourlyRollups + r.DailyRollups
}

// PruneExpired deletes everything past its horizon, batch after batch, until
// nothing is left or ctx ends (then it returns what it did and ctx's error; the
// next pass continues). onBatch, if not nil, sees every batch.
func (s *Store) PruneExpired(ctx context.Context, p RetentionPolicy, onBatch func(RetentionBatch)) (RetentionReport, error) {
	p.setDefaults()
	var r RetentionReport
	report := func(b RetentionBatch) {
		r.Batches++
		if onBatch != nil {
			onBatch(b)
		}
	}

	var now int64
	var w Watermarks
	err := s.pool.QueryRow(ctx, `SELECT floor(extract(epoch FROM clock_timestamp()))::bigint`).Scan(&now)
	if err == nil {
		w, err = readWatermarks(ctx, s.pool)
	}
	if err != nil {
		return r, fmt.Errorf("retention: %w", err)
	}
	r.FailedCutoff = time.Unix(now, 0).Add(-p.FailedJobs).UTC()
	r.RollupCutoff = floorTo(now-int64(p.Rollups/time.Second), hourSeconds)

	// Raw results go only once both rollups cover them.
	if w.HourlyUntil > 0 && w.DailyUntil > 0 {
		r.RawCutoff = min(floorTo(now-int64(p.Raw/time.Second), hourSeconds), w.HourlyUntil, w.DailyUntil)
	}
	if r.RawCutoff > 0 {
		if err := s.advanceWatermark(ctx, watermarkRawDeleted, r.RawCutoff); err != nil {
			return r, fmt.Errorf("retention: %w", err)
		}
		var after int64
		for {
			b, last, err := s.pruneDoneJobs(ctx, r.RawCutoff, after, p.BatchSize)
			if err != nil {
				return r, err
			}
			r.Jobs += b.Rows
			r.Results += b.Results
			report(b)
			if b.Rows < int64(p.BatchSize) {
				break
			}
			after = last
		}
	}

	steps := []struct {
		kind  string
		q     string
		arg   any
		total *int64
	}{
		{PrunedFailedJobs, pruneFailedJobs, p.FailedJobs.Microseconds(), &r.FailedJobs},
		{PrunedHourlyRollups, pruneHourlyRollups, r.RollupCutoff, &r.HourlyRollups},
		{PrunedDailyRollups, pruneDailyRollups, floorTo(r.RollupCutoff, daySeconds), &r.DailyRollups},
	}
	for _, step := range steps {
		for {
			start := time.Now()
			tag, err := s.pool.Exec(ctx, step.q, step.arg, p.BatchSize)
			if err != nil {
				return r, fmt.Errorf("retention: delete %s: %w", step.kind, err)
			}
			n := tag.RowsAffected()
			*step.total += n
			report(RetentionBatch{Kind: step.kind, Rows: n, Took: time.Since(start)})
			if n < int64(p.BatchSize) {
				break
			}
		}
	}
	return r, nil
}

// pruneDoneJobs deletes up to limit DONE jobs of slots in [after, cutoff) with
// their results, oldest slots first, and returns the last slot it picked: the
// next batch starts there instead of stepping over the index entries this one
// left dead. Both deletes see the same picked ids; the foreign key from results
// to jobs is checked at the end of the statement, when both are gone.
func (s *Store) pruneDoneJobs(ctx context.Context, cutoff, after int64, limit int) (RetentionBatch, int64, error) {
	const q = `
WITH picked AS MATERIALIZED (
    SELECT j.id, j.scheduled_slot FROM monitoring_job j
    WHERE j.scheduled_slot >= $2 AND j.scheduled_slot < $1 AND j.state = 'DONE'
      AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.job_id = j.id)
    ORDER BY j.scheduled_slot
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), results AS (
    DELETE FROM monitoring_job_result r USING picked WHERE r.job_id = picked.id
    RETURNING 1
), jobs AS (
    DELETE FROM monitoring_job j USING picked WHERE j.id = picked.id
    RETURNING 1
)
SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM results),
       coalesce((SELECT max(scheduled_slot) FROM picked), $2)`
	start := time.Now()
	b := RetentionBatch{Kind: PrunedJobs}
	var last int64
	if err := s.pool.QueryRow(ctx, q, cutoff, after, limit).Scan(&b.Rows, &b.Results, &last); err != nil {
		return b, after, fmt.Errorf("retention: delete DONE jobs before %s: %w", SlotTime(cutoff).Format(time.RFC3339), err)
	}
	b.Took = time.Since(start)
	return b, last, nil
}

const pruneFailedJobs = `
WITH picked AS MATERIALIZED (
    SELECT j.id FROM monitoring_job j
    WHERE j.state = 'FAILED' AND j.finished_at < clock_timestamp() - $1 * interval '1 microsecond'
      AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.job_id = j.id)
    ORDER BY j.finished_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
), results AS (
    -- A FAILED job has no result; this only keeps the foreign key satisfied if one ever does.
    DELETE FROM monitoring_job_result r USING picked WHERE r.job_id = picked.id
)
DELETE FROM monitoring_job j USING picked WHERE j.id = picked.id`

const pruneHourlyRollups = `
WITH picked AS MATERIALIZED (
    SELECT service_id, hour_start FROM service_rollup_hourly
    WHERE hour_start < $1 ORDER BY hour_start LIMIT $2
)
DELETE FROM service_rollup_hourly t USING picked
WHERE t.service_id = picked.service_id AND t.hour_start = picked.hour_start`

const pruneDailyRollups = `
WITH picked AS MATERIALIZED (
    SELECT service_id, day_start FROM service_rollup_daily
    WHERE day_start < $1 ORDER BY day_start LIMIT $2
)
DELETE FROM service_rollup_daily t USING picked
WHERE t.service_id = picked.service_id AND t.day_start = picked.day_start`
