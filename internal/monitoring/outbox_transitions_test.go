package monitoring_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// completeWith claims the job and completes it with r under the given alert settings.
func (b *testBundle) completeWith(t *testing.T, jobID int64, r monitoring.ProbeResult, p monitoring.CompleteParams) monitoring.Completion {
	t.Helper()
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `UPDATE monitoring_job SET available_at = clock_timestamp() - interval '1 hour' WHERE id = $1`, jobID)
	require.NoError(t, err)
	var job monitoring.Job
	for {
		j := claimOne(t, ctx, b, "a", time.Minute)
		if j.ID == jobID {
			job = j
			break
		}
		require.NoError(t, b.store.Release(ctx, j.ID, j.Token))
		_, err := b.pool.Exec(ctx, `UPDATE monitoring_job SET available_at = clock_timestamp() + interval '1 hour' WHERE id = $1`, j.ID)
		require.NoError(t, err)
	}
	p.JobID, p.Token, p.Instance, p.Result = job.ID, job.Token, "a", r
	c, err := b.store.Complete(ctx, p)
	require.NoError(t, err)
	return c
}

// outboxEvent is an alert_outbox row as a test checks it.
type outboxEvent struct {
	kind        string
	slot        int64
	downSeconds *float64
}

func (b *testBundle) outbox(t *testing.T, serviceID int64) []outboxEvent {
	t.Helper()
	rows, err := b.pool.Query(context.Background(),
		`SELECT kind, scheduled_slot, down_seconds FROM alert_outbox WHERE service_id = $1 ORDER BY id`, serviceID)
	require.NoError(t, err)
	defer rows.Close()
	var out []outboxEvent
	for rows.Next() {
		var e outboxEvent
		require.NoError(t, rows.Scan(&e.kind, &e.slot, &e.downSeconds))
		out = append(out, e)
	}
	require.NoError(t, rows.Err())
	return out
}

func kinds(events []outboxEvent) []string {
	out := []string{}
	for _, e := range events {
		out = append(out, e.kind+"@"+strconv.FormatInt(e.slot, 10))
	}
	return out
}

// step is one completed slot and the alert it must raise ("" for none).
type step struct {
	slot  int64
	r     monitoring.ProbeResult
	alert string
}

func (b *testBundle) run(t *testing.T, svc int64, p monitoring.CompleteParams, steps []step) {
	t.Helper()
	for i, s := range steps {
		c := b.completeWith(t, b.addJob(t, svc, s.slot, 3), s.r, p)
		require.Equal(t, s.alert, c.Alert, "step %d (slot %d, %s)", i, s.slot, s.r.Status)
	}
}

func TestSuccessThresholdDelaysTheRecoveryAlert(t *testing.T) {
	t.Parallel()
	_, b := setup(t)
	svc := b.addService(t, "inventory")
	b.run(t, svc, monitoring.CompleteParams{FailureThreshold: 1, SuccessThreshold: 2}, []step{
		{1, up(), ""},
		{2, down("HTTP 500"), "DOWN"},
		{3, up(), ""}, // one UP is not yet a recovery
		{4, down("HTTP 500"), ""},
		{5, up(), ""},
		{6, up(), "UP"}, // the second UP in a row
		{7, up(), ""},
	})
	events := b.outbox(t, svc)
	require.Equal(t, []string{"DOWN@2", "UP@6"}, kinds(events))
	require.NotNil(t, events[1].downSeconds)
	require.Greater(t, *events[1].downSeconds, 0.0, "the recovery says how long the service was down")
}

func TestServiceNeverUpAlertsOnlyWhenConfigured(t *testing.T) {
	t.Parallel()
	_, b := setup(t)

	quiet := b.addService(t, "new-and-broken")
	b.run(t, quiet, monitoring.CompleteParams{FailureThreshold: 2}, []step{
		{1, down("connection refused"), ""},
		{2, down("connection refused"), ""},
		{3, down("connection refused"), ""},
		{4, up(), ""}, // first sight of it working: nothing was announced, nothing to recover
	})
	require.Empty(t, b.outbox(t, quiet))

	loud := b.addService(t, "watched-from-the-start")
	b.run(t, loud, monitoring.CompleteParams{FailureThreshold: 2, AlertBeforeFirstUp: true}, []step{
		{1, down("connection refused"), ""},
		{2, down("connection refused"), "DOWN"},
		{3, down("connection refused"), ""},
		{4, up(), "UP"},
	})
	require.Equal(t, []string{"DOWN@2", "UP@4"}, kinds(b.outbox(t, loud)))
}

func TestOutOfOrderCompletionsRaiseNoStaleAlert(t *testing.T) {
	t.Parallel()
	_, b := setup(t)
	svc := b.addService(t, "inventory")
	p := monitoring.CompleteParams{FailureThreshold: 1}
	b.run(t, svc, p, []step{
		{10, up(), ""},
		{30, down("HTTP 500"), "DOWN"},
		{20, up(), ""}, // an older slot finishing late: no recovery from it
		{40, down("HTTP 500"), ""},
		{50, up(), "UP"},
		{45, down("late"), ""}, // and no new outage from a late DOWN either
	})
	require.Equal(t, []string{"DOWN@30", "UP@50"}, kinds(b.outbox(t, svc)))

	// A late DOWN does not count towards the threshold.
	other := b.addService(t, "billing")
	b.run(t, other, monitoring.CompleteParams{FailureThreshold: 2}, []step{
		{10, up(), ""},
		{30, down("HTTP 500"), ""},
		{20, down("HTTP 500"), ""}, // older than the stored slot: ignored
		{40, up(), ""},
	})
	require.Empty(t, b.outbox(t, other))
}
