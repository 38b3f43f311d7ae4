package monitoring_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// A result keeps the lease its writer held and the DB-clock instant the guard
// passed, so an audit can check after the fact that no owner wrote past its
// lease: the renewed lease, not the first one, and a guard time before it.
func TestResultRecordsTheLeaseItWasWrittenUnder(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	jobID := b.addJob(t, b.addService(t, "audited"), 1, 3)
	job := claimOne(t, ctx, b, "replica-a", time.Minute)
	renewed, err := b.store.Renew(ctx, jobID, job.Token, 2*time.Minute)
	require.NoError(t, err)
	require.True(t, renewed.After(job.LeaseUntil))

	_, err = b.store.Complete(ctx, monitoring.CompleteParams{JobID: jobID, Token: job.Token, Instance: "replica-a", Result: up()})
	require.NoError(t, err)

	var leaseUntil, guardedAt, observedAt time.Time
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lease_until, guarded_at, observed_at FROM monitoring_job_result WHERE job_id = $1`, jobID).
		Scan(&leaseUntil, &guardedAt, &observedAt))
	require.WithinDuration(t, renewed, leaseUntil, time.Millisecond, "the lease held at write time, after renewal")
	require.True(t, guardedAt.Before(leaseUntil))
	require.False(t, observedAt.Before(guardedAt), "the result is written after the guard passed")
}

// An alert event records the transaction that wrote it, and that is the
// transaction of its job's result, even after the outbox row is updated later.
func TestAlertEventWrittenWithItsResult(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "flappy")
	complete := func(slot int64, r monitoring.ProbeResult) int64 {
		jobID := b.addJob(t, svc, slot, 3)
		job := claimOne(t, ctx, b, "replica-a", time.Minute)
		require.Equal(t, jobID, job.ID)
		_, err := b.store.Complete(ctx, monitoring.CompleteParams{JobID: jobID, Token: job.Token, Instance: "replica-a",
			Result: r, FailureThreshold: 1, SuccessThreshold: 1})
		require.NoError(t, err)
		return jobID
	}
	complete(1, up())
	downJob := complete(2, down("HTTP 500"))
	_, err := b.pool.Exec(ctx, `UPDATE alert_outbox SET reason = reason WHERE job_id = $1`, downJob) // a later update, as a dispatcher makes
	require.NoError(t, err)
	require.Equal(t, 1, b.count(t, `
SELECT count(*) FROM alert_outbox o JOIN monitoring_job_result r ON r.job_id = o.job_id
WHERE o.job_id = $1 AND o.kind = 'DOWN'
  AND (o.written_xid::text::bigint % 4294967296) = r.xmin::text::bigint`, downJob))
}
