package monitoring

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Rollups condense raw results into one row per service and hour
// (service_rollup_hourly) and per service and UTC day (service_rollup_daily):
// checks, UP count and latency min/avg/p50/p95/max. They are kept far longer
// than raw results, so history pages read them where raw results are gone.
//
// A period is rolled up only once it is final: it ended the longest service
// interval plus RollupGrace ago (the producer creates the current slot, which
// may have started up to an interval ago), and no job of a slot in it is still
// READY or RUNNING (a backlog, a retry, a replica that comes back after an
// outage can all still complete an old slot). Nothing is added to a final
// period after that.
// A watermark per table (lifecycle_watermark) records how far rollups are final;
// each run continues from it. Computing a period is idempotent: the row is
// recomputed from the period's raw results and upserted, and an unchanged row
// is not rewritten.

const (
	hourSeconds = 3600
	daySeconds  = 86400

	// RollupGrace is how long after its end an hour is first rolled up, so that
	// a job enqueued in the hour's last instant has committed by then.
	RollupGrace = 2 * time.Minute

	// Rollups are computed per batch of services and a few periods at a time, so
	// each statement stays well inside statement_timeout at 10,000 services.
	rollupServiceBatch = 200
	rollupHourWindow   = 6 // hours per statement
)

// Watermark names in lifecycle_watermark.
const (
	watermarkHourly     = "rollup_hourly"
	watermarkDaily      = "rollup_daily"
	watermarkRawDeleted = "raw_deleted_before"
)

// Watermarks say how far the lifecycle has got, in epoch seconds; 0 when not
// yet recorded.
type Watermarks struct {
	HourlyUntil      int64 // every hour before it is rolled up and final
	DailyUntil       int64 // every UTC day before it is rolled up and final
	RawDeletedBefore int64 // raw results of slots before it may have been deleted
}

// Watermarks reads the lifecycle watermarks.
func (s *Store) Watermarks(ctx context.Context) (Watermarks, error) {
	var w Watermarks
	err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		var err error
		w, err = readWatermarks(ctx, tx)
		return err
	})
	return w, err
}

