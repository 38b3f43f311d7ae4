package monitoring_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// sample is one raw result to insert: its slot, status and latency.
type sample struct {
	slot    int64
	status  string
	latency float64
}

// insertHistory writes DONE jobs with their results, as completions would have.
func insertHistory(t *testing.T, pool *pgxpool.Pool, serviceID int64, samples []sample) {
	t.Helper()
	slots := make([]int64, len(samples))
	statuses := make([]string, len(samples))
	latencies := make([]float64, len(samples))
	for i, s := range samples {
		slots[i], statuses[i], latencies[i] = s.slot, s.status, s.latency
	}
	_, err := pool.Exec(context.Background(), `
WITH d AS (
    SELECT * FROM unnest($2::bigint[], $3::text[], $4::float8[]) AS d(slot, status, latency)
), j AS (
    INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at,
                                state, attempts, finished_at)
    SELECT $1, slot, 'http://127.0.0.1:1/', 1000, 3, to_timestamp(slot), 'DONE', 1, to_timestamp(slot) + interval '1 second'
    FROM d
    RETURNING id, scheduled_slot
)
INSERT INTO monitoring_job_result (job_id, service_id, scheduled_slot, status, latency_ms, attempt, owner_token, probed_by, observed_at)
SELECT j.id, $1, j.scheduled_slot, d.status, d.latency, 1, gen_random_uuid(), 'test', to_timestamp(j.scheduled_slot)
FROM j JOIN d ON d.slot = j.scheduled_slot`, serviceID, slots, statuses, latencies)
	require.NoError(t, err)
}

// generate makes one sample every step seconds in [from, until), with varied
// latencies and every seventh result DOWN.
func generate(from, until, step int64, seed int) []sample {
	var out []sample
	for i, slot := 0, from; slot < until; i, slot = i+1, slot+step {
		status := "UP"
		if (i+seed)%7 == 0 {
			status = "DOWN"
		}
		out = append(out, sample{slot: slot, status: status, latency: float64((i*37+seed*11)%101) + 0.25})
	}
	return out
}

