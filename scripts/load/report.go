package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// snapshot is the counters read at each end of the measured window.
type snapshot struct {
	dbTime      time.Time // DB clock
	commits     int64     // pg_stat_database.xact_commit of the vigil database
	rollbacks   int64
	replicaCPU  []float64 // per replica, seconds
	pgCPU       float64   // postmaster and all its children, seconds
	targetCPU   float64
	jobBytes    int64 // monitoring_job with its indexes and TOAST
	resultBytes int64
	otherBytes  int64 // service_status, alert_outbox
}

func (h *harness) snapshot(ctx context.Context) (snapshot, error) {
	var s snapshot
	// Stats reach pg_stat_database when a backend goes idle; this forces our own.
	err := h.pool.QueryRow(ctx, `SELECT clock_timestamp(), xact_commit, xact_rollback,
    pg_total_relation_size('monitoring_job'), pg_total_relation_size('monitoring_job_result'),
    pg_total_relation_size('service_status') + pg_total_relation_size('alert_outbox')
FROM pg_stat_database WHERE datname = current_database()`).Scan(
		&s.dbTime, &s.commits, &s.rollbacks, &s.jobBytes, &s.resultBytes, &s.otherBytes)
	if err != nil {
		return s, fmt.Errorf("snapshot: %w", err)
	}
	for _, r := range h.reps {
		s.replicaCPU = append(s.replicaCPU, cpuSeconds(r.cmd.Process.Pid))
		r.peakRSS = max(r.peakRSS, peakRSS(r.cmd.Process.Pid))
	}
	pm, err := postmasterPID(h.pgDir + "/pgdata")
	if err != nil {
		return s, fmt.Errorf("postmaster pid: %w", err)
	}
	s.pgCPU = treeCPUSeconds(pm)
	s.targetCPU = cpuSeconds(h.target.cmd.Process.Pid)
	return s, nil
}

type report struct {
	o                                    options
	window                               time.Duration
	checks                               int64 // results observed in the window
	slots, expected, missed              int64 // whole slots in the window, results they needed, results missing
	lagP50, lagP95, lagP99, lagMax       float64
	retried                              int64
	duplicates                           int64
	failed                               int64
	replicaCPU, pgCPU, targetCPU         float64
	commits                              int64
	rss                                  []int64
	jobGrowth, resultGrowth, otherGrowth int64
	deadTuples, liveTuples               int64
	loadStart, loadEnd                   string
	peakRate                             float64
	soak                                 []segment
}

