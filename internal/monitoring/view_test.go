package monitoring_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// seedResult stores a DONE job and its result for the slot `ago` seconds
// before the DB clock's now.
func (b *testBundle) seedResult(t *testing.T, serviceID int64, ago int64, status string, latencyMS float64) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `
WITH slot AS (SELECT extract(epoch FROM clock_timestamp())::bigint - $2 AS s),
j AS (
    INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at,
                                state, attempts, owner_instance, finished_at)
    SELECT $1, slot.s, 'http://t/', 1000, 3, to_timestamp(slot.s), 'DONE', 1, 'a', clock_timestamp() FROM slot
    RETURNING id, scheduled_slot
)
INSERT INTO monitoring_job_result (job_id, service_id, scheduled_slot, status, latency_ms, attempt, owner_token, probed_by)
SELECT id, $1, scheduled_slot, $3, $4, 1, gen_random_uuid(), 'a' FROM j`, serviceID, ago, status, latencyMS)
	require.NoError(t, err)
}

func TestOverviewUptimeCountsEachWindow(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "s")
	b.seedResult(t, svc, 3600, "UP", 1)     // 1 h ago
	b.seedResult(t, svc, 7200, "DOWN", 1)   // 2 h ago
	b.seedResult(t, svc, 2*86400, "UP", 1)  // 2 days ago
	b.seedResult(t, svc, 10*86400, "UP", 1) // 10 days ago
	b.seedResult(t, svc, 10*86400+1, "DOWN", 1)
	b.seedResult(t, svc, 40*86400, "DOWN", 1) // outside every window

	o, err := b.store.Overview(ctx, monitoring.OverviewParams{})
	require.NoError(t, err)
	require.Len(t, o.Services, 1)
	u := o.Services[0].Uptime
	require.Equal(t, monitoring.Ratio{Up: 1, Total: 2}, u.Day)
	require.Equal(t, monitoring.Ratio{Up: 2, Total: 3}, u.Week)
	require.Equal(t, monitoring.Ratio{Up: 3, Total: 5}, u.Month)
	require.Equal(t, "PENDING", o.Services[0].Status, "no service_status row yet")
	require.Len(t, o.Services[0].Recent, 6)
	require.Equal(t, "DOWN", o.Services[0].Recent[0].Status, "oldest first")
}

func TestOverviewIsBounded(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	for _, name := range []string{"c", "a", "b"} {
		svc := b.addService(t, name)
		for i := range int64(8) {
			b.seedResult(t, svc, 30*(i+1), "UP", 1)
		}
	}
	o, err := b.store.Overview(ctx, monitoring.OverviewParams{Services: 2, Recent: 5})
	require.NoError(t, err)
	require.Equal(t, 3, o.Total)
	require.True(t, o.Truncated())
	require.Len(t, o.Services, 2)
	require.Equal(t, "a", o.Services[0].Name)
	require.Equal(t, "b", o.Services[1].Name)
	require.Len(t, o.Services[0].Recent, 5)
	require.Less(t, o.Services[0].Recent[0].Slot, o.Services[0].Recent[4].Slot)
	require.Equal(t, 3, o.Counts.Pending)
}

func TestServiceDetailBucketsTheRange(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "s")
	b.seedResult(t, svc, 5, "UP", 10)
	b.seedResult(t, svc, 6, "DOWN", 30)
	b.seedResult(t, svc, 1800, "UP", 20)
	b.seedResult(t, svc, 7200, "UP", 99) // before the range

	d, err := b.store.ServiceDetail(ctx, monitoring.ServiceDetailParams{Name: "s", Range: time.Hour, Bucket: time.Minute})
	require.NoError(t, err)
	s := d.Series
	require.Equal(t, time.Minute, s.Bucket)
	require.Len(t, s.Points, 60)
	require.Zero(t, s.Start.Unix()%60, "buckets are aligned to their length")
	require.False(t, d.Now.Before(s.Points[59].Start), "the last bucket holds now")
	require.True(t, d.Now.Before(s.Points[59].Start.Add(time.Minute)))

	var total, up int64
	for _, p := range s.Points {
		total += p.Total
		up += p.Up
	}
	require.EqualValues(t, 3, total)
	require.EqualValues(t, 2, up)
	// The two newest results share a bucket unless a minute boundary fell
	// between them.
	last := s.Points[59]
	if s.Points[59].Total == 1 {
		last = s.Points[58]
	}
	if last.Total == 2 {
		require.InDelta(t, 20, last.AvgLatencyMS, 0.001)
		require.InDelta(t, 30, last.MaxLatencyMS, 0.001)
	}

	// Whole-hour buckets come from the rollup and count the same results.
	d, err = b.store.ServiceDetail(ctx, monitoring.ServiceDetailParams{Name: "s", Range: 7 * 24 * time.Hour, Bucket: 3 * time.Hour})
	require.NoError(t, err)
	require.Len(t, d.Series.Points, 56)
	require.Zero(t, d.Series.Start.Unix()%(3*3600))
	total, up = 0, 0
	var maxLatency float64
	for _, p := range d.Series.Points {
		total += p.Total
		up += p.Up
		maxLatency = max(maxLatency, p.MaxLatencyMS)
	}
	require.EqualValues(t, 4, total, "the result 2 h ago is inside 7 days")
	require.EqualValues(t, 3, up)
	require.InDelta(t, 99, maxLatency, 0.001)

	_, err = b.store.ServiceDetail(ctx, monitoring.ServiceDetailParams{Name: "nope"})
	require.ErrorIs(t, err, monitoring.ErrNotFound)
}

