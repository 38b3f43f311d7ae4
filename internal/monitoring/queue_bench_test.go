package monitoring_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
)

// Queue benchmarks against a real PostgreSQL (pgtest's cluster: fsync and
// synchronous_commit off, so the figures are the queue's own costs, not the
// disk's commit rate). docs/performance.md has the figures.
//
//	go test -run '^$' -bench 'Enqueue|Claim|Complete' -benchtime 3x ./internal/monitoring

// seedServices adds n enabled services at 30 s.
func seedServices(b *testing.B, pool *pgxpool.Pool, n int, enabled bool) {
	b.Helper()
	_, err := pool.Exec(context.Background(), `INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms, enabled)
SELECT 'bench-' || i, 'http://127.0.0.1:1/', 30, 1000, $2 FROM generate_series(1, $1) i`, n, enabled)
	require.NoError(b, err)
}

// seedDueJobs queues n due READY jobs over the services named
// bench-1..bench-<services>. With as many services as jobs every job is its
// own service's slot, as in a real fleet.
func seedDueJobs(b *testing.B, pool *pgxpool.Pool, n, services int) {
	b.Helper()
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at)
SELECT s.id, n, 'http://127.0.0.1:1/', 1000, 3, clock_timestamp() - interval '1 minute'
FROM generate_series(1, $1) n JOIN monitored_service s ON s.name = 'bench-' || (n % $2 + 1)`, n, services)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `VACUUM ANALYZE monitoring_job`)
	require.NoError(b, err)
}

// BenchmarkEnqueueDue creates one slot's jobs for N services (the first
// producer tick of a slot), and measures the ticks after it, which every
// replica repeats every second and which insert nothing.
func BenchmarkEnqueueDue(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 50_000} {
		b.Run(fmt.Sprintf("services=%d/new-slot", n), func(b *testing.B) {
			pool := pgtest.NewPool(b)
			ctx := context.Background()
			seedServices(b, pool, n, true)
			store := monitoring.NewStore(pool)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				_, err := pool.Exec(ctx, `TRUNCATE monitoring_job CASCADE`)
				require.NoError(b, err)
				b.StartTimer()
				got, err := store.EnqueueDue(ctx, 3, 0)
				require.NoError(b, err)
				require.EqualValues(b, n, got)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
		b.Run(fmt.Sprintf("services=%d/existing-slot", n), func(b *testing.B) {
			pool := pgtest.NewPool(b)
			ctx := context.Background()
			seedServices(b, pool, n, true)
			store := monitoring.NewStore(pool)
			_, err := store.EnqueueDue(ctx, 3, 0)
			require.NoError(b, err)
			_, err = pool.Exec(ctx, `VACUUM ANALYZE monitoring_job`)
			require.NoError(b, err)
			b.ResetTimer()
			for range b.N {
				// A slot boundary between the two calls would insert; rare, and harmless.
				_, err := store.EnqueueDue(ctx, 3, 0)
				require.NoError(b, err)
			}
		})
	}
}

// BenchmarkClaim claims batches of due jobs; one op is one batch.
func BenchmarkClaim(b *testing.B) {
	for _, batch := range []int{1, 32, 128} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			pool := pgtest.NewPool(b)
			ctx := context.Background()
			seedServices(b, pool, 100, false)
			seedDueJobs(b, pool, b.N*batch, 100)
			store := monitoring.NewStore(pool)
			b.ResetTimer()
			for range b.N {
				jobs, err := store.Claim(ctx, monitoring.ClaimParams{Instance: "bench", Limit: batch, Lease: time.Minute})
				require.NoError(b, err)
				require.Len(b, jobs, batch)
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// claimAll claims n due jobs with a lease that outlasts the benchmark.
func claimAll(b *testing.B, store *monitoring.Store, n int) []monitoring.Job {
	b.Helper()
	var jobs []monitoring.Job
	for len(jobs) < n {
		got, err := store.Claim(context.Background(), monitoring.ClaimParams{Instance: "bench", Limit: 1000, Lease: 10 * time.Minute})
		require.NoError(b, err)
		require.NotEmpty(b, got)
		jobs = append(jobs, got...)
	}
	return jobs
}

// BenchmarkComplete completes claimed jobs, one transaction each, from 1 or
// 16 goroutines; one op is one completion.
func BenchmarkComplete(b *testing.B) {
	for _, par := range []int{1, 16} {
		b.Run(fmt.Sprintf("concurrency=%d", par), func(b *testing.B) {
			pool := pgtest.NewPool(b)
			ctx := context.Background()
			seedServices(b, pool, b.N, false)
			seedDueJobs(b, pool, b.N, b.N)
			store := monitoring.NewStore(pool)
			jobs := claimAll(b, store, b.N)
			next := make(chan monitoring.Job, len(jobs))
			for _, j := range jobs {
				next <- j
			}
			close(next)
			b.ResetTimer()
			var wg sync.WaitGroup
			errs := make(chan error, par)
			for range par {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range next {
						_, err := store.Complete(ctx, monitoring.CompleteParams{
							JobID: j.ID, Token: j.Token, Instance: "bench",
							Result:           monitoring.ProbeResult{Status: "UP", Latency: time.Millisecond, HTTPStatus: 200},
							FailureThreshold: 1, SuccessThreshold: 1,
						})
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			require.NoError(b, <-errs)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkClaimCompleteLoop is the whole loop of R replicas' schedulers on
// one database with a no-op prober: b.N due jobs, worked off. One op is one
// job.
func BenchmarkClaimCompleteLoop(b *testing.B) {
	for _, tc := range []struct{ replicas, workers int }{{1, 32}, {2, 32}, {2, 128}} {
		b.Run(fmt.Sprintf("replicas=%d/workers=%d", tc.replicas, tc.workers), func(b *testing.B) {
			url := pgtest.NewDatabase(b)
			ctx := context.Background()
			admin, err := pgxpool.New(ctx, url)
			require.NoError(b, err)
			b.Cleanup(admin.Close)
			seedServices(b, admin, b.N, false)
			seedDueJobs(b, admin, b.N, b.N)

			runCtx, stop := context.WithCancel(ctx)
			var running sync.WaitGroup
			scheds := make([]*monitoring.Scheduler, tc.replicas)
			for i := range scheds {
				cfg, err := pgxpool.ParseConfig(url)
				require.NoError(b, err)
				// The server's pool size, within pgtest's max_connections of 100:
				// past it, connects fail and the schedulers back off, which
				// measures the error path instead of the queue.
				cfg.MaxConns = int32(min(tc.workers+4, 64, 90/tc.replicas))
				pool, err := pgxpool.NewWithConfig(ctx, cfg)
				require.NoError(b, err)
				b.Cleanup(pool.Close)
				scheds[i] = monitoring.NewScheduler(monitoring.NewStore(pool), noopProber{}, monitoring.SchedulerConfig{
					Instance: monitoring.Instance{Name: fmt.Sprintf("bench-%d", i), Addr: "-", Version: "bench"},
					Workers:  tc.workers, Lease: 30 * time.Second, Poll: 10 * time.Millisecond,
				}, monitoring.NewMetrics(prometheus.NewRegistry()), slog.New(slog.NewTextHandler(io.Discard, nil)))
			}
			b.ResetTimer()
			for _, s := range scheds {
				running.Add(1)
				go func() {
					defer running.Done()
					_ = s.Run(runCtx)
				}()
			}
			for {
				var n int
				require.NoError(b, admin.QueryRow(ctx, `SELECT count(*) FROM monitoring_job_result`).Scan(&n))
				if n >= b.N {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			b.StopTimer()
			stop()
			running.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkCompleteBatch writes claimed jobs' results in batches of the given
// size, as the scheduler's writer does. One op is one job.
func BenchmarkCompleteBatch(b *testing.B) {
	for _, batch := range []int{1, 32, 256} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			pool := pgtest.NewPool(b)
			ctx := context.Background()
			seedServices(b, pool, b.N, false)
			seedDueJobs(b, pool, b.N, b.N)
			store := monitoring.NewStore(pool)
			var ps []monitoring.CompleteParams
			for _, j := range claimAll(b, store, b.N) {
				ps = append(ps, monitoring.CompleteParams{
					JobID: j.ID, Token: j.Token, ServiceID: j.ServiceID, Slot: j.Slot, Instance: "bench",
					Result:           monitoring.ProbeResult{Status: "UP", Latency: time.Millisecond, HTTPStatus: 200},
					FailureThreshold: 1, SuccessThreshold: 1,
				})
			}
			b.ResetTimer()
			for start := 0; start < len(ps); start += batch {
				out, err := store.CompleteBatch(ctx, ps[start:min(start+batch, len(ps))])
				require.NoError(b, err)
				for _, o := range out {
					require.NoError(b, o.Err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
