package monitoring_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// One batch holds a valid job, a job whose lease expired, a job taken over by
// another claim, and two slots of one service: each keeps its own guard, and
// the service's slots are applied oldest first, as lone completions would be.
func TestCompleteBatchKeepsEachJobsGuard(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	a, x, y, z := b.addService(t, "a"), b.addService(t, "x"), b.addService(t, "y"), b.addService(t, "z")
	b.addJob(t, a, 100, 3)
	b.addJob(t, a, 200, 3)
	b.addJob(t, x, 100, 3)
	b.addJob(t, y, 100, 3)
	b.addJob(t, z, 100, 3)
	jobs, err := b.store.Claim(ctx, monitoring.ClaimParams{Instance: "r1", Limit: 10, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, jobs, 5)
	byKey := map[[2]int64]monitoring.Job{}
	for _, j := range jobs {
		byKey[[2]int64{j.ServiceID, j.Slot}] = j
	}
	// x's lease has expired; y's was taken over by another replica.
	_, err = b.pool.Exec(ctx, `UPDATE monitoring_job SET lease_until = clock_timestamp() - interval '1 second' WHERE id = $1`,
		byKey[[2]int64{x, 100}].ID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE monitoring_job SET owner_token = gen_random_uuid(), owner_instance = 'r2' WHERE id = $1`,
		byKey[[2]int64{y, 100}].ID)
	require.NoError(t, err)

	params := func(svc, slot int64, r monitoring.ProbeResult) monitoring.CompleteParams {
		j := byKey[[2]int64{svc, slot}]
		return monitoring.CompleteParams{JobID: j.ID, Token: j.Token, ServiceID: j.ServiceID, Slot: j.Slot,
			Instance: "r1", Result: r, FailureThreshold: 1}
	}
	// The newer slot of a comes first in the batch on purpose.
	out, err := b.store.CompleteBatch(ctx, []monitoring.CompleteParams{
		params(a, 200, down("HTTP 500")), params(x, 100, up()), params(a, 100, up()),
		params(y, 100, up()), params(z, 100, down("refused")),
	})
	require.NoError(t, err)
	require.Len(t, out, 5)
	require.NoError(t, out[0].Err)
	require.ErrorIs(t, out[1].Err, monitoring.ErrStaleOwner)
	require.NoError(t, out[2].Err)
	require.ErrorIs(t, out[3].Err, monitoring.ErrStaleOwner)
	require.NoError(t, out[4].Err)
	// a: UP at slot 100 then DOWN at 200, announced since a was seen UP first.
	require.True(t, out[2].StatusUpdated)
	require.True(t, out[0].StatusUpdated)
	require.Equal(t, "DOWN", out[0].Alert)
	require.Empty(t, out[4].Alert, "z was never UP")

	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM monitoring_job_result`))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM monitoring_job_result WHERE service_id IN ($1, $2)`, x, y))
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM monitoring_job WHERE state = 'DONE'`))
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING'`))

	var status, alertState string
	var slot int64
	var fails int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status, last_slot, consecutive_failures, alert_state FROM service_status WHERE service_id = $1`, a).
		Scan(&status, &slot, &fails, &alertState))
	require.Equal(t, "DOWN", status)
	require.EqualValues(t, 200, slot)
	require.Equal(t, 1, fails)
	require.Equal(t, "DOWN", alertState)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM alert_outbox WHERE service_id = $1 AND kind = 'DOWN'`, a))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM alert_outbox`))
}

// A batch PostgreSQL refuses (here: one result breaks a CHECK constraint) is
// written again job by job, so only the job at fault fails.
func TestBatchWriterIsolatesARefusedResult(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	for _, name := range []string{"a", "b", "c"} {
		b.addJob(t, b.addService(t, name), 100, 3)
	}
	jobs, err := b.store.Claim(ctx, monitoring.ClaimParams{Instance: "r1", Limit: 3, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, jobs, 3)

	w := monitoring.NewBatchWriter(b.store, 10)
	errs := make(chan error, len(jobs))
	for i, j := range jobs {
		r := up()
		if i == 1 {
			r.Latency = -time.Millisecond // latency_ms >= 0 is a CHECK constraint
		}
		go func() {
			_, err := w.Complete(ctx, monitoring.CompleteParams{JobID: j.ID, Token: j.Token, ServiceID: j.ServiceID,
				Slot: j.Slot, Instance: "r1", Result: r, FailureThreshold: 1})
			errs <- err
		}()
	}
	// All three wait in the queue before the writer starts, so they form one batch.
	require.Eventually(t, func() bool { return w.Queued() == 3 }, 5*time.Second, time.Millisecond)
	done := make(chan struct{})
	go func() { defer close(done); w.Run() }()
	failed := 0
	for range jobs {
		if err := <-errs; err != nil {
			require.NotErrorIs(t, err, monitoring.ErrStaleOwner)
			failed++
		}
	}
	w.Close()
	<-done
	require.Equal(t, 1, failed)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM monitoring_job_result`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING' AND id = $1`, jobs[1].ID))
}
