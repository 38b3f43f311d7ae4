package monitoring_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

const day = int64(86400)

// insertFailedJob adds a FAILED job of a slot that failed at finishedAgo
// before now (DB clock).
func (b *testBundle) insertFailedJob(t *testing.T, serviceID, slot int64, finishedAgo time.Duration) int64 {
	t.Helper()
	var id int64
	err := b.pool.QueryRow(context.Background(), `
INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at,
                            state, attempts, finished_at, last_error)
VALUES ($1, $2::bigint, 'http://127.0.0.1:1/', 1000, 3, to_timestamp($2::bigint), 'FAILED', 3,
        clock_timestamp() - $3 * interval '1 second', 'test') RETURNING id`,
		serviceID, slot, finishedAgo.Seconds()).Scan(&id)
	require.NoError(t, err)
	return id
}

func (b *testBundle) insertRollup(t *testing.T, table string, serviceID, start int64) {
	t.Helper()
	column := map[string]string{"service_rollup_hourly": "hour_start", "service_rollup_daily": "day_start"}[table]
	_, err := b.pool.Exec(context.Background(), `INSERT INTO `+table+` (service_id, `+column+`, checks, up_count,
    latency_min_ms, latency_avg_ms, latency_p50_ms, latency_p95_ms, latency_max_ms) VALUES ($1, $2, 1, 1, 1, 1, 1, 1, 1)`,
		serviceID, start)
	require.NoError(t, err)
}

func (b *testBundle) jobExists(t *testing.T, id int64) bool {
	return b.count(t, `SELECT count(*) FROM monitoring_job WHERE id = $1`, id) == 1
}

// naiveHistory buckets raw samples directly, the way the chart read them
// before rollups existed.
func naiveHistory(samples []sample, start, bucket int64, buckets int) []monitoring.SeriesPoint {
	points := make([]monitoring.SeriesPoint, buckets)
	sums := make([]float64, buckets)
	for _, s := range samples {
		i := (s.slot - start) / bucket
		if s.slot < start || i >= int64(buckets) {
			continue
		}
		p := &points[i]
		p.Total++
		if s.status == "UP" {
			p.Up++
		}
		sums[i] += s.latency
		p.MaxLatencyMS = max(p.MaxLatencyMS, s.latency)
	}
	for i := range points {
		points[i].Start = monitoring.SlotTime(start + int64(i)*bucket)
		if points[i].Total > 0 {
			points[i].AvgLatencyMS = sums[i] / float64(points[i].Total)
		}
	}
	return points
}

func assertSameHistory(t *testing.T, want, got []monitoring.SeriesPoint, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i := range want {
		w, g := want[i], got[i]
		assert.Equal(t, w.Start, g.Start, "%s: bucket %d", msg, i)
		assert.Equal(t, w.Up, g.Up, "%s: bucket %d at %s: up", msg, i, w.Start)
		assert.Equal(t, w.Total, g.Total, "%s: bucket %d at %s: total", msg, i, w.Start)
		assert.Equal(t, w.MaxLatencyMS, g.MaxLatencyMS, "%s: bucket %d at %s: max", msg, i, w.Start)
		assert.InDelta(t, w.AvgLatencyMS, g.AvgLatencyMS, 1e-9, "%s: bucket %d at %s: avg", msg, i, w.Start)
	}
}

func totals(points []monitoring.SeriesPoint) (up, total int64) {
	for _, p := range points {
		up += p.Up
		total += p.Total
	}
	return up, total
}

// Retention deletes only what is past its horizon, never a READY or RUNNING
// job, keeps FAILED jobs longer, and the history the dashboard reads (charts
// and the service page's uptime) is the same before and after, across the
// raw/rollup boundary.
func TestPruneExpiredDeletesOnlyWhatIsOld(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "retained")
	now := dbEpoch(t, b.pool)
	hour := now - now%3600
	from, until := hour-12*day, hour-3600
	hist := generate(from, until, 600, 3) // 12 days, every 10 minutes
	insertHistory(t, b.pool, svc, hist)
	_, err := b.store.RollUp(ctx)
	require.NoError(t, err)
	w, err := b.store.Watermarks(ctx)
	require.NoError(t, err)

	// Old jobs that must survive. (The producer never creates such READY or
	// RUNNING jobs of old slots, and open jobs would hold the rollup watermark;
	// they are added after the rollup to test retention's own filter.)
	running := b.addJob(t, svc, from+10, 3)
	require.Equal(t, running, claimOne(t, ctx, b, "r1", time.Hour).ID)
	ready := b.addJob(t, svc, from+5, 3)
	failedRecently := b.insertFailedJob(t, svc, from+30, 10*24*time.Hour)
	failedLongAgo := b.insertFailedJob(t, svc, from+20, 40*24*time.Hour)
	var alerted int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT id FROM monitoring_job WHERE service_id = $1 AND scheduled_slot = $2`, svc, from).Scan(&alerted))
	_, err = b.pool.Exec(ctx, `INSERT INTO alert_outbox (event_key, service_id, job_id, scheduled_slot, kind)