func dbEpoch(t testing.TB, pool *pgxpool.Pool) int64 {
	t.Helper()
	var now int64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT floor(extract(epoch FROM clock_timestamp()))::bigint`).Scan(&now))
	return now
}

// rollupRow is a row of either rollup table.
type rollupRow struct {
	ServiceID, Start, Checks, Up int64
	Min, Avg, P50, P95, Max      float64
	ComputedAt                   time.Time
}

func readRollups(t *testing.T, pool *pgxpool.Pool, table string) map[[2]int64]rollupRow {
	t.Helper()
	column := map[string]string{"service_rollup_hourly": "hour_start", "service_rollup_daily": "day_start"}[table]
	rows, err := pool.Query(context.Background(), `SELECT service_id, `+column+`, checks, up_count, latency_min_ms, latency_avg_ms,
       latency_p50_ms, latency_p95_ms, latency_max_ms, computed_at FROM `+table)
	require.NoError(t, err)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[rollupRow])
	require.NoError(t, err)
	out := map[[2]int64]rollupRow{}
	for _, r := range list {
		out[[2]int64{r.ServiceID, r.Start}] = r
	}
	return out
}

// expectRollups computes rollups over samples in Go, independently of SQL:
// percentiles by linear interpolation between closest ranks, as
// percentile_cont does.
func expectRollups(serviceID int64, samples []sample, period int64) map[[2]int64]rollupRow {
	groups := map[int64][]sample{}
	for _, s := range samples {
		start := s.slot - s.slot%period
		groups[start] = append(groups[start], s)
	}
	out := map[[2]int64]rollupRow{}
	for start, g := range groups {
		lat := make([]float64, len(g))
		var sum float64
		r := rollupRow{ServiceID: serviceID, Start: start, Checks: int64(len(g))}
		for i, s := range g {
			lat[i] = s.latency
			sum += s.latency
			if s.status == "UP" {
				r.Up++
			}
		}
		slices.Sort(lat)
		r.Min, r.Max, r.Avg = lat[0], lat[len(lat)-1], sum/float64(len(lat))
		r.P50, r.P95 = percentileCont(lat, 0.5), percentileCont(lat, 0.95)
		out[[2]int64{serviceID, start}] = r
	}
	return out
}

func percentileCont(sorted []float64, p float64) float64 {
	pos := p * float64(len(sorted)-1)
	lo, hi := math.Floor(pos), math.Ceil(pos)
	return sorted[int(lo)] + (pos-lo)*(sorted[int(hi)]-sorted[int(lo)])
}

func assertRollupsMatch(t *testing.T, want, got map[[2]int64]rollupRow) {
	t.Helper()
	require.Len(t, got, len(want))
	for key, w := range want {
		g, ok := got[key]
		if !assert.True(t, ok, "no rollup for service %d at %s", key[0], monitoring.SlotTime(key[1])) {
			continue
		}
		assert.Equal(t, w.Checks, g.Checks, "checks %v", key)
		assert.Equal(t, w.Up, g.Up, "up %v", key)
		assert.Equal(t, w.Min, g.Min, "min %v", key)
		assert.Equal(t, w.Max, g.Max, "max %v", key)
		assert.InDelta(t, w.Avg, g.Avg, 1e-9, "avg %v", key)
		assert.InDelta(t, w.P50, g.P50, 1e-9, "p50 %v", key)
		assert.InDelta(t, w.P95, g.P95, 1e-9, "p95 %v", key)
	}
}

func TestRollUpMatchesRawResultsAndIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svcA, svcB := b.addService(t, "rollup-a"), b.addService(t, "rollup-b")
	now := dbEpoch(t, b.pool)
	// 50 hours of history ending two hours ago: two whole UTC days at least,
	// plus partial ones at both ends.
	from := now - now%3600 - 50*3600
	until := now - now%3600 - 2*3600
	histA := generate(from+17, until, 300, 1) // every 5 minutes, off the hour
	histB := generate(from, until, 90, 4)     // every 90 seconds
	insertHistory(t, b.pool, svcA, histA)
	insertHistory(t, b.pool, svcB, histB)

	r, err := b.store.RollUp(ctx)
	require.NoError(t, err)
	w, err := b.store.Watermarks(ctx)
	require.NoError(t, err)
	assert.Equal(t, from, r.HoursFrom, "the first run starts at the oldest job's hour")
	// The services' interval is an hour: a job created now may be for a slot
	// that started up to an hour ago.
	finalUntil := func(now int64) int64 { return (now - int64(monitoring.RollupGrace/time.Second) - 3600) / 3600 * 3600 }
	assert.Contains(t, []int64{finalUntil(now), finalUntil(dbEpoch(t, b.pool))}, w.HourlyUntil,
		"every hour that ended more than an interval and the grace ago is final when no job is open")
	assert.Equal(t, w.HourlyUntil-w.HourlyUntil%86400, w.DailyUntil, "days are final once all their hours are")

	hourly := readRollups(t, b.pool, "service_rollup_hourly")
	want := expectRollups(svcA, histA, 3600)
	for k, v := range expectRollups(svcB, histB, 3600) {
		want[k] = v
	}
	assertRollupsMatch(t, want, hourly)
	assert.EqualValues(t, len(want), r.HourlyRows)

	var finalA, finalB []sample
	for _, s := range histA {
		if s.slot < w.DailyUntil {
			finalA = append(finalA, s)
		}
	}
	for _, s := range histB {
		if s.slot < w.DailyUntil {
			finalB = append(finalB, s)
		}
	}
	daily := readRollups(t, b.pool, "service_rollup_daily")
	wantDaily := expectRollups(svcA, finalA, 86400)
	for k, v := range expectRollups(svcB, finalB, 86400) {
		wantDaily[k] = v
	}
	assertRollupsMatch(t, wantDaily, daily)
	require.NotEmpty(t, daily)

	// Re-running every hour and day changes nothing, not even computed_at.
	n, err := b.store.RollUpHours(ctx, from, w.HourlyUntil)
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = b.store.RollUpDays(ctx, from-from%86400, w.DailyUntil)
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, hourly, readRollups(t, b.pool, "service_rollup_hourly"))
	assert.Equal(t, daily, readRollups(t, b.pool, "service_rollup_daily"))

	// A second RollUp has nothing to do.
	r, err = b.store.RollUp(ctx)
	require.NoError(t, err)
	assert.Equal(t, r.HoursFrom, r.HoursUntil)
	assert.Zero(t, r.HourlyRows+r.DailyRows)
}

// A job still open in an old hour (a backlog, a retry, replicas back after an
// outage) holds the watermark at its hour; once it completes, its hour is
// rolled up with the late result in it.
func TestRollUpWaitsForOpenJobs(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "late")
	now := dbEpoch(t, b.pool)
	lateHour := now - now%3600 - 5*3600
	hist := generate(lateHour-3*3600, lateHour+3*3600, 600, 2)
	insertHistory(t, b.pool, svc, hist)
	lateJob := b.addJob(t, svc, lateHour+1800+7, 3) // READY, in the middle of lateHour

	_, err := b.store.RollUp(ctx)
	require.NoError(t, err)
	w, err := b.store.Watermarks(ctx)
	require.NoError(t, err)
	assert.Equal(t, lateHour, w.HourlyUntil, "the open job's hour is not final")
	assert.Equal(t, 0, b.count(t, `SELECT count(*) FROM service_rollup_hourly WHERE hour_start >= $1`, lateHour))

	job := claimOne(t, ctx, b, "r1", time.Minute)
	require.Equal(t, lateJob, job.ID)
	_, err = b.store.Complete(ctx, monitoring.CompleteParams{JobID: job.ID, Token: job.Token, Instance: "r1", Result: up(), FailureThreshold: 1})
	require.NoError(t, err)

	_, err = b.store.RollUp(ctx)
	require.NoError(t, err)
	w, err = b.store.Watermarks(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, w.HourlyUntil, lateHour+3*3600)
	var checks int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT checks FROM service_rollup_hourly WHERE service_id = $1 AND hour_start = $2`,
		svc, lateHour).Scan(&checks))
	assert.Equal(t, 6+1, checks, "six results every ten minutes, and the late one")
}