func TestJobListFilters(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	s1 := b.addService(t, "one")
	s2 := b.addService(t, "two")
	j1 := b.addJob(t, s1, 100, 3)
	j2 := b.addJob(t, s2, 100, 3)
	j3 := b.addJob(t, s1, 200, 3)
	claimed := claimOne(t, ctx, b, "replica-x", time.Minute) // the oldest due job: j1

	page, err := b.store.JobList(ctx, monitoring.JobListParams{State: "RUNNING"})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 1)
	require.Equal(t, claimed.ID, page.Jobs[0].ID)
	require.Equal(t, "replica-x", page.Jobs[0].OwnerInstance)
	require.NotNil(t, page.Jobs[0].LeaseRemaining)
	require.InDelta(t, time.Minute.Seconds(), page.Jobs[0].LeaseRemaining.Seconds(), 5)

	page, err = b.store.JobList(ctx, monitoring.JobListParams{Service: "one"})
	require.NoError(t, err)
	require.Equal(t, []int64{j3, j1}, jobIDs(page))

	page, err = b.store.JobList(ctx, monitoring.JobListParams{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []int64{j3, j2}, jobIDs(page))
	require.Equal(t, j2, page.Next)
	page, err = b.store.JobList(ctx, monitoring.JobListParams{Limit: 2, Before: page.Next})
	require.NoError(t, err)
	require.Equal(t, []int64{j1}, jobIDs(page))
	require.Zero(t, page.Next)

	_, err = b.store.JobList(ctx, monitoring.JobListParams{State: "running'; DROP TABLE monitoring_job; --"})
	require.ErrorIs(t, err, monitoring.ErrInvalidState)
	_, err = b.store.JobList(ctx, monitoring.JobListParams{Service: "nope"})
	require.ErrorIs(t, err, monitoring.ErrNotFound)
}

func jobIDs(p monitoring.JobPage) []int64 {
	var ids []int64
	for _, j := range p.Jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

// The views read what the real write path stores: a completion shows up as
// the replica's recent completion, a result, and an alert.
func TestViewsReadWhatCompleteWrites(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	require.NoError(t, b.store.RegisterInstance(ctx, monitoring.Instance{Name: "a", Addr: ":1", Version: "test"}))
	svc := b.addService(t, "s")
	upJob := b.addJob(t, svc, 100, 3)
	downJob := b.addJob(t, svc, 200, 3)
	b.complete(t, ctx, upJob, up(), 1)
	b.complete(t, ctx, downJob, down("HTTP 500"), 1)

	list, err := b.store.InstanceList(ctx)
	require.NoError(t, err)
	require.Len(t, list.Instances, 1)
	in := list.Instances[0]
	require.True(t, in.Live)
	require.EqualValues(t, 2, in.Completed)
	require.Zero(t, in.JobsHeld)

	alerts, err := b.store.AlertList(ctx, monitoring.AlertListParams{Service: "s"})
	require.NoError(t, err)
	require.Len(t, alerts.Alerts, 1)
	require.Equal(t, "DOWN", alerts.Alerts[0].Kind)
	require.Equal(t, "HTTP 500", alerts.Alerts[0].Reason)
	require.Equal(t, "s", alerts.Alerts[0].Service)

	d, err := b.store.ServiceDetail(ctx, monitoring.ServiceDetailParams{Name: "s"})
	require.NoError(t, err)
	require.Equal(t, "DOWN", d.Service.Status)
	require.Equal(t, "a", d.Service.CheckedBy)
	require.Len(t, d.Results, 2)
	require.Equal(t, int64(200), d.Results[0].Slot)
	require.Equal(t, "a", d.Results[0].ProbedBy)
	require.Len(t, d.Alerts, 1)

	require.NoError(t, b.store.MarkInstanceStopped(ctx, "a", 3))
	list, err = b.store.InstanceList(ctx)
	require.NoError(t, err)
	require.False(t, list.Instances[0].Live, "a stopped replica is not live")
}

// Uptime reads rollups where they are final and raw results after them; the
// figures must not change when maintenance rolls results up, nor when
// retention then deletes the raw results it rolled up.
func TestUptimeIsTheSameFromRollupsAndResults(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "s")
	for _, r := range []struct {
		ago    int64
		status string
	}{
		{60, "UP"}, {5 * 60, "DOWN"}, {3 * 3600, "UP"}, {20 * 3600, "DOWN"}, {26 * 3600, "UP"},
		{3 * 86400, "DOWN"}, {8 * 86400, "UP"}, {8*86400 + 60, "DOWN"}, {25 * 86400, "UP"}, {35 * 86400, "DOWN"},
	} {
		b.seedResult(t, svc, r.ago, r.status, 10)
	}
	uptime := func() monitoring.Uptime {
		t.Helper()
		o, err := b.store.Overview(ctx, monitoring.OverviewParams{})
		require.NoError(t, err)
		return o.Services[0].Uptime
	}
	raw := uptime()
	require.Equal(t, monitoring.Ratio{Up: 2, Total: 4}, raw.Day)
	require.Equal(t, monitoring.Ratio{Up: 3, Total: 6}, raw.Week)
	require.Equal(t, monitoring.Ratio{Up: 5, Total: 9}, raw.Month, "all but the result 35 days ago")

	report, err := b.store.RollUp(ctx)
	require.NoError(t, err)
	require.NotZero(t, report.HourlyRows)
	require.NotZero(t, report.DailyRows)
	require.Equal(t, raw, uptime(), "rolled up")

	// Retention's effect: raw results of rolled-up periods are gone.
	w, err := b.store.Watermarks(ctx)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `DELETE FROM monitoring_job_result WHERE scheduled_slot < $1`, w.HourlyUntil)
	require.NoError(t, err)
	require.Equal(t, raw, uptime(), "raw results pruned")
}
