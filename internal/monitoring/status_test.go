package monitoring_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// complete claims the job for slot and completes it with r.
func (b *testBundle) complete(t *testing.T, ctx context.Context, jobID int64, r monitoring.ProbeResult, failureThreshold int) monitoring.Completion {
	t.Helper()
	_, err := b.pool.Exec(ctx, `UPDATE monitoring_job SET available_at = clock_timestamp() - interval '1 hour' WHERE id = $1`, jobID)
	require.NoError(t, err)
	var job monitoring.Job
	for {
		j := claimOne(t, ctx, b, "a", time.Minute)
		if j.ID == jobID {
			job = j
			break
		}
		// Another due job came first: put it back.
		require.NoError(t, b.store.Release(ctx, j.ID, j.Token))
		_, err := b.pool.Exec(ctx, `UPDATE monitoring_job SET available_at = clock_timestamp() + interval '1 hour' WHERE id = $1`, j.ID)
		require.NoError(t, err)
	}
	c, err := b.store.Complete(ctx, monitoring.CompleteParams{JobID: job.ID, Token: job.Token, Instance: "a", Result: r, FailureThreshold: failureThreshold})
	require.NoError(t, err)
	return c
}

func TestLatestStatusIgnoresAnOlderSlot(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "s")
	older := b.addJob(t, svc, 100, 3)
	newer := b.addJob(t, svc, 200, 3)

	c := b.complete(t, ctx, newer, up(), 1)
	require.True(t, c.StatusUpdated)
	// The older slot finishes late, with a different outcome: stored as a
	// result, but the latest status stays with slot 200.
	c = b.complete(t, ctx, older, down("late"), 1)
	require.False(t, c.StatusUpdated)
	require.Empty(t, c.Alert)

	var status string
	var slot, lastJob int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status, last_slot, last_job_id FROM service_status WHERE service_id = $1`, svc).
		Scan(&status, &slot, &lastJob))
	require.Equal(t, "UP", status)
	require.EqualValues(t, 200, slot)
	require.Equal(t, newer, lastJob)
	require.Equal(t, 2, b.count(t, `SELECT count(*) FROM monitoring_job_result WHERE service_id = $1`, svc))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM alert_outbox`))
}

func TestAlertsOnTransitions(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "s")
	results := []struct {
		r         monitoring.ProbeResult
		wantAlert string
		wantFails int
	}{
		{down("never up yet"), "", 1}, // a service never seen UP raises no alert
		{up(), "", 0},                 // first UP is silent
		{down("HTTP 500"), "", 1},     // below the threshold of 2
		{down("HTTP 500"), "DOWN", 2}, // threshold reached
		{down("HTTP 500"), "", 3},     // already announced
		{up(), "UP", 0},               // recovery
		{up(), "", 0},
	}
	for i, step := range results {
		jobID := b.addJob(t, svc, int64(i+1), 3)
		c := b.complete(t, ctx, jobID, step.r, 2)
		require.Equal(t, step.wantAlert, c.Alert, "step %d", i)
		require.Equal(t, step.wantFails, b.count(t, `SELECT consecutive_failures FROM service_status WHERE service_id = $1`, svc), "step %d", i)
	}
	rows, err := b.pool.Query(ctx, `SELECT kind, event_key, scheduled_slot, reason, down_seconds FROM alert_outbox ORDER BY id`)
	require.NoError(t, err)
	defer rows.Close()
	var kinds []string
	for rows.Next() {
		var kind, key string
		var slot int64
		var reason *string
		var downSeconds *float64
		require.NoError(t, rows.Scan(&kind, &key, &slot, &reason, &downSeconds))
		kinds = append(kinds, kind)
		switch kind {
		case "DOWN":
			require.EqualValues(t, 4, slot)
			require.Equal(t, "HTTP 500", *reason)
		case "UP":
			require.EqualValues(t, 6, slot)
			require.NotNil(t, downSeconds, "a recovery says how long the service was down")
			require.Greater(t, *downSeconds, 0.0)
		}
		require.Contains(t, key, "job-")
	}
	require.Equal(t, []string{"DOWN", "UP"}, kinds)
}