VALUES ('test-' || $1::bigint, $2, $1::bigint, $3, 'DOWN')`, alerted, svc, from)
	require.NoError(t, err)
	b.insertRollup(t, "service_rollup_hourly", svc, hour-401*day)
	b.insertRollup(t, "service_rollup_hourly", svc, hour-399*day)
	b.insertRollup(t, "service_rollup_daily", svc, (now-401*day)/day*day)
	b.insertRollup(t, "service_rollup_daily", svc, (now-399*day)/day*day)

	const halfDay = 43200
	chartStart := now - now%halfDay - 25*halfDay
	chart, err := b.store.ServiceHistory(ctx, svc, chartStart, halfDay, 26)
	require.NoError(t, err)
	assertSameHistory(t, naiveHistory(hist, chartStart, halfDay, 26), chart, "30-day chart before retention")
	const oddBucket = 5400 // 1.5 h: hours straddle buckets
	oddStart := now - now%oddBucket - 200*oddBucket
	oddChart, err := b.store.ServiceHistory(ctx, svc, oddStart, oddBucket, 201)
	require.NoError(t, err)
	assertSameHistory(t, naiveHistory(hist, oddStart, oddBucket, 201), oddChart, "1.5-hour buckets before retention")
	// The service page as the dashboard reads it: uptime and a 30-day chart.
	page := monitoring.ServiceDetailParams{Name: "retained", Range: 30 * 24 * time.Hour, Bucket: 12 * time.Hour}
	detail, err := b.store.ServiceDetail(ctx, page)
	require.NoError(t, err)
	require.Positive(t, detail.Service.Uptime.Month.Total)

	resultsBefore := b.count(t, `SELECT count(*) FROM monitoring_job_result`)
	var batches []monitoring.RetentionBatch
	r, err := b.store.PruneExpired(ctx, monitoring.RetentionPolicy{Raw: 7 * 24 * time.Hour, BatchSize: 100},
		func(rb monitoring.RetentionBatch) { batches = append(batches, rb) })
	require.NoError(t, err)

	cutoff := min(hour-7*day, w.HourlyUntil, w.DailyUntil)
	assert.Equal(t, cutoff, r.RawCutoff)
	var old int64
	for _, s := range hist {
		if s.slot < cutoff {
			old++
		}
	}
	require.Greater(t, old, int64(300))
	assert.Equal(t, old-1, r.Jobs, "every old DONE job but the one an alert points at")
	assert.Equal(t, old-1, r.Results)
	assert.EqualValues(t, 1, r.FailedJobs)
	assert.EqualValues(t, 1, r.HourlyRollups)
	assert.EqualValues(t, 1, r.DailyRollups)
	assert.Equal(t, int64(resultsBefore)-r.Results, int64(b.count(t, `SELECT count(*) FROM monitoring_job_result`)))
	assert.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job_result WHERE scheduled_slot < $1`, cutoff))
	assert.Equal(t, 1+2+1, b.count(t, `SELECT count(*) FROM monitoring_job WHERE scheduled_slot < $1`, cutoff),
		"left before the cutoff: the alerted job, READY and RUNNING, the recently FAILED")
	assert.True(t, b.jobExists(t, ready))
	assert.True(t, b.jobExists(t, running))
	assert.True(t, b.jobExists(t, alerted))
	assert.True(t, b.jobExists(t, failedRecently))
	assert.False(t, b.jobExists(t, failedLongAgo))
	assert.Equal(t, 1, b.count(t, `SELECT count(*) FROM service_rollup_hourly WHERE hour_start < $1`, hour-300*day))
	assert.Equal(t, 1, b.count(t, `SELECT count(*) FROM service_rollup_daily WHERE day_start < $1`, hour-300*day))
	jobBatches := 0
	for _, rb := range batches {
		assert.LessOrEqual(t, rb.Rows, int64(100))
		if rb.Kind == monitoring.PrunedJobs {
			jobBatches++
		}
	}
	assert.Greater(t, jobBatches, 3, "bounded batches")
	w2, err := b.store.Watermarks(ctx)
	require.NoError(t, err)
	assert.Equal(t, cutoff, w2.RawDeletedBefore)

	// The dashboard's history reads the same across the boundary.
	after, err := b.store.ServiceHistory(ctx, svc, chartStart, halfDay, 26)
	require.NoError(t, err)
	assertSameHistory(t, chart, after, "30-day chart after retention")
	oddAfter, err := b.store.ServiceHistory(ctx, svc, oddStart, oddBucket, 201)
	require.NoError(t, err)
	upBefore, totalBefore := totals(oddChart)
	upAfter, totalAfter := totals(oddAfter)
	assert.Equal(t, [2]int64{upBefore, totalBefore}, [2]int64{upAfter, totalAfter},
		"1.5-hour buckets: each pruned hour is counted once, in the bucket its hour starts in")
	assertSameHistory(t, oddChart[len(oddChart)-100:], oddAfter[len(oddAfter)-100:], "1.5-hour buckets inside retention.raw")
	detailAfter, err := b.store.ServiceDetail(ctx, page)
	require.NoError(t, err)
	assert.Equal(t, detail.Service.Uptime, detailAfter.Service.Uptime)
	assertSameHistory(t, detail.Series.Points, detailAfter.Series.Points, "service page chart")

	// Nothing left to do.
	r, err = b.store.PruneExpired(ctx, monitoring.RetentionPolicy{Raw: 7 * 24 * time.Hour, BatchSize: 100}, nil)
	require.NoError(t, err)
	assert.Zero(t, r.Deleted())
}