func readWatermarks(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (Watermarks, error) {
	const sql = `
SELECT coalesce(max(until_epoch) FILTER (WHERE name = 'rollup_hourly'), 0),
       coalesce(max(until_epoch) FILTER (WHERE name = 'rollup_daily'), 0),
       coalesce(max(until_epoch) FILTER (WHERE name = 'raw_deleted_before'), 0)
FROM lifecycle_watermark`
	var w Watermarks
	if err := q.QueryRow(ctx, sql).Scan(&w.HourlyUntil, &w.DailyUntil, &w.RawDeletedBefore); err != nil {
		return Watermarks{}, fmt.Errorf("read lifecycle watermarks: %w", err)
	}
	return w, nil
}

// advanceWatermark moves a watermark forward, never back.
func (s *Store) advanceWatermark(ctx context.Context, name string, until int64) error {
	const q = `
INSERT INTO lifecycle_watermark AS w (name, until_epoch) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET until_epoch = EXCLUDED.until_epoch, updated_at = clock_timestamp()
WHERE w.until_epoch < EXCLUDED.until_epoch`
	if _, err := s.pool.Exec(ctx, q, name, until); err != nil {
		return fmt.Errorf("advance watermark %s to %d: %w", name, until, err)
	}
	return nil
}

// RollupReport says what one RollUp run did. Ranges are epoch seconds,
// [from, until); equal ends mean nothing was due.
type RollupReport struct {
	HoursFrom, HoursUntil int64
	DaysFrom, DaysUntil   int64
	HourlyRows, DailyRows int64 // rows inserted or changed
}

// RollUp brings the rollups up to date: every final hour after the hourly
// watermark, then every UTC day whose hours are all final. Stopped by ctx, it
// keeps what it finished; the next run continues from the watermarks.
func (s *Store) RollUp(ctx context.Context) (RollupReport, error) {
	var r RollupReport
	w, err := s.Watermarks(ctx)
	if err != nil {
		return r, err
	}
	limit, oldest, err := s.rollupLimit(ctx)
	if err != nil {
		return r, err
	}

	from := w.HourlyUntil
	if from == 0 {
		// First run: start at the oldest job's hour (or at the limit when there
		// is none), and record both starting points before any work, so a run
		// stopped half-way leaves watermarks that the next one continues from.
		from = limit
		if oldest != nil {
			from = min(floorTo(*oldest, hourSeconds), limit)
		}
		if err := s.advanceWatermark(ctx, watermarkHourly, from); err != nil {
			return r, err
		}
		if err := s.advanceWatermark(ctx, watermarkDaily, floorTo(from, daySeconds)); err != nil {
			return r, err
		}
		w.DailyUntil = floorTo(from, daySeconds)
	}
	r.HoursFrom, r.HoursUntil = from, from
	for start := from; start < limit; start += rollupHourWindow * hourSeconds {
		end := min(start+rollupHourWindow*hourSeconds, limit)
		n, err := s.RollUpHours(ctx, start, end)
		r.HourlyRows += n
		if err != nil {
			return r, err
		}
		if err := s.advanceWatermark(ctx, watermarkHourly, end); err != nil {
			return r, err
		}
		r.HoursUntil = end
	}

	dayFrom := w.DailyUntil
	if dayFrom == 0 { // only if someone deleted the row
		dayFrom = floorTo(from, daySeconds)
	}
	dayLimit := floorTo(r.HoursUntil, daySeconds)
	r.DaysFrom, r.DaysUntil = dayFrom, dayFrom
	for day := dayFrom; day < dayLimit; day += daySeconds {
		n, err := s.RollUpDays(ctx, day, day+daySeconds)
		r.DailyRows += n
		if err != nil {
			return r, err
		}
		if err := s.advanceWatermark(ctx, watermarkDaily, day+daySeconds); err != nil {
			return r, err
		}
		r.DaysUntil = day + daySeconds
	}
	return r, nil
}

// rollupLimit returns the end of the last final hour on the DB clock, and the
// oldest job's slot (for a first run).
//
// The producer creates the current slot, floor(now / interval) * interval, so
// a job created from now on has a slot after now - interval: a service added
// or enabled half-way through a 2-hour slot gets a job for a slot that started
// over an hour ago. Hours are therefore final only once they ended the longest
// interval (plus RollupGrace) ago, and none of their jobs is still open.
//
// The open-slot minimums read the partial indexes of READY and RUNNING jobs;
// "+ 0" keeps the planner from walking the slot index from its old end through
// millions of DONE rows instead.
func (s *Store) rollupLimit(ctx context.Context) (limit int64, oldest *int64, err error) {
	const q = `
SELECT floor(extract(epoch FROM clock_timestamp() - $1 * interval '1 microsecond'))::bigint
           - (SELECT coalesce(max(interval_seconds), 0) FROM monitored_service),
       (SELECT min(slot) FROM (
            SELECT min(scheduled_slot + 0) AS slot FROM monitoring_job WHERE state = 'READY'
            UNION ALL
            SELECT min(scheduled_slot + 0) FROM monitoring_job WHERE state = 'RUNNING') open),
       (SELECT min(scheduled_slot) FROM monitoring_job)`
	var closed int64
	var open *int64
	if err := s.pool.QueryRow(ctx, q, RollupGrace.Microseconds()).Scan(&closed, &open, &oldest); err != nil {
		return 0, nil, fmt.Errorf("find final hours: %w", err)
	}
	limit = floorTo(closed, hourSeconds)
	if open != nil {
		limit = min(limit, floorTo(*open, hourSeconds))
	}
	return limit, oldest, nil
}

// RollUpHours recomputes the hourly rollups of the hours in [from, until)
// (epoch seconds, whole hours) from raw results and returns how many rows it
// inserted or changed. Hours before raw_deleted_before are skipped: their raw
// results may be gone, and recomputing them would overwrite a complete row
// with a partial one.
func (s *Store) RollUpHours(ctx context.Context, from, until int64) (int64, error) {
	return s.rollUpPeriods(ctx, rollupHourly, from, until)
}

// RollUpDays is RollUpHours for UTC days. A day is computed from raw results,
// not from its hours, because percentiles do not combine.
func (s *Store) RollUpDays(ctx context.Context, from, until int64) (int64, error) {
	return s.rollUpPeriods(ctx, rollupDaily, from, until)
}

type rollupPeriod struct {
	name    string
	seconds int64
	upsert  string
}

var (
	rollupHourly = rollupPeriod{name: "hourly", seconds: hourSeconds, upsert: rollupUpsert("service_rollup_hourly", "hour_start", hourSeconds)}
	rollupDaily  = rollupPeriod{name: "daily", seconds: daySeconds, upsert: rollupUpsert("service_rollup_daily", "day_start", daySeconds)}
)

// rollupUpsert builds the statement that recomputes a batch of services over a
// range of periods. The average goes through numeric so that it does not
// depend on the order rows are summed in: a re-run gives the identical value,
// and the WHERE skips rewriting an unchanged row. Periods that start before
// raw_deleted_before are left alone even when a concurrent retention pass
// advanced it after rollUpPeriods looked.
func rollupUpsert(table, column string, seconds int64) string {
	return fmt.Sprintf(`
INSERT INTO %[1]s AS t (service_id, %[2]s, checks, up_count,
    latency_min_ms, latency_avg_ms, latency_p50_ms, latency_p95_ms, latency_max_ms)
SELECT service_id, scheduled_slot - scheduled_slot %% %[3]d, count(*), count(*) FILTER (WHERE status = 'UP'),
       min(latency_ms), (sum(latency_ms::numeric) / count(*))::float8,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms),
       percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms),
       max(latency_ms)
FROM monitoring_job_result
WHERE service_id = ANY($1) AND scheduled_slot >= $2 AND scheduled_slot < $3
  -- Read in this statement's snapshot: retention advances the boundary before it
  -- deletes, so a period either is past it or has all its raw results here.
  AND scheduled_slot - scheduled_slot %% %[3]d >=
      (SELECT coalesce(max(until_epoch), 0) FROM lifecycle_watermark WHERE name = 'raw_deleted_before')
GROUP BY 1, 2
ON CONFLICT (service_id, %[2]s) DO UPDATE
SET checks = EXCLUDED.checks, up_count = EXCLUDED.up_count,
    latency_min_ms = EXCLUDED.latency_min_ms, latency_avg_ms = EXCLUDED.latency_avg_ms,
    latency_p50_ms = EXCLUDED.latency_p50_ms, latency_p95_ms = EXCLUDED.latency_p95_ms,
    latency_max_ms = EXCLUDED.latency_max_ms, computed_at = clock_timestamp()
WHERE (t.checks, t.up_count, t.latency_min_ms, t.latency_avg_ms, t.latency_p50_ms, t.latency_p95_ms, t.latency_max_ms)
      IS DISTINCT FROM
      (EXCLUDED.checks, EXCLUDED.up_count, EXCLUDED.latency_min_ms, EXCLUDED.latency_avg_ms,
       EXCLUDED.latency_p50_ms, EXCLUDED.latency_p95_ms, EXCLUDED.latency_max_ms)`, table, column, seconds)
}

func (s *Store) rollUpPeriods(ctx context.Context, p rollupPeriod, from, until int64) (int64, error) {
	if from%p.seconds != 0 || until%p.seconds != 0 {
		return 0, fmt.Errorf("roll up %s: range %d..%d is not whole periods", p.name, from, until)
	}
	var rawFrom int64
	err := s.pool.QueryRow(ctx,
		`SELECT coalesce(max(until_epoch), 0) FROM lifecycle_watermark WHERE name = 'raw_deleted_before'`).Scan(&rawFrom)
	if err != nil {
		return 0, fmt.Errorf("roll up %s: %w", p.name, err)
	}
	from = max(from, ceilTo(rawFrom, p.seconds))
	if from >= until {
		return 0, nil
	}
	var written int64
	var after int64
	for {
		var ids []int64
		rows, err := s.pool.Query(ctx, `SELECT id FROM monitored_service WHERE id > $1 ORDER BY id LIMIT $2`, after, rollupServiceBatch)
		if err == nil {
			ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			return written, fmt.Errorf("roll up %s: list services: %w", p.name, err)
		}
		if len(ids) == 0 {
			return written, nil
		}
		tag, err := s.pool.Exec(ctx, p.upsert, ids, from, until)
		if err != nil {
			return written, fmt.Errorf("roll up %s %s..%s: %w", p.name,
				SlotTime(from).Format(time.RFC3339), SlotTime(until).Format(time.RFC3339), err)
		}
		written += tag.RowsAffected()
		after = ids[len(ids)-1]
	}
}

// floorTo rounds an epoch down to a multiple of period; ceilTo rounds up.
func floorTo(epoch, period int64) int64 {
	r := epoch % period
	if r < 0 {
		r += period
	}
	return epoch - r
}

func ceilTo(epoch, period int64) int64 {
	f := floorTo(epoch, period)
	if f == epoch {
		return f
	}
	return f + period
}
