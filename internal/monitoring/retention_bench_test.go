package monitoring_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
)

// BenchmarkRetentionAtScale measures what retention costs on a large queue:
// VIGIL_BENCH_JOBS DONE jobs (default 200,000), each with its result, spread
// over 10,000 services at 30-second slots, as a 10,000-service installation
// writes them (fewer services below 4,800,000 jobs). It deletes one hour of slots per batch size (1,000, 5,000 and
// 20,000) and reports rows deleted per second and batch latencies, while a
// probe runs the hot path (enqueue, claim, complete) in a loop, and compares
// the probe's latency with a baseline taken before. It also times rolling up
// vacuuming the tables afterwards, rolling up one hour of all services, and
// dropping a table as large as one deleted hour, which is what partitioning
// would do instead.
//
//	VIGIL_BENCH_JOBS=10000000 go test -run '^$' -bench RetentionAtScale -benchtime 1x -timeout 60m ./internal/monitoring
//
// Point TEST_DATABASE_URL at a durable server to measure with fsync on: the
// test harness's own cluster runs with fsync off.
func BenchmarkRetentionAtScale(b *testing.B) {
	jobs := 200_000
	if v := os.Getenv("VIGIL_BENCH_JOBS"); v != "" {
		var err error
		jobs, err = strconv.Atoi(v)
		require.NoError(b, err, "VIGIL_BENCH_JOBS")
	}
	// 10,000 services when there are enough jobs for four hours of their slots
	// (4,800,000); fewer services for a quick run.
	services := min(10_000, jobs/(4*120))
	slots := int64(jobs / services)
	require.Positive(b, services, "VIGIL_BENCH_JOBS must be at least 480")

	pool := pgtest.NewPool(b)
	ctx := context.Background()
	store := monitoring.NewStore(pool)
	now := dbEpoch(b, pool)
	base := now - now%3600 - 10*day // old enough for any retention.raw

	loadStart := time.Now()
	exec(b, pool, `INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms, enabled)
SELECT 'bench-' || i, 'http://127.0.0.1:1/', 30, 1000, false FROM generate_series(1, $1) i`, services)
	// In slot order, a million rows per statement, as completions would write them.
	const perStatement = 100
	for k := int64(0); k < slots; k += perStatement {
		exec(b, pool, `
WITH j AS (
    INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at,
                                state, attempts, owner_instance, claimed_at, finished_at)
    SELECT s.id, $1 + k * 30, s.url, 1000, 3, to_timestamp($1 + k * 30), 'DONE', 1, 'bench',
           to_timestamp($1 + k * 30), to_timestamp($1 + k * 30 + 1)
    FROM generate_series($2::bigint, $3::bigint - 1) k CROSS JOIN monitored_service s
    WHERE s.name LIKE 'bench-%'
    ORDER BY k, s.id
    RETURNING id, service_id, scheduled_slot, finished_at
)
INSERT INTO monitoring_job_result (job_id, service_id, scheduled_slot, status, latency_ms, http_status,
                                   attempt, owner_token, probed_by, observed_at)
SELECT id, service_id, scheduled_slot, CASE WHEN id % 17 = 0 THEN 'DOWN' ELSE 'UP' END, (id % 250) + 0.5, 200,
       1, gen_random_uuid(), 'bench', finished_at
FROM j`, base, k, min(k+perStatement, slots))
	}
	exec(b, pool, `VACUUM ANALYZE monitoring_job`)
	exec(b, pool, `VACUUM ANALYZE monitoring_job_result`)
	var jobBytes, resultBytes int64
	require.NoError(b, pool.QueryRow(ctx, `SELECT pg_total_relation_size('monitoring_job'), pg_total_relation_size('monitoring_job_result')`).
		Scan(&jobBytes, &resultBytes))
	b.Logf("loaded %d jobs + %d results over %d services in %s; monitoring_job %d MiB, monitoring_job_result %d MiB (with indexes)",
		slots*int64(services), slots*int64(services), services, time.Since(loadStart).Round(time.Second), jobBytes>>20, resultBytes>>20)

	probe := newHotPathProbe(b, pool, store)
	baseline := probe.run(ctx, 5*time.Second)
	b.Logf("hot path (enqueue+claim+complete), idle baseline: %s", baseline)

	b.ResetTimer()
	for i, batch := range []int{1000, monitoring.DefaultRetentionBatchSize, 20000} {
		// Let this pass delete hour i: the rollup watermarks end there.
		cutoff := base + int64(i+1)*3600
		exec(b, pool, `INSERT INTO lifecycle_watermark (name, until_epoch) VALUES ('rollup_hourly', $1), ('rollup_daily', $1)
ON CONFLICT (name) DO UPDATE SET until_epoch = EXCLUDED.until_epoch`, cutoff)

		var batches []time.Duration
		var deleted int64
		probeCtx, stopProbe := context.WithCancel(ctx)
		probed := make(chan probeStats, 1)
		go func() { probed <- probe.run(probeCtx, 0) }()
		start := time.Now()
		r, err := store.PruneExpired(ctx, monitoring.RetentionPolicy{Raw: 7 * 24 * time.Hour, BatchSize: batch},
			func(rb monitoring.RetentionBatch) {
				if rb.Kind == monitoring.PrunedJobs && rb.Rows > 0 {
					batches = append(batches, rb.Took)
					deleted += rb.Rows + rb.Results
				}
			})
		elapsed := time.Since(start)
		stopProbe()
		during := <-probed
		require.NoError(b, err)
		require.EqualValues(b, 120*services, r.Jobs, "one hour of jobs")

		slices.Sort(batches)
		rate := float64(deleted) / elapsed.Seconds()
		b.Logf("batch %6d: deleted %d jobs + %d results in %s = %.0f rows/s (%.0f jobs/s); batch p50 %s p99 %s max %s; hot path meanwhile: %s",
			batch, r.Jobs, r.Results, elapsed.Round(time.Millisecond), rate, float64(r.Jobs)/elapsed.Seconds(),
			pct(batches, 0.5), pct(batches, 0.99), batches[len(batches)-1], during)
		b.ReportMetric(rate, fmt.Sprintf("rows/s@%d", batch))
		b.ReportMetric(float64(pct(batches, 0.99).Microseconds())/1000, fmt.Sprintf("batch-p99-ms@%d", batch))
		b.ReportMetric(float64(during.p99.Microseconds())/1000, fmt.Sprintf("hotpath-p99-ms@%d", batch))
	}
	b.StopTimer()
	b.ReportMetric(float64(baseline.p99.Microseconds())/1000, "hotpath-p99-ms@idle")

	// Deleted rows are reclaimed by (auto)vacuum, which scans every index of the table.
	for _, table := range []string{"monitoring_job", "monitoring_job_result"} {
		start := time.Now()
		exec(b, pool, `VACUUM `+table)
		b.Logf("VACUUM %s after the deletes: %s", table, time.Since(start).Round(time.Millisecond))
	}

	// Rolling up one hour of all services, as the rollup task does every hour.
	hour := base + 3*3600
	start := time.Now()
	n, err := store.RollUpHours(ctx, hour, hour+3600)
	require.NoError(b, err)
	b.Logf("rollup of one hour (%d services, %d results): %d rows in %s", services, 120*services, n, time.Since(start).Round(time.Millisecond))
	b.ReportMetric(time.Since(start).Seconds(), "rollup-hour-s")

	// What a daily partition would cost to drop: a table as large as one hour of results.
	exec(b, pool, `CREATE TABLE bench_partition AS SELECT * FROM monitoring_job_result WHERE scheduled_slot >= $1 AND scheduled_slot < $2`,
		hour, hour+3600)
	start = time.Now()
	exec(b, pool, `DROP TABLE bench_partition`)
	b.Logf("DROP TABLE of %d result rows: %s", 120*services, time.Since(start).Round(time.Microsecond))
}

