package monitoring

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// History reads that span the raw/rollup boundary. Raw results are kept for
// retention.raw (7 days by default), rollups for retention.rollups (400 days);
// a chart over a longer range reads rollups for the final periods and raw
// results only after them (the uptime figures of serviceSelect do the same). For the final periods both give the
// same counts, so where the boundary falls does not change what is shown; it
// only decides how many rows are read (720 hourly rows for 30 days instead of
// 86,400 results at 30-second slots).

// ServiceHistory reads a service's chart: buckets of bucketSeconds each,
// starting at start (epoch seconds, a multiple of bucketSeconds), oldest first.
// A bucket without results has Total 0.
func (s *Store) ServiceHistory(ctx context.Context, serviceID, start, bucketSeconds int64, buckets int) ([]SeriesPoint, error) {
	var points []SeriesPoint
	err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		var err error
		points, err = serviceHistory(ctx, tx, serviceID, start, bucketSeconds, buckets)
		return err
	})
	return points, err
}

// serviceHistory is ServiceHistory inside a page's read snapshot. Where the
// data comes from, by slot:
//
//	bucket a whole number of days:   daily rollups before rollup_daily, hourly before rollup_hourly, raw after
//	bucket a whole number of hours:  hourly rollups before rollup_hourly, raw after
//	shorter buckets:                 hourly rollups only where raw results may be gone
//	                                 (before raw_deleted_before), raw after
//
// In the first two cases a period falls entirely into one bucket, so the
// figures are exact. With shorter buckets an hour's rollup is counted in the
// bucket its hour starts in; that only happens for ranges reaching back past
// retention.raw.
func serviceHistory(ctx context.Context, tx pgx.Tx, serviceID, start, bucketSeconds int64, buckets int) ([]SeriesPoint, error) {
	if bucketSeconds <= 0 || buckets <= 0 {
		return nil, fmt.Errorf("history: %d buckets of %ds", buckets, bucketSeconds)
	}
	w, err := readWatermarks(ctx, tx)
	if err != nil {
		return nil, err
	}
	end := start + bucketSeconds*int64(buckets)
	var dailyUntil, hourlyUntil int64
	switch {
	case bucketSeconds%daySeconds == 0:
		dailyUntil, hourlyUntil = w.DailyUntil, w.HourlyUntil
	case bucketSeconds%hourSeconds == 0:
		hourlyUntil = w.HourlyUntil
	default:
		hourlyUntil = w.RawDeletedBefore
	}
	dailyUntil = clampEpoch(dailyUntil, start, end)
	hourlyUntil = clampEpoch(max(hourlyUntil, dailyUntil), dailyUntil, end)

	const q = `
SELECT ((t - $2) / $3)::int AS bucket, sum(up)::bigint, sum(n)::bigint,
       sum(latency_sum) / sum(n), max(latency_max)
FROM (
    SELECT day_start AS t, up_count AS up, checks AS n, latency_avg_ms * checks AS latency_sum, latency_max_ms AS latency_max
    FROM service_rollup_daily
    WHERE service_id = $1 AND day_start >= $2 AND day_start < $4
    UNION ALL
    SELECT hour_start, up_count, checks, latency_avg_ms * checks, latency_max_ms
    FROM service_rollup_hourly
    WHERE service_id = $1 AND hour_start >= $4 AND hour_start < $5
    UNION ALL
    SELECT scheduled_slot, (status = 'UP')::int, 1, latency_ms, latency_ms
    FROM monitoring_job_result
    WHERE service_id = $1 AND scheduled_slot >= $5 AND scheduled_slot < $6
) parts
GROUP BY 1`
	points := make([]SeriesPoint, buckets)
	for i := range points {
		points[i].Start = SlotTime(start + int64(i)*bucketSeconds)
	}
	rows, err := tx.Query(ctx, q, serviceID, start, bucketSeconds, dailyUntil, hourlyUntil, end)
	if err != nil {
		return nil, fmt.Errorf("history of service %d: %w", serviceID, err)
	}
	var bucket int
	var pt SeriesPoint
	_, err = pgx.ForEachRow(rows, []any{&bucket, &pt.Up, &pt.Total, &pt.AvgLatencyMS, &pt.MaxLatencyMS}, func() error {
		if bucket >= 0 && bucket < buckets {
			pt.Start = points[bucket].Start
			points[bucket] = pt
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history of service %d: %w", serviceID, err)
	}
	return points, nil
}

func clampEpoch(v, lo, hi int64) int64 { return max(lo, min(v, hi)) }