// Raw results are never deleted before both of their rollups exist, however
// short retention.raw is.
func TestPruneExpiredWaitsForRollups(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "unrolled")
	now := dbEpoch(t, b.pool)
	insertHistory(t, b.pool, svc, generate(now-now%3600-3*day, now-now%3600-2*day, 600, 0))

	r, err := b.store.PruneExpired(ctx, monitoring.RetentionPolicy{Raw: time.Hour}, nil)
	require.NoError(t, err)
	assert.Zero(t, r.RawCutoff)
	assert.Zero(t, r.Deleted())

	_, err = b.store.RollUp(ctx)
	require.NoError(t, err)
	r, err = b.store.PruneExpired(ctx, monitoring.RetentionPolicy{Raw: time.Hour}, nil)
	require.NoError(t, err)
	w, err := b.store.Watermarks(ctx)
	require.NoError(t, err)
	assert.Equal(t, w.DailyUntil, r.RawCutoff, "the daily watermark is the limit: today is not rolled up yet")
	assert.Zero(t, b.count(t, `SELECT count(*) FROM monitoring_job_result WHERE scheduled_slot < $1`, w.DailyUntil))
	assert.Equal(t, 144, b.count(t, `SELECT sum(checks) FROM service_rollup_daily`))
}

// Deleting a job frees its (service, slot) key, and the producer never
// recreates a past slot, so retention and scheduling cannot collide.
func TestRetentionAndTheDedupeKey(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "dedupe") // interval 1h
	now := dbEpoch(t, b.pool)
	oldSlot := now - now%3600 - 10*day
	insertHistory(t, b.pool, svc, []sample{{slot: oldSlot, status: "UP", latency: 1}})
	_, err := b.store.RollUp(ctx)
	require.NoError(t, err)
	r, err := b.store.PruneExpired(ctx, monitoring.RetentionPolicy{Raw: 7 * 24 * time.Hour}, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, r.Jobs)

	for range 3 {
		_, err := b.store.EnqueueDue(ctx, 3, 0)
		require.NoError(t, err)
	}
	assert.Zero(t, b.count(t, `SELECT count(*) FROM monitoring_job WHERE scheduled_slot = $1`, oldSlot),
		"the producer does not bring back a deleted past slot")
	assert.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job WHERE service_id = $1`, svc),
		"only the current slot's job exists")
	assert.Zero(t, b.count(t, `SELECT count(*) FROM monitoring_job WHERE scheduled_slot < $1`, now-now%3600))

	// The key itself is free again: the unique constraint no longer holds it.
	b.addJob(t, svc, oldSlot, 3)
}
