package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// segment is what one stretch of a long run looked like, from the database
// and /proc. A soak compares the first segment with the last: a queue table
// that slows down as it churns shows up as growing lag and dead tuples.
type segment struct {
	from, to       time.Time // DB clock
	checks         int64
	lagP50, lagP99 float64 // due → result, seconds
	pickupP99      float64 // due → claimed, seconds
	live, dead     int64   // monitoring_job tuples at the segment's end
	autovacuums    int64   // autovacuum runs on monitoring_job so far
	jobBytes       int64
	rss            []int64 // VmRSS per replica at the segment's end
	loadAvg        string
}

func (h *harness) measureSegment(ctx context.Context, from time.Time) (segment, error) {
	s := segment{from: from}
	err := h.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&s.to)
	if err != nil {
		return s, err
	}
	err = h.pool.QueryRow(ctx, `
SELECT count(*),
       coalesce(percentile_cont(0.50) WITHIN GROUP (ORDER BY extract(epoch FROM r.observed_at - j.available_at)), 0),
       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM r.observed_at - j.available_at)), 0),
       coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM j.claimed_at - j.available_at)), 0)
FROM monitoring_job_result r JOIN monitoring_job j ON j.id = r.job_id
WHERE r.observed_at > $1 AND r.observed_at <= $2`, s.from, s.to).Scan(&s.checks, &s.lagP50, &s.lagP99, &s.pickupP99)
	if err != nil {
		return s, fmt.Errorf("segment lag: %w", err)
	}
	err = h.pool.QueryRow(ctx, `
SELECT n_live_tup, n_dead_tup, autovacuum_count, pg_total_relation_size('monitoring_job')
FROM pg_stat_user_tables WHERE relname = 'monitoring_job'`).Scan(&s.live, &s.dead, &s.autovacuums, &s.jobBytes)
	if err != nil {
		return s, fmt.Errorf("segment tuples: %w", err)
	}
	for _, r := range h.reps {
		s.rss = append(s.rss, currentRSS(r.cmd.Process.Pid))
	}
	s.loadAvg = loadAvg()
	return s, nil
}

// rssMiB is the replicas' RSS in MiB, slash-separated.
func (s segment) rssMiB() string {
	var rss []string
	for _, v := range s.rss {
		rss = append(rss, fmt.Sprintf("%.0f", float64(v)/(1<<20)))
	}
	return strings.Join(rss, "/")
}

func (s segment) line() string {
	return fmt.Sprintf("%6.0f checks/s  lag p50 %.3fs p99 %.3fs  due→claimed p99 %.3fs  job live/dead %d/%d  autovacuums %d  job table %.0f MiB  RSS MiB %s  load %s",
		float64(s.checks)/s.to.Sub(s.from).Seconds(), s.lagP50, s.lagP99, s.pickupP99, s.live, s.dead, s.autovacuums,
		float64(s.jobBytes)/(1<<20), s.rssMiB(), s.loadAvg)
}

// printSoak prints every segment and how the last compares with the first.
func printSoak(w io.Writer, segs []segment) {
	if len(segs) < 2 {
		return
	}
	fmt.Fprintf(w, "\nsoak: %d segments\n", len(segs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  segment\tchecks/s\tlag p50\tlag p99\tdue→claimed p99\tjob live\tjob dead\tautovacuums\tjob MiB\tRSS MiB\tload\t")
	for i, s := range segs {
		fmt.Fprintf(tw, "  %d\t%.0f\t%.3fs\t%.3fs\t%.3fs\t%d\t%d\t%d\t%.0f\t%s\t%s\t\n", i+1,
			float64(s.checks)/s.to.Sub(s.from).Seconds(), s.lagP50, s.lagP99, s.pickupP99, s.live, s.dead,
			s.autovacuums, float64(s.jobBytes)/(1<<20), s.rssMiB(), s.loadAvg)
	}
	tw.Flush()
	first, last := segs[0], segs[len(segs)-1]
	change := func(a, b float64) string {
		if a == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%+.0f%%", (b-a)/a*100)
	}
	fmt.Fprintf(w, "  last vs first segment: lag p99 %s, due→claimed p99 %s, dead tuples %d → %d\n",
		change(first.lagP99, last.lagP99), change(first.pickupP99, last.pickupP99), first.dead, last.dead)
}

// segmentTimer says when the next segment ends; a zero length never does.
type segmentTimer struct {
	length time.Duration
	next   time.Time
}

func (t *segmentTimer) due(now time.Time) bool {
	if t.length <= 0 || now.Before(t.next) {
		return false
	}
	t.next = t.next.Add(t.length)
	return true
}
