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
			// Jobs spread over 100 disabled services, so the producer adds none.
			_, err := pool.Exec(ctx, `INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms, enabled)
SELECT 'bench-' || i, 'http://127.0.0.1:1/', 30, 1000, false FROM generate_series(1, 100) i`)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, `INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at)
SELECT s.id, n, 'http://127.0.0.1:1/', 1000, 3, clock_timestamp() - interval '1 minute'
FROM generate_series(1, $1) n JOIN monitored_service s ON s.name = 'bench-' || (n % 100 + 1)`, b.N)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, `VACUUM ANALYZE monitoring_job`)
			require.NoError(b, err)

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