func exec(b testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	b.Helper()
	_, err := pool.Exec(context.Background(), sql, args...)
	require.NoError(b, err)
}

func pct(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// hotPathProbe runs what a replica does per check, one check at a time:
// enqueue a job, claim it, complete it, each its own transaction.
type hotPathProbe struct {
	b       testing.TB
	pool    *pgxpool.Pool
	store   *monitoring.Store
	service int64
	mu      sync.Mutex
	slot    int64
}

type probeStats struct {
	n             int
	p50, p99, max time.Duration
}

func (s probeStats) String() string {
	return fmt.Sprintf("%d checks, p50 %s p99 %s max %s", s.n, s.p50, s.p99, s.max)
}

func newHotPathProbe(b testing.TB, pool *pgxpool.Pool, store *monitoring.Store) *hotPathProbe {
	// Its slots count up from now, clear of what retention deletes.
	p := &hotPathProbe{b: b, pool: pool, store: store, slot: dbEpoch(b, pool)}
	require.NoError(b, pool.QueryRow(context.Background(), `INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms, enabled)
VALUES ('probe', 'http://127.0.0.1:1/', 1, 1000, false) RETURNING id`).Scan(&p.service))
	return p
}

// run probes until ctx ends or, if d > 0, for d.
func (p *hotPathProbe) run(ctx context.Context, d time.Duration) probeStats {
	if d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	var took []time.Duration
	for ctx.Err() == nil {
		p.mu.Lock()
		p.slot++
		slot := p.slot
		p.mu.Unlock()
		start := time.Now()
		_, err := p.pool.Exec(context.Background(), `
INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at)
VALUES ($1, $2, 'http://127.0.0.1:1/', 1000, 3, clock_timestamp())`, p.service, slot)
		require.NoError(p.b, err)
		jobs, err := p.store.Claim(context.Background(), monitoring.ClaimParams{Instance: "probe", Limit: 1, Lease: time.Minute})
		require.NoError(p.b, err)
		require.Len(p.b, jobs, 1)
		_, err = p.store.Complete(context.Background(), monitoring.CompleteParams{
			JobID: jobs[0].ID, Token: jobs[0].Token, Instance: "probe",
			Result:           monitoring.ProbeResult{Status: "UP", Latency: time.Millisecond, HTTPStatus: 200},
			FailureThreshold: 1,
		})
		require.NoError(p.b, err)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	if len(took) == 0 {
		return probeStats{}
	}
	return probeStats{n: len(took), p50: pct(took, 0.5), p99: pct(took, 0.99), max: took[len(took)-1]}
}
