// Command bench works off the same no-op workload through River and through
// Vigil's job store, on one PostgreSQL server in the same run, and prints
// both throughputs and their ratio (docs/performance.md).
//
// It is its own Go module so that River never becomes a dependency of Vigil.
//
//	cd bench && go run . -jobs 50000 -clients 2 -workers 1000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/vigilhq/vigil/internal/localpg"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/migrations"
)

type options struct {
	Jobs      int
	Clients   int
	Workers   int
	PoolConns int
	Rounds    int
	Durable   bool
	Async     bool
	Keep      bool
}

func main() {
	var o options
	flag.IntVar(&o.Jobs, "jobs", 50_000, "no-op jobs inserted, then worked off")
	flag.IntVar(&o.Clients, "clients", 2, "clients (River) / replicas (Vigil), each with its own pool")
	flag.IntVar(&o.Workers, "workers", 1000, "workers per client: River's MaxWorkers, Vigil's scheduler.workers")
	flag.IntVar(&o.PoolConns, "pool", 0, "connections per client's pool (0: what the Vigil server uses, min(workers+4, 64))")
	flag.IntVar(&o.Rounds, "rounds", 1, "rounds; each works off the jobs through River, then through Vigil")
	flag.BoolVar(&o.Durable, "durable", true, "fsync and synchronous_commit on (false: the test settings)")
	flag.BoolVar(&o.Async, "async-commit", false, "synchronous_commit=off on both queues' pools (durable server, commits not awaited)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the cluster's directory")
	flag.Parse()
	asyncCommit = o.Async
	if o.PoolConns <= 0 {
		o.PoolConns = min(o.Workers+4, 64)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "bench: %v received; stopping\n", sig)
		stop()
	}()
	if err := run(ctx, o); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (err error) {
	dir, err := os.MkdirTemp("", "vigil-bench-")
	if err != nil {
		return err
	}
	// As root PostgreSQL runs as the postgres user, which must reach its data directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	pgDir := filepath.Join(dir, "pg")
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if serr := localpg.Stop(stopCtx, pgDir); serr != nil {
			fmt.Fprintf(os.Stderr, "bench: stop PostgreSQL in %s: %v\n", pgDir, serr)
			return
		}
		if !o.Keep && err == nil {
			_ = os.RemoveAll(dir)
		}
	}()
	lopts := localpg.Options{DataDir: pgDir, Ephemeral: !o.Durable, Logger: slog.New(slog.DiscardHandler), Database: "river_bench"}
	riverURL, err := localpg.Ensure(ctx, lopts)
	if err != nil {
		return err
	}
	admin, err := pgxpool.New(ctx, riverURL)
	if err != nil {
		return err
	}
	_, err = admin.Exec(ctx, fmt.Sprintf(`ALTER SYSTEM SET max_connections = %d`, max(100, 2*o.Clients*o.PoolConns+20)))
	admin.Close()
	if err != nil {
		return fmt.Errorf("set max_connections: %w", err)
	}
	if err := localpg.Stop(ctx, pgDir); err != nil {
		return err
	}
	if riverURL, err = localpg.Ensure(ctx, lopts); err != nil {
		return err
	}
	lopts.Database = "vigil_bench"
	vigilURL, err := localpg.Ensure(ctx, lopts)
	if err != nil {
		return err
	}
	if err := migrations.Up(vigilURL); err != nil {
		return err
	}
	if err := migrateRiver(ctx, riverURL); err != nil {
		return err
	}

	fmt.Printf("bench: %d no-op jobs, %d clients x %d workers, pool %d per client, durable=%t, async-commit=%t, load average %s\n",
		o.Jobs, o.Clients, o.Workers, o.PoolConns, o.Durable, o.Async, loadAvg())
	fmt.Printf("%-6s %6s %12s %14s %8s\n", "queue", "round", "insert jobs/s", "work-off jobs/s", "load")
	var riverSum, vigilSum float64
	for round := 1; round <= o.Rounds; round++ {
		ins, work, err := runRiver(ctx, riverURL, o)
		if err != nil {
			return fmt.Errorf("river: %w", err)
		}
		fmt.Printf("%-6s %6d %12.0f %14.0f   %s\n", "river", round, ins, work, loadAvg())
		riverSum += work
		ins, work, err = runVigil(ctx, vigilURL, o)
		if err != nil {
			return fmt.Errorf("vigil: %w", err)
		}
		fmt.Printf("%-6s %6d %12.0f %14.0f   %s\n", "vigil", round, ins, work, loadAvg())
		vigilSum += work
	}
	fmt.Printf("work-off throughput: river %.0f jobs/s, vigil %.0f jobs/s, vigil/river = %.2f\n",
		riverSum/float64(o.Rounds), vigilSum/float64(o.Rounds), vigilSum/riverSum)
	return nil
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// asyncCommit is -async-commit, for newPool.
var asyncCommit bool

// River's side.

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

// worked counts Work calls in the current round.
var worked atomic.Int64

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	worked.Add(1)
	return nil
}

