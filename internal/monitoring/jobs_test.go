package monitoring_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
)

type testBundle struct {
	pool  *pgxpool.Pool
	store *monitoring.Store
}

func setup(t *testing.T) (context.Context, *testBundle) {
	t.Helper()
	pool := pgtest.NewPool(t)
	return context.Background(), &testBundle{pool: pool, store: monitoring.NewStore(pool)}
}

// addService inserts an enabled service with a long interval, so a test's
// slot does not roll over under it.
func (b *testBundle) addService(t *testing.T, name string) int64 {
	t.Helper()
	var id int64
	err := b.pool.QueryRow(context.Background(), `
INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms)
VALUES ($1, 'http://127.0.0.1:1/' || $1, 3600, 1000) RETURNING id`, name).Scan(&id)
	require.NoError(t, err)
	return id
}

// addJob inserts a due READY job for a given slot.
func (b *testBundle) addJob(t *testing.T, serviceID, slot int64, maxAttempts int) int64 {
	t.Helper()
	var id int64
	err := b.pool.QueryRow(context.Background(), `
INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at)
VALUES ($1, $2, 'http://127.0.0.1:1/', 1000, $3, clock_timestamp() - interval '1 second') RETURNING id`,
		serviceID, slot, maxAttempts).Scan(&id)
	require.NoError(t, err)
	return id
}

// expireLease moves a job's lease into the past on the DB clock, as if its
// owner had stalled for longer than the lease.
func (b *testBundle) expireLease(t *testing.T, jobID int64) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(),
		`UPDATE monitoring_job SET lease_until = clock_timestamp() - interval '1 millisecond' WHERE id = $1`, jobID)
	require.NoError(t, err)
}

func (b *testBundle) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

func up() monitoring.ProbeResult {
	return monitoring.ProbeResult{Status: "UP", Latency: 12 * time.Millisecond, HTTPStatus: 200}
}

func down(reason string) monitoring.ProbeResult {
	return monitoring.ProbeResult{Status: "DOWN", Latency: 3 * time.Millisecond, HTTPStatus: 500, Error: reason}
}

func claimOne(t *testing.T, ctx context.Context, b *testBundle, instance string, lease time.Duration) monitoring.Job {
	t.Helper()
	jobs, err := b.store.Claim(ctx, monitoring.ClaimParams{Instance: instance, Limit: 1, Lease: lease})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	return jobs[0]
}

func TestEnqueueDueCreatesOneJobPerSlot(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.addService(t, "a")
	b.addService(t, "b")
	_, err := b.pool.Exec(ctx, `INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms, enabled)
VALUES ('paused', 'http://127.0.0.1:1/', 3600, 1000, false)`)
	require.NoError(t, err)

	n, err := b.store.EnqueueDue(ctx, 3, 0)
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "one job per enabled service")
	// Replicas enqueue the same slot again and again: nothing new.
	for range 3 {
		n, err = b.store.EnqueueDue(ctx, 3, 0)
		require.NoError(t, err)
		require.EqualValues(t, 0, n)
	}
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM monitoring_job`))
	// The slot is the DB clock floored to the interval, in epoch seconds.
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM monitoring_job
WHERE scheduled_slot = floor(extract(epoch FROM clock_timestamp()) / 3600)::bigint * 3600
  AND available_at = to_timestamp(scheduled_slot) AND state = 'READY'`))
}

