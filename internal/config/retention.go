package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Retention defaults and limits.
const (
	DefaultRetentionRaw        = 7 * retentionDay
	DefaultRetentionRollups    = 400 * retentionDay
	DefaultRetentionFailedJobs = 30 * retentionDay
	DefaultRetentionBatchSize  = 5000

	retentionDay          = 24 * time.Hour
	minRetentionRaw       = time.Hour
	minRetentionBatchSize = 100
	maxRetentionBatchSize = 100000
)

// Retention says how long history is kept. The durations accept a day suffix on top of Go's
// units: 7d, 400d, 1d12h, as well as 168h.
type Retention struct {
	Raw        time.Duration // raw results and finished jobs; default 7d, at least 1h
	Rollups    time.Duration // hourly and daily rollups; default 400d, at least Raw
	FailedJobs time.Duration // FAILED jobs, kept for inspection; default 30d, at least Raw
	BatchSize  int           // rows per delete statement; default 5000, 100..100000
}

// DefaultRetention is the retention of a file without a retention: section.
func DefaultRetention() Retention {
	return Retention{
		Raw:        DefaultRetentionRaw,
		Rollups:    DefaultRetentionRollups,
		FailedJobs: DefaultRetentionFailedJobs,
		BatchSize:  DefaultRetentionBatchSize,
	}
}

var retentionFields = []string{"raw", "rollups", "failed_jobs", "batch_size"}

// retention reads the retention: section into cfg.Retention.
func (d *decoder) retention(root *mappingFields, cfg *Config) {
	rf := d.section(root, "retention", "write it as retention: {raw: 7d, rollups: 400d, failed_jobs: 30d}", retentionFields)
	if rf == nil {
		return
	}
	sc := scope{path: "retention"}
	r := &cfg.Retention
	d.days(rf, sc, "raw", &r.Raw)
	d.days(rf, sc, "rollups", &r.Rollups)
	d.days(rf, sc, "failed_jobs", &r.FailedJobs)
	d.integer(rf, sc, "batch_size", &r.BatchSize)
}

// days reads a duration that may count whole days.
func (d *decoder) days(f *mappingFields, sc scope, key string, dst *time.Duration) {
	n, ok := d.value(f, sc, key, key+": 7d")
	if !ok {
		return
	}
	v, err := ParseDays(n.Value)
	if err != nil {
		fix := "write a number of days such as 7d, or a duration such as 168h or 1d12h"
		if plainNumber.MatchString(n.Value) {
			fix = fmt.Sprintf("add a unit, e.g. write %sd for %s days", n.Value, n.Value)
		}
		d.fail(sc, key, n, fmt.Sprintf("%s %s is not a duration", key, quote(n.Value)), fix)
		return
	}
	*dst = v
}

var leadingDays = regexp.MustCompile(`^([0-9]+)d`)

// ParseDays parses a Go duration that may start with a whole number of days: "7d", "1d12h",
// "400d" and "168h" are all accepted. A day is 24 hours.
func ParseDays(s string) (time.Duration, error) {
	m := leadingDays.FindStringSubmatch(s)
	if m == nil {
		return time.ParseDuration(s)
	}
	days, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || days > int64(maxDuration/retentionDay) {
		return 0, fmt.Errorf("duration %q is too long", s)
	}
	total := time.Duration(days) * retentionDay
	if rest := strings.TrimPrefix(s, m[0]); rest != "" {
		if rest[0] == '-' || rest[0] == '+' {
			return 0, errors.New("a sign may only lead the whole duration")
		}
		extra, err := time.ParseDuration(rest)
		if err != nil {
			return 0, err
		}
		if extra > maxDuration-total {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		total += extra
	}
	return total, nil
}

const maxDuration = time.Duration(1<<63 - 1)

func (v *validator) retention(r Retention) {
	sc := scope{path: "retention"}
	if r.Raw < minRetentionRaw {
		v.report(sc, "raw", "raw "+formatDays(r.Raw)+" is shorter than 1h",
			"set retention.raw to 1h or more (default 7d); results are rolled up by the hour before they are deleted")
	}
	if r.Rollups < r.Raw {
		v.report(sc, "rollups", fmt.Sprintf("rollups %s is shorter than raw %s", formatDays(r.Rollups), formatDays(r.Raw)),
			fmt.Sprintf("set retention.rollups to %s or more (default 400d): rollups are the history kept after raw results go", formatDays(r.Raw)))
	}
	if r.FailedJobs < r.Raw {
		v.report(sc, "failed_jobs", fmt.Sprintf("failed_jobs %s is shorter than raw %s", formatDays(r.FailedJobs), formatDays(r.Raw)),
			fmt.Sprintf("set retention.failed_jobs to %s or more (default 30d): FAILED jobs are kept at least as long as results, for inspection", formatDays(r.Raw)))
	}
	if r.BatchSize < minRetentionBatchSize || r.BatchSize > maxRetentionBatchSize {
		v.report(sc, "batch_size", fmt.Sprintf("batch_size %d is outside %d..%d", r.BatchSize, minRetentionBatchSize, maxRetentionBatchSize),
			fmt.Sprintf("set retention.batch_size between %d and %d (default %d); larger batches hold their locks longer",
				minRetentionBatchSize, maxRetentionBatchSize, DefaultRetentionBatchSize))
	}
}

// formatDays prints whole days as 7d and anything else as formatDuration does.
func formatDays(d time.Duration) string {
	if d > 0 && d%retentionDay == 0 {
		return fmt.Sprintf("%dd", d/retentionDay)
	}
	if d > retentionDay {
		return fmt.Sprintf("%dd%s", d/retentionDay, formatDuration(d%retentionDay))
	}
	return formatDuration(d)
}
