package monitoring

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are this replica's counters. The registry is passed in so tests
// can read it and two in-process replicas do not collide.
type Metrics struct {
	Claims           prometheus.Counter
	Completions      prometheus.Counter
	StaleCompletions prometheus.Counter
	Retries          prometheus.Counter
	Failures         prometheus.Counter
	Releases         prometheus.Counter
	Probes           *prometheus.CounterVec
	ProbeDuration    prometheus.Histogram
	AlertsWritten    *prometheus.CounterVec
	JobsEnqueued     prometheus.Counter
	DatabaseErrors   prometheus.Counter
}

// NewMetrics creates and registers the scheduler's metrics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Claims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_job_claims_total", Help: "Jobs claimed by this replica (including reclaims of expired leases).",
		}),
		Completions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_job_completions_total", Help: "Jobs this replica completed with a stored result.",
		}),
		StaleCompletions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_stale_completions_total", Help: "Completions rejected because this replica no longer held the job (lease expired or taken over).",
		}),
		Retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_job_retries_total", Help: "Jobs handed back for a retry after an error of Vigil itself.",
		}),
		Failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_job_failures_total", Help: "Jobs this replica moved to FAILED (attempts exhausted).",
		}),
		Releases: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_job_releases_total", Help: "Jobs released unfinished at shutdown for another replica to take.",
		}),
		Probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_probes_total", Help: "Probes run by this replica, by outcome.",
		}, []string{"status"}),
		ProbeDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vigil_probe_duration_seconds", Help: "Time a probe took, from request to body read.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		AlertsWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_alert_events_written_total", Help: "Status transitions written to the alert outbox by this replica.",
		}, []string{"kind"}),
		JobsEnqueued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_jobs_enqueued_total", Help: "Jobs created by this replica's producer (other replicas' inserts of the same slot are no-ops).",
		}),
		DatabaseErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vigil_database_errors_total", Help: "Scheduler database calls that failed.",
		}),
	}
	m.Probes.WithLabelValues("UP")
	m.Probes.WithLabelValues("DOWN")
	reg.MustRegister(m.Claims, m.Completions, m.StaleCompletions, m.Retries, m.Failures, m.Releases,
		m.Probes, m.ProbeDuration, m.AlertsWritten, m.JobsEnqueued, m.DatabaseErrors)
	return m
}

// QueueCollector reports the shared queue's state, read from the database at
// scrape time with a short timeout; on a database error it reports nothing
// rather than stale values.
type QueueCollector struct {
	store                           *Store
	ready, running, failed, expired *prometheus.Desc
	oldest                          *prometheus.Desc
}

// NewQueueCollector builds the collector; register it on the /metrics registry.
func NewQueueCollector(store *Store) *QueueCollector {
	return &QueueCollector{
		store:   store,
		ready:   prometheus.NewDesc("vigil_jobs_ready", "Jobs in state READY (due or waiting for backoff).", nil, nil),
		running: prometheus.NewDesc("vigil_jobs_running", "Jobs in state RUNNING.", nil, nil),
		failed:  prometheus.NewDesc("vigil_jobs_failed", "Jobs in state FAILED.", nil, nil),
		expired: prometheus.NewDesc("vigil_expired_running_jobs", "RUNNING jobs whose lease has expired (owner dead or stalled).", nil, nil),
		oldest:  prometheus.NewDesc("vigil_oldest_ready_job_age_seconds", "Age of the oldest due READY job.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.ready
	ch <- c.running
	ch <- c.failed
	ch <- c.expired
	ch <- c.oldest
}

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	h, err := c.store.QueueHealth(ctx)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, float64(h.Ready))
	ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(h.Running))
	ch <- prometheus.MustNewConstMetric(c.failed, prometheus.GaugeValue, float64(h.Failed))
	ch <- prometheus.MustNewConstMetric(c.expired, prometheus.GaugeValue, float64(h.ExpiredRunning))
	ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, h.OldestReadyAge.Seconds())
}
