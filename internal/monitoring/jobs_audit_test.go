package monitoring_test

import (
	"context"
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

// A replica frozen (SIGSTOP) in the middle of completing the current slot's
// job keeps that row's transaction open. The producer's one INSERT for all
// services must not wait behind it: a waiting producer creates no job for any
// service on any replica until the frozen one wakes up, and those slots are
// lost. (Found by the chaos run: 58 covered slots without a job.)
func TestEnqueueDueDoesNotWaitForAnOpenCompletion(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.addService(t, "held")
	n, err := b.store.EnqueueDue(ctx, 3, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	job := claimOne(t, ctx, b, "replica-a", time.Minute)

	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `UPDATE monitoring_job SET state = 'DONE', owner_token = NULL, lease_until = NULL,
finished_at = clock_timestamp() WHERE id = $1`, job.ID)
	require.NoError(t, err)

	b.addService(t, "new")
	enqueueCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	n, err = b.store.EnqueueDue(enqueueCtx, 3, 0)
	require.NoError(t, err, "the producer waited for the open transaction")
	require.EqualValues(t, 1, n, "the new service's slot is created; the held one already exists")
}
