package monitoring

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// MaintenanceConfig configures the cluster-singleton maintenance tasks.
type MaintenanceConfig struct {
	Instance  string // this replica, as locked_by
	Retention RetentionPolicy
	// How often each replica tries each task (defaults 1m and 5m). Each task
	// keeps its lock for at least 4/5 of its interval, so the cluster runs it
	// about once per interval however many replicas there are.
	RollupEvery    time.Duration
	RetentionEvery time.Duration
}

// Singleton task names, as scheduler_lock.name.
const (
	TaskRollup    = "rollup"
	TaskRetention = "retention"
)

// MaintenanceRunner runs the lifecycle tasks (rollups, retention). Every
// replica runs one; each task runs on one replica at a time under its
// scheduler_lock row (RunSingleton), so any replica can die without the work
// stopping for longer than the task's lock_at_most_for.
type MaintenanceRunner struct {
	store   *Store
	cfg     MaintenanceConfig
	tasks   []SingletonTask
	metrics *maintenanceMetrics
	log     *slog.Logger
}

// NewMaintenanceRunner wires the runner and registers its metrics on reg.
func NewMaintenanceRunner(store *Store, cfg MaintenanceConfig, reg prometheus.Registerer, log *slog.Logger) *MaintenanceRunner {
	cfg.Retention.setDefaults()
	if cfg.RollupEvery <= 0 {
		cfg.RollupEvery = time.Minute
	}
	if cfg.RetentionEvery <= 0 {
		cfg.RetentionEvery = 5 * time.Minute
	}
	m := &MaintenanceRunner{store: store, cfg: cfg, metrics: newMaintenanceMetrics(reg, store), log: log}
	m.tasks = []SingletonTask{
		{
			Name: TaskRollup, Every: cfg.RollupEvery,
			AtLeastFor: cfg.RollupEvery * 4 / 5, AtMostFor: max(10*time.Minute, 2*cfg.RollupEvery),
			Run: m.rollUp,
		},
		{
			Name: TaskRetention, Every: cfg.RetentionEvery,
			AtLeastFor: cfg.RetentionEvery * 4 / 5, AtMostFor: max(15*time.Minute, 2*cfg.RetentionEvery),
			Run: m.prune,
		},
	}
	return m
}

// Run tries each task on its own jittered interval until ctx ends. A run in
// progress is cancelled at shutdown (its statement rolls back; rollups and
// retention both pick up where they stopped) and its lock released.
func (m *MaintenanceRunner) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, t := range m.tasks {
		wg.Go(func() { m.loop(ctx, t) })
	}
	wg.Wait()
	return nil
}

func (m *MaintenanceRunner) loop(ctx context.Context, t SingletonTask) {
	// Replicas that start together spread their first attempts over an interval.
	if !sleep(ctx, rand.N(t.Every)+time.Millisecond) {
		return
	}
	for {
		start := time.Now()
		ran, err := m.store.RunSingleton(ctx, m.cfg.Instance, t)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, ErrLockLost):
			m.metrics.runs.WithLabelValues(t.Name, "lock_lost").Inc()
			m.log.Warn("maintenance task outlived its lock; another replica may have run it too",
				"task", t.Name, "lock_at_most_for", t.AtMostFor, "err", err)
		case err != nil && !ran:
			m.metrics.runs.WithLabelValues(t.Name, "error").Inc()
			m.log.Warn("could not take maintenance lock", "task", t.Name, "err", err)
		case err != nil:
			m.metrics.runs.WithLabelValues(t.Name, "error").Inc()
			m.metrics.duration.WithLabelValues(t.Name).Observe(time.Since(start).Seconds())
			m.log.Error("maintenance task failed; it runs again next interval", "task", t.Name, "err", err)
		case ran:
			m.metrics.runs.WithLabelValues(t.Name, "ok").Inc()
			m.metrics.duration.WithLabelValues(t.Name).Observe(time.Since(start).Seconds())
		default:
			m.metrics.runs.WithLabelValues(t.Name, "held_elsewhere").Inc()
		}
		if !sleep(ctx, jitter(t.Every)) {
			return
		}
	}
}

func (m *MaintenanceRunner) rollUp(ctx context.Context) error {
	start := time.Now()
	r, err := m.store.RollUp(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// A long catch-up (first run on old data) ran out of its lock's time;
		// the watermark keeps what was done and the next run continues.
		m.log.Info("rollups paused at the task's time limit; the next run continues", "hours_until", SlotTime(r.HoursUntil))
		err = nil
	}
	m.metrics.rollupRows.WithLabelValues("hourly").Add(float64(r.HourlyRows))
	m.metrics.rollupRows.WithLabelValues("daily").Add(float64(r.DailyRows))
	if r.HoursUntil > r.HoursFrom || r.DaysUntil > r.DaysFrom {
		m.log.Info("rollups updated",
			"hours_from", SlotTime(r.HoursFrom), "hours_until", SlotTime(r.HoursUntil), "hourly_rows", r.HourlyRows,
			"days_from", SlotTime(r.DaysFrom), "days_until", SlotTime(r.DaysUntil), "daily_rows", r.DailyRows,
			"took", time.Since(start).Round(time.Millisecond))
	}
	return err
}