func migrateRiver(ctx context.Context, url string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

func newPool(ctx context.Context, url string, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(conns)
	if asyncCommit {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// runRiver inserts the jobs with an insert-only client, then starts the
// working clients and waits for every job_completed event.
func runRiver(ctx context.Context, url string, o options) (insertRate, workRate float64, err error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	pool, err := newPool(ctx, url, o.PoolConns)
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `TRUNCATE river_job`); err != nil {
		return 0, 0, err
	}
	inserter, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: quiet})
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for done := 0; done < o.Jobs; {
		n := min(5000, o.Jobs-done)
		params := make([]river.InsertManyParams, n)
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := inserter.InsertMany(ctx, params); err != nil {
			return 0, 0, err
		}
		done += n
	}
	insertRate = float64(o.Jobs) / time.Since(start).Seconds()

	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{})
	var clients []*river.Client[pgx.Tx]
	for range o.Clients {
		p, err := newPool(ctx, url, o.PoolConns)
		if err != nil {
			return 0, 0, err
		}
		defer p.Close()
		c, err := river.NewClient(riverpgxv5.New(p), &river.Config{
			Logger:  quiet,
			Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.Workers}},
			Workers: workers,
		})
		if err != nil {
			return 0, 0, err
		}
		clients = append(clients, c)
	}
	worked.Store(0)
	start = time.Now()
	for _, c := range clients {
		if err := c.Start(ctx); err != nil {
			return 0, 0, err
		}
	}
	// Subscribe channels drop events when the reader falls behind (a busy
	// machine), so the workers count, and the database confirms: River
	// completes jobs in batches after Work returns.
	for {
		if worked.Load() >= int64(o.Jobs) {
			var left bool
			if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job WHERE state <> 'completed')`).Scan(&left); err != nil {
				return 0, 0, err
			}
			if !left {
				break
			}
		}
		select {
		case <-ctx.Done():
			return 0, 0, errors.New("interrupted")
		case <-time.After(5 * time.Millisecond):
		}
	}
	workRate = float64(o.Jobs) / time.Since(start).Seconds()
	for _, c := range clients {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = c.Stop(stopCtx)
		cancel()
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(&left); err != nil {
		return 0, 0, err
	}
	if left != 0 {
		return 0, 0, fmt.Errorf("%d jobs not completed", left)
	}
	return insertRate, workRate, nil
}

// Vigil's side.

type noopProber struct{}

func (noopProber) Probe(context.Context, string, time.Duration) monitoring.ProbeResult {
	return monitoring.ProbeResult{Status: "UP", Latency: time.Millisecond, HTTPStatus: 200}
}

// runVigil inserts the jobs (due now, one per disabled service, as one slot
// of a fleet would be; disabled so the producers add none), then runs one Scheduler per client on its own pool
// and waits until every job has its result.
func runVigil(ctx context.Context, url string, o options) (insertRate, workRate float64, err error) {
	pool, err := newPool(ctx, url, o.PoolConns)
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	_, err = pool.Exec(ctx, `TRUNCATE monitoring_job_result, service_status, alert_outbox, monitoring_job, monitored_service CASCADE`)
	if err != nil {
		return 0, 0, err
	}
	_, err = pool.Exec(ctx, `INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms, enabled)
SELECT 'bench-' || i, 'http://127.0.0.1:1/', 30, 1000, false FROM generate_series(1, $1) i`, o.Jobs)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	_, err = pool.Exec(ctx, `INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at)
SELECT s.id, n, 'http://127.0.0.1:1/', 1000, 3, clock_timestamp()
FROM generate_series(1, $1) n JOIN monitored_service s ON s.name = 'bench-' || n`, o.Jobs)
	if err != nil {
		return 0, 0, err
	}
	insertRate = float64(o.Jobs) / time.Since(start).Seconds()
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE monitoring_job`); err != nil {
		return 0, 0, err
	}

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var running sync.WaitGroup
	var metrics []*monitoring.Metrics
	var scheds []*monitoring.Scheduler
	for i := range o.Clients {
		p, err := newPool(ctx, url, o.PoolConns)
		if err != nil {
			return 0, 0, err
		}
		defer p.Close()
		m := monitoring.NewMetrics(prometheus.NewRegistry())
		metrics = append(metrics, m)
		scheds = append(scheds, monitoring.NewScheduler(monitoring.NewStore(p), noopProber{}, monitoring.SchedulerConfig{
			Instance: monitoring.Instance{Name: fmt.Sprintf("bench-%d", i+1), Addr: "-", Version: "bench"},
			Workers:  o.Workers, Lease: 30 * time.Second, Poll: 250 * time.Millisecond,
		}, m, quiet))
	}
	start = time.Now()
	for _, s := range scheds {
		running.Add(1)
		go func() {
			defer running.Done()
			_ = s.Run(runCtx)
		}()
	}
	for {
		var done float64
		for _, m := range metrics {
			done += testutil.ToFloat64(m.Completions)
		}
		if int(done) >= o.Jobs {
			break
		}
		select {
		case <-ctx.Done():
			return 0, 0, errors.New("interrupted")
		case <-time.After(5 * time.Millisecond):
		}
	}
	workRate = float64(o.Jobs) / time.Since(start).Seconds()
	stop()
	running.Wait()
	var results, dups int
	err = pool.QueryRow(ctx, `SELECT count(*), count(*) - count(DISTINCT (service_id, scheduled_slot)) FROM monitoring_job_result`).Scan(&results, &dups)
	if err != nil {
		return 0, 0, err
	}
	if results != o.Jobs || dups != 0 {
		return 0, 0, fmt.Errorf("%d results for %d jobs, %d duplicates", results, o.Jobs, dups)
	}
	return insertRate, workRate, nil
}
