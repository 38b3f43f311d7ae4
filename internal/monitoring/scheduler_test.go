package monitoring_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// blockingProber hangs until its context ends, like a probe still waiting on
// a slow target when the replica is told to stop.
type blockingProber struct{ started chan struct{} }

func (p blockingProber) Probe(ctx context.Context, _ string, _ time.Duration) monitoring.ProbeResult {
	p.started <- struct{}{}
	<-ctx.Done()
	return monitoring.ProbeResult{Status: "DOWN", Error: "probe cancelled"}
}

func TestShutdownReleasesHeldJobs(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "slow")
	jobID := b.addJob(t, svc, 1, 3)
	// Paused, so the producer adds no job of the current slot: the test's job is the only one.
	_, err := b.pool.Exec(ctx, `UPDATE monitored_service SET enabled = false WHERE id = $1`, svc)
	require.NoError(t, err)
	prober := blockingProber{started: make(chan struct{}, 1)}
	metrics := monitoring.NewMetrics(prometheus.NewRegistry())
	sched := monitoring.NewScheduler(b.store, prober, monitoring.SchedulerConfig{
		Instance: monitoring.Instance{Name: "stopping", Addr: "-", Version: "test"},
		Workers:  2, Lease: time.Minute, Poll: 20 * time.Millisecond, ShutdownGrace: 100 * time.Millisecond,
	}, metrics, slog.New(slog.NewTextHandler(io.Discard, nil)))

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sched.Run(runCtx)
	}()
	select {
	case <-prober.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the job was never probed")
	}
	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("scheduler did not stop")
	}
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job
WHERE id = $1 AND state = 'READY' AND attempts = 0 AND owner_token IS NULL AND available_at <= clock_timestamp()`, jobID),
		"released: due now, attempt given back")
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM monitoring_job_result`), "an interrupted probe stores no result")
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.Releases))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM vigil_instance WHERE name = 'stopping' AND stopped_at IS NOT NULL`))
	// Another replica takes it at once.
	job := claimOne(t, ctx, b, "other", time.Minute)
	require.Equal(t, jobID, job.ID)
}

func TestSyncConfigIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	services := make([]monitoring.ServiceSpec, 50)
	for i := range services {
		services[i] = monitoring.ServiceSpec{Name: fmt.Sprintf("svc-%02d", i), Group: "core",
			URL: "http://127.0.0.1:1/", Interval: 30 * time.Second, Timeout: 2 * time.Second, Enabled: true}
	}
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.store.SyncConfig(ctx, []string{"core"}, services)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 50, b.count(t, `SELECT count(*) FROM monitored_service s JOIN monitoring_group g ON g.id = s.group_id WHERE g.name = 'core'`))

	sum, err := b.store.SyncConfig(ctx, []string{"core"}, services)
	require.NoError(t, err)
	require.Zero(t, sum.Upserted, "an unchanged file rewrites nothing")

	// A changed timeout and a removed service.
	services[0].Timeout = 4 * time.Second
	sum, err = b.store.SyncConfig(ctx, []string{"core"}, services[:49])
	require.NoError(t, err)
	require.EqualValues(t, 1, sum.Upserted)
	require.EqualValues(t, 1, sum.Retired)
	require.Equal(t, 4000, b.count(t, `SELECT timeout_ms FROM monitored_service WHERE name = 'svc-00'`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitored_service WHERE name = 'svc-49' AND retired_at IS NOT NULL`))
	n, err := b.store.EnqueueDue(ctx, 3, 0)
	require.NoError(t, err)
	require.EqualValues(t, 49, n, "a retired service gets no new jobs")
}