func (h *harness) report(ctx context.Context, a, b snapshot) (*report, error) {
	r := &report{o: h.o, window: b.dbTime.Sub(a.dbTime), loadEnd: loadAvg(), peakRate: h.peakRate, soak: h.soak}
	for _, rep := range h.reps {
		r.rss = append(r.rss, rep.peakRSS)
	}
	for i := range b.replicaCPU {
		r.replicaCPU += b.replicaCPU[i] - a.replicaCPU[i]
	}
	r.pgCPU = b.pgCPU - a.pgCPU
	r.targetCPU = b.targetCPU - a.targetCPU
	r.commits = b.commits - a.commits
	r.jobGrowth = b.jobBytes - a.jobBytes
	r.resultGrowth = b.resultBytes - a.resultBytes
	r.otherGrowth = b.otherBytes - a.otherBytes

	q := func(sql string, dst ...any) error {
		if err := h.pool.QueryRow(ctx, sql, a.dbTime, b.dbTime, int64(h.o.Interval.Seconds())).Scan(dst...); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		return nil
	}
	if err := q(`SELECT count(*) FROM monitoring_job_result
WHERE observed_at > $1 AND observed_at <= $2 AND $3 > 0`, &r.checks); err != nil {
		return nil, err
	}
	// Whole slots: started at or after the window opened and ended before it
	// closed. Each enabled service needs one result per slot, observed before
	// the slot's end.
	const wholeSlots = `
WITH bounds AS (
    SELECT (ceil(extract(epoch FROM $1::timestamptz) / $3) * $3)::bigint AS first,
           (floor(extract(epoch FROM $2::timestamptz) / $3) * $3 - $3)::bigint AS last
), slots AS (SELECT generate_series(first, last, $3) AS s FROM bounds)`
	if err := q(wholeSlots+`
SELECT (SELECT count(*) FROM slots),
       count(*),
       count(*) FILTER (WHERE NOT EXISTS (
           SELECT 1 FROM monitoring_job_result r
           WHERE r.service_id = m.id AND r.scheduled_slot = slots.s AND r.observed_at < to_timestamp(slots.s + $3)))
FROM monitored_service m CROSS JOIN slots
WHERE m.enabled AND m.retired_at IS NULL`, &r.slots, &r.expected, &r.missed); err != nil {
		return nil, err
	}
	// Lag from the job's due time (available_at; a retried job's is its last
	// backoff) to the result, over the whole slots' results.
	if err := q(wholeSlots+`
SELECT coalesce(percentile_cont(0.50) WITHIN GROUP (ORDER BY lag), 0),
       coalesce(percentile_cont(0.95) WITHIN GROUP (ORDER BY lag), 0),
       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY lag), 0),
       coalesce(max(lag), 0),
       count(*) FILTER (WHERE attempt > 1)
FROM (
    SELECT extract(epoch FROM r.observed_at - j.available_at)::float8 AS lag, r.attempt
    FROM monitoring_job_result r JOIN monitoring_job j ON j.id = r.job_id
    WHERE r.scheduled_slot IN (SELECT s FROM slots)
) l`, &r.lagP50, &r.lagP95, &r.lagP99, &r.lagMax, &r.retried); err != nil {
		return nil, err
	}
	if err := q(`SELECT
    (SELECT count(*) FROM (SELECT 1 FROM monitoring_job_result GROUP BY service_id, scheduled_slot HAVING count(*) > 1) d),
    (SELECT count(*) FROM monitoring_job WHERE state = 'FAILED'),
    (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'monitoring_job'),
    (SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'monitoring_job')
WHERE $1::timestamptz < $2 AND $3 > 0`, &r.duplicates, &r.failed, &r.deadTuples, &r.liveTuples); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *report) print(w io.Writer) {
	per1k := func(v float64) string {
		if r.checks == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", v/float64(r.checks)*1000)
	}
	perK := func(v int64) string {
		if r.checks == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f KiB", float64(v)/1024/float64(r.checks)*1000)
	}
	var rss []string
	for _, v := range r.rss {
		rss = append(rss, fmt.Sprintf("%.0f MiB", float64(v)/(1<<20)))
	}
	fmt.Fprintf(w, "\nload: %d services at %s, %d replicas x %d workers, spread %s, window %.1fs, load average at end %s\n",
		r.o.Services, r.o.Interval, r.o.Replicas, r.o.Workers, r.o.Spread, r.window.Seconds(), r.loadEnd)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	row("checks/s (results observed in the window)", fmt.Sprintf("%.1f  (%d results; %.1f expected)",
		float64(r.checks)/r.window.Seconds(), r.checks, float64(r.o.Services)/r.o.Interval.Seconds()))
	row("peak checks/s over 10 s (draining a slot)", fmt.Sprintf("%.0f", r.peakRate))
	row("lag due→result p50 / p95 / p99 / max", fmt.Sprintf("%.3fs / %.3fs / %.3fs / %.3fs", r.lagP50, r.lagP95, r.lagP99, r.lagMax))
	row("whole slots measured", fmt.Sprintf("%d  (%d service-slots)", r.slots, r.expected))
	row("slots without a result within their interval", fmt.Sprint(r.missed))
	row("duplicate results (service, slot)", fmt.Sprint(r.duplicates))
	row("retried / FAILED jobs", fmt.Sprintf("%d / %d", r.retried, r.failed))
	row("CPU-s per 1,000 checks: replicas", per1k(r.replicaCPU))
	row("CPU-s per 1,000 checks: PostgreSQL", per1k(r.pgCPU))
	row("CPU-s per 1,000 checks: replicas + PostgreSQL", per1k(r.replicaCPU+r.pgCPU))
	row("CPU-s per 1,000 checks: target", per1k(r.targetCPU))
	if r.checks > 0 {
		row("commits per check", fmt.Sprintf("%.2f", float64(r.commits)/float64(r.checks)))
	}
	row("peak RSS per replica (VmHWM)", strings.Join(rss, ", "))
	row("growth per 1,000 checks: monitoring_job", perK(r.jobGrowth))
	row("growth per 1,000 checks: monitoring_job_result", perK(r.resultGrowth))
	row("growth per 1,000 checks: status + outbox", perK(r.otherGrowth))
	row("monitoring_job live / dead tuples at end", fmt.Sprintf("%d / %d", r.liveTuples, r.deadTuples))
	tw.Flush()
}