func (m *MaintenanceRunner) prune(ctx context.Context) error {
	start := time.Now()
	r, err := m.store.PruneExpired(ctx, m.cfg.Retention, func(b RetentionBatch) {
		m.metrics.batchDuration.Observe(b.Took.Seconds())
		m.metrics.deleted.WithLabelValues(b.Kind).Add(float64(b.Rows))
		if b.Results > 0 {
			m.metrics.deleted.WithLabelValues(PrunedResults).Add(float64(b.Results))
		}
	})
	// Running out of the lock's time is not a failure: the next pass continues.
	outOfTime := err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
	if outOfTime {
		err = nil
	}
	if r.Deleted() > 0 || outOfTime {
		m.log.Info("retention pass",
			"raw_before", cutoffTime(r.RawCutoff), "failed_before", r.FailedCutoff, "rollups_before", cutoffTime(r.RollupCutoff),
			"results", r.Results, "jobs", r.Jobs, "failed_jobs", r.FailedJobs,
			"hourly_rollups", r.HourlyRollups, "daily_rollups", r.DailyRollups,
			"batches", r.Batches, "took", time.Since(start).Round(time.Millisecond), "finished", !outOfTime && err == nil)
	}
	return err // logged once, by the runner
}

func cutoffTime(epoch int64) any {
	if epoch == 0 {
		return "none"
	}
	return SlotTime(epoch)
}

// maintenanceMetrics are counted by whichever replica ran a task; the
// watermarks are read from the database at scrape time, so every replica
// reports the same values.
type maintenanceMetrics struct {
	runs          *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	deleted       *prometheus.CounterVec
	batchDuration prometheus.Histogram
	rollupRows    *prometheus.CounterVec
}

func newMaintenanceMetrics(reg prometheus.Registerer, store *Store) *maintenanceMetrics {
	m := &maintenanceMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_maintenance_runs_total",
			Help: "Attempts to run a singleton maintenance task on this replica, by outcome (ok, error, held_elsewhere, lock_lost).",
		}, []string{"task", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_maintenance_run_duration_seconds",
			Help:    "How long a maintenance task ran on this replica.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300},
		}, []string{"task"}),
		deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_retention_deleted_rows_total",
			Help: "Rows retention deleted on this replica, by kind (results, jobs, failed_jobs, hourly_rollups, daily_rollups).",
		}, []string{"kind"}),
		batchDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_retention_batch_duration_seconds",
			Help:    "How long one retention delete statement took (its transaction is as long).",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 5},
		}),
		rollupRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_rollup_rows_written_total",
			Help: "Rollup rows this replica inserted or changed, by period (hourly, daily).",
		}, []string{"period"}),
	}
	for _, task := range []string{TaskRollup, TaskRetention} {
		for _, outcome := range []string{"ok", "error", "held_elsewhere", "lock_lost"} {
			m.runs.WithLabelValues(task, outcome)
		}
	}
	for _, kind := range []string{PrunedResults, PrunedJobs, PrunedFailedJobs, PrunedHourlyRollups, PrunedDailyRollups} {
		m.deleted.WithLabelValues(kind)
	}
	reg.MustRegister(m.runs, m.duration, m.deleted, m.batchDuration, m.rollupRows, &watermarkCollector{store: store,
		desc: prometheus.NewDesc("vigil_lifecycle_watermark_timestamp_seconds",
			"How far the lifecycle has got (epoch seconds): rollup_hourly and rollup_daily are rolled up before it, raw_deleted_before is where raw results may be gone. A rollup watermark more than a few hours behind time() means rollups (and so retention) are stuck.",
			[]string{"name"}, nil),
	})
	return m
}

// watermarkCollector reports lifecycle_watermark at scrape time.
type watermarkCollector struct {
	store *Store
	desc  *prometheus.Desc
}

func (c *watermarkCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *watermarkCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	w, err := readWatermarks(ctx, c.store.pool)
	if err != nil {
		return
	}
	for name, v := range map[string]int64{
		watermarkHourly: w.HourlyUntil, watermarkDaily: w.DailyUntil, watermarkRawDeleted: w.RawDeletedBefore,
	} {
		if v > 0 {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v), name)
		}
	}
}