func TestLeaseLifecycle(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "inventory")
	jobID := b.addJob(t, svc, 1000, 3)

	first := claimOne(t, ctx, b, "replica-a", time.Minute)
	require.Equal(t, jobID, first.ID)
	require.Equal(t, 1, first.Attempt)

	// While the lease holds nobody else gets the job.
	jobs, err := b.store.Claim(ctx, monitoring.ClaimParams{Instance: "replica-b", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, jobs)

	// The lease expires (replica-a stalled): its completion is rejected.
	b.expireLease(t, jobID)
	_, err = b.store.Complete(ctx, monitoring.CompleteParams{JobID: jobID, Token: first.Token, Instance: "replica-a", Result: up()})
	require.ErrorIs(t, err, monitoring.ErrStaleOwner)

	// Another replica reclaims it: same job id, new token, next attempt.
	second := claimOne(t, ctx, b, "replica-b", time.Minute)
	require.Equal(t, jobID, second.ID)
	require.NotEqual(t, first.Token, second.Token)
	require.Equal(t, 2, second.Attempt)

	// The old owner is still rejected, for complete, renew and retry alike.
	_, err = b.store.Complete(ctx, monitoring.CompleteParams{JobID: jobID, Token: first.Token, Instance: "replica-a", Result: up()})
	require.ErrorIs(t, err, monitoring.ErrStaleOwner)
	_, err = b.store.Renew(ctx, jobID, first.Token, time.Minute)
	require.ErrorIs(t, err, monitoring.ErrStaleOwner)
	_, err = b.store.Retry(ctx, monitoring.RetryParams{JobID: jobID, Token: first.Token, Error: "x", RetryBase: time.Second, RetryCap: time.Second})
	require.ErrorIs(t, err, monitoring.ErrStaleOwner)

	// The new owner succeeds once; a second completion is rejected.
	_, err = b.store.Complete(ctx, monitoring.CompleteParams{JobID: jobID, Token: second.Token, Instance: "replica-b", Result: up()})
	require.NoError(t, err)
	_, err = b.store.Complete(ctx, monitoring.CompleteParams{JobID: jobID, Token: second.Token, Instance: "replica-b", Result: up()})
	require.ErrorIs(t, err, monitoring.ErrStaleOwner)

	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job_result WHERE job_id = $1`, jobID))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job_result
WHERE job_id = $1 AND probed_by = 'replica-b' AND owner_token = $2 AND attempt = 2`, jobID, second.Token))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job
WHERE id = $1 AND state = 'DONE' AND owner_token IS NULL AND lease_until IS NULL AND finished_at IS NOT NULL`, jobID))
}

func TestRenewExtendsOnlyAHeldLease(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	jobID := b.addJob(t, b.addService(t, "s"), 1, 3)
	job := claimOne(t, ctx, b, "a", 2*time.Second)

	until, err := b.store.Renew(ctx, jobID, job.Token, time.Hour)
	require.NoError(t, err)
	require.True(t, until.After(job.LeaseUntil.Add(50*time.Minute)), "lease moved forward: %s -> %s", job.LeaseUntil, until)

	_, err = b.store.Renew(ctx, jobID, uuid.New(), time.Hour)
	require.ErrorIs(t, err, monitoring.ErrStaleOwner, "a wrong token cannot renew")

	b.expireLease(t, jobID)
	_, err = b.store.Renew(ctx, jobID, job.Token, time.Hour)
	require.ErrorIs(t, err, monitoring.ErrStaleOwner, "an expired lease cannot be renewed")
}

func TestConcurrentClaimsNeverShareAJob(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	const jobs = 600
	for i := range 30 {
		svc := b.addService(t, fmt.Sprintf("svc-%d", i))
		for slot := range jobs / 30 {
			b.addJob(t, svc, int64(slot), 3)
		}
	}
	var mu sync.Mutex
	owners := map[int64]int{}
	var wg sync.WaitGroup
	// 16 claimers at once; the pool gives each its own connection.
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := b.store.Claim(ctx, monitoring.ClaimParams{Instance: fmt.Sprintf("w%d", w), Limit: 7, Lease: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				if len(got) > 7 {
					t.Errorf("a batch of %d exceeds its limit of 7", len(got))
				}
				mu.Lock()
				for _, j := range got {
					owners[j.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, owners, jobs, "every job claimed")
	for id, n := range owners {
		require.Equal(t, 1, n, "job %d claimed %d times under valid leases", id, n)
	}
	require.Equal(t, jobs, b.count(t, `SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING' AND attempts = 1`))
}

func TestRetryBacksOffThenFails(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	jobID := b.addJob(t, b.addService(t, "flaky"), 1, 4)
	base, limit := 2*time.Second, 5*time.Second
	wantDelay := []time.Duration{2 * time.Second, 4 * time.Second, 5 * time.Second} // min(cap, base*2^(attempt-1))

	for attempt := 1; attempt <= 4; attempt++ {
		// Make the job due now, whatever backoff the last retry set.
		_, err := b.pool.Exec(ctx, `UPDATE monitoring_job SET available_at = clock_timestamp() WHERE id = $1 AND state = 'READY'`, jobID)
		require.NoError(t, err)
		job := claimOne(t, ctx, b, "a", time.Minute)
		require.Equal(t, attempt, job.Attempt)
		state, err := b.store.Retry(ctx, monitoring.RetryParams{JobID: jobID, Token: job.Token, Error: "database hiccup", RetryBase: base, RetryCap: limit})
		require.NoError(t, err)
		if attempt < 4 {
			require.Equal(t, "READY", state)
			var delay float64
			require.NoError(t, b.pool.QueryRow(ctx,
				`SELECT extract(epoch FROM available_at - clock_timestamp()) FROM monitoring_job WHERE id = $1`, jobID).Scan(&delay))
			got := time.Duration(delay * float64(time.Second))
			require.InDelta(t, wantDelay[attempt-1].Seconds(), got.Seconds(), 0.5, "attempt %d backoff", attempt)
			// Not due before the backoff is over.
			jobs, err := b.store.Claim(ctx, monitoring.ClaimParams{Instance: "a", Limit: 1, Lease: time.Minute})
			require.NoError(t, err)
			require.Empty(t, jobs)
		} else {
			require.Equal(t, "FAILED", state)
		}
	}
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job
WHERE id = $1 AND state = 'FAILED' AND attempts = 4 AND last_error = 'database hiccup' AND finished_at IS NOT NULL`, jobID))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM monitoring_job_result`))
}

