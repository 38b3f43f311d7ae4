package monitoring_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
)

type noopProber struct{}

func (noopProber) Probe(context.Context, string, time.Duration) monitoring.ProbeResult {
	return monitoring.ProbeResult{Status: "UP", Latency: time.Millisecond, HTTPStatus: 200}
}

// BenchmarkReplicaThroughput measures how many jobs one replica claims,
// "probes" with a no-op prober and completes per second: b.N due jobs are
// queued, one Scheduler works them off. The figure is reported as jobs/s.
//
//	go test -run '^$' -bench ReplicaThroughput -benchtime 20000x ./internal/monitoring
func BenchmarkReplicaThroughput(b *testing.B) {
	for _, workers := range []int{8, 32} {
		b.Run(map[int]string{8: "workers=8", 32: "workers=32"}[workers], func(b *testing.B) {
			pool := pgtest.NewPool(b)
			ctx := context.Background()
			// One job per disabled service (one slot of a fleet); disabled, so
			// the producer adds none.
			seedServices(b, pool, b.N, false)
			seedDueJobs(b, pool, b.N, b.N)

			store := monitoring.NewStore(pool)
			sched := monitoring.NewScheduler(store, noopProber{}, monitoring.SchedulerConfig{
				Instance: monitoring.Instance{Name: "bench", Addr: "-", Version: "bench"},
				Workers:  workers, Lease: 30 * time.Second, Poll: 10 * time.Millisecond,
			}, monitoring.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))

			runCtx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			b.ResetTimer()
			start := time.Now()
			go func() {
				defer close(done)
				_ = sched.Run(runCtx)
			}()
			for {
				var n int
				require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM monitoring_job_result`).Scan(&n))
				if n >= b.N {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			stop()
			<-done
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
		})
	}
}
