package monitoring_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// sleepyProber takes d, or returns early when its context ends.
type sleepyProber struct {
	d         time.Duration
	started   chan struct{}
	cancelled chan struct{}
}

func (p sleepyProber) Probe(ctx context.Context, _ string, _ time.Duration) monitoring.ProbeResult {
	notify(p.started)
	select {
	case <-time.After(p.d):
		return monitoring.ProbeResult{Status: "UP", Latency: p.d, HTTPStatus: 200}
	case <-ctx.Done():
		notify(p.cancelled)
		return monitoring.ProbeResult{Status: "DOWN", Error: "probe cancelled"}
	}
}

// notify signals without blocking: a job probed again must not hang the probe.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func runScheduler(t *testing.T, b *testBundle, prober monitoring.Prober, lease time.Duration) *monitoring.Metrics {
	t.Helper()
	metrics := monitoring.NewMetrics(prometheus.NewRegistry())
	sched := monitoring.NewScheduler(b.store, prober, monitoring.SchedulerConfig{
		Instance: monitoring.Instance{Name: "r1", Addr: "-", Version: "test"},
		Workers:  2, Lease: lease, Poll: 20 * time.Millisecond, ShutdownGrace: 100 * time.Millisecond,
	}, metrics, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = sched.Run(ctx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})
	return metrics
}

// pausedJob is one due job of a paused service, so the producer adds none.
func pausedJob(t *testing.T, b *testBundle) int64 {
	t.Helper()
	svc := b.addService(t, "slow")
	jobID := b.addJob(t, svc, 1, 3)
	_, err := b.pool.Exec(context.Background(), `UPDATE monitored_service SET enabled = false WHERE id = $1`, svc)
	require.NoError(t, err)
	return jobID
}

// A probe that outlasts the lease keeps its job: the lease is renewed while
// it runs, nobody takes the job over, and its result is stored on attempt 1.
func TestLeaseIsRenewedWhileAProbeRuns(t *testing.T) {
	t.Parallel()
	_, b := setup(t)
	jobID := pausedJob(t, b)
	prober := sleepyProber{d: 2500 * time.Millisecond, started: make(chan struct{}, 1), cancelled: make(chan struct{}, 1)}
	metrics := runScheduler(t, b, prober, time.Second)
	<-prober.started
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM monitoring_job_result WHERE job_id = $1`, jobID) == 1
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job WHERE id = $1 AND state = 'DONE' AND attempts = 1`, jobID))
	require.Equal(t, 0.0, testutil.ToFloat64(metrics.StaleCompletions))
}

// A job taken over while its probe runs: the next renewal fails, the probe is
// cancelled, and the old owner writes nothing.
func TestLostLeaseCancelsTheProbe(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	jobID := pausedJob(t, b)
	prober := sleepyProber{d: time.Minute, started: make(chan struct{}, 1), cancelled: make(chan struct{}, 1)}
	metrics := runScheduler(t, b, prober, 2*time.Second)
	<-prober.started
	_, err := b.pool.Exec(ctx, `UPDATE monitoring_job SET owner_token = gen_random_uuid(), owner_instance = 'r2' WHERE id = $1`, jobID)
	require.NoError(t, err)
	select {
	case <-prober.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the probe of a lost job was not cancelled")
	}
	require.Eventually(t, func() bool { return testutil.ToFloat64(metrics.StaleCompletions) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM monitoring_job_result`))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job WHERE id = $1 AND state = 'RUNNING' AND owner_instance = 'r2'`, jobID))
}