func TestExpiredFinalAttemptFails(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	jobID := b.addJob(t, b.addService(t, "s"), 1, 1)
	claimOne(t, ctx, b, "dead-replica", time.Minute)
	b.expireLease(t, jobID)

	// No attempts left: not reclaimable, and the producer's sweep fails it.
	jobs, err := b.store.Claim(ctx, monitoring.ClaimParams{Instance: "b", Limit: 5, Lease: time.Minute})
	require.NoError(t, err)
	require.Empty(t, jobs)
	n, err := b.store.FailExhausted(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	var lastErr string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT last_error FROM monitoring_job WHERE id = $1 AND state = 'FAILED'`, jobID).Scan(&lastErr))
	require.Contains(t, lastErr, "dead-replica")
}

func TestReleaseReturnsTheAttempt(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	jobID := b.addJob(t, b.addService(t, "s"), 1, 3)
	job := claimOne(t, ctx, b, "a", time.Minute)
	require.NoError(t, b.store.Release(ctx, jobID, job.Token))
	again := claimOne(t, ctx, b, "b", time.Minute)
	require.Equal(t, jobID, again.ID)
	require.Equal(t, 1, again.Attempt, "a released job does not lose an attempt")
	require.ErrorIs(t, b.store.Release(ctx, jobID, job.Token), monitoring.ErrStaleOwner)
}

func TestFailingResultInsertRollsBackDone(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "s")
	jobID := b.addJob(t, svc, 1, 3)
	job := claimOne(t, ctx, b, "a", time.Minute)
	// A result row already present for this job id makes the insert fail.
	_, err := b.pool.Exec(ctx, `INSERT INTO monitoring_job_result
(job_id, service_id, scheduled_slot, status, latency_ms, attempt, owner_token, probed_by)
VALUES ($1, $2, 1, 'UP', 1, 1, gen_random_uuid(), 'intruder')`, jobID, svc)
	require.NoError(t, err)

	_, err = b.store.Complete(ctx, monitoring.CompleteParams{JobID: jobID, Token: job.Token, Instance: "a", Result: down("boom")})
	require.Error(t, err)
	require.NotErrorIs(t, err, monitoring.ErrStaleOwner)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job
WHERE id = $1 AND state = 'RUNNING' AND owner_token = $2 AND finished_at IS NULL`, jobID, job.Token),
		"DONE was rolled back: the job is still RUNNING under the same token")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM service_status`), "no status written")
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job_result`))
}

// With a spread each service's job is due at its own fixed offset into the
// slot, below min(spread, 80% of the interval).
func TestEnqueueDueSpreadsDueTimesWithinTheSlot(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	_, err := b.pool.Exec(ctx, `INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms)
SELECT 'hourly-' || i, 'http://127.0.0.1:1/', 3600, 1000 FROM generate_series(1, 200) i`)
	require.NoError(t, err)
	offsets := func() map[string]float64 {
		rows, err := b.pool.Query(ctx, `SELECT s.name, extract(epoch FROM j.available_at - to_timestamp(j.scheduled_slot))::float8
FROM monitoring_job j JOIN monitored_service s ON s.id = j.service_id`)
		require.NoError(t, err)
		out := map[string]float64{}
		for rows.Next() {
			var name string
			var off float64
			require.NoError(t, rows.Scan(&name, &off))
			out[name] = off
		}
		require.NoError(t, rows.Err())
		return out
	}

	n, err := b.store.EnqueueDue(ctx, 3, 10*time.Second)
	require.NoError(t, err)
	require.EqualValues(t, 200, n)
	first := offsets()
	var early, late int
	for name, off := range first {
		require.GreaterOrEqual(t, off, 0.0, name)
		require.Less(t, off, 10.0, name)
		if off < 5 {
			early++
		} else {
			late++
		}
	}
	// Spread evenly, not bunched: each half of the window holds a fair share.
	require.Greater(t, early, 60)
	require.Greater(t, late, 60)

	// The place is stable: the same service gets the same offset again.
	_, err = b.pool.Exec(ctx, `DELETE FROM monitoring_job`)
	require.NoError(t, err)
	_, err = b.store.EnqueueDue(ctx, 3, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, first, offsets())

	// A short interval caps the window at 80% of it.
	_, err = b.pool.Exec(ctx, `DELETE FROM monitoring_job; UPDATE monitored_service SET interval_seconds = 2`)
	require.NoError(t, err)
	_, err = b.store.EnqueueDue(ctx, 3, time.Minute)
	require.NoError(t, err)
	for name, off := range offsets() {
		require.Less(t, off, 1.6, name)
	}
}
