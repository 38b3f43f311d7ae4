package monitoring_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

func TestMaintenanceWindowHoldsAlertsBack(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "inventory")
	bystander := b.addService(t, "billing")
	require.NoError(t, b.store.SyncMaintenanceWindows(ctx, []monitoring.MaintenanceWindowSpec{{
		Name: "deploy", Services: []string{"inventory"}, Start: time.Unix(1000, 0), End: time.Unix(2000, 0),
	}}))
	p := monitoring.CompleteParams{FailureThreshold: 1}

	b.run(t, svc, p, []step{{900, up(), ""}})
	// Down during the window: recorded, held back, and the alert state stays UP...
	for _, slot := range []int64{1000, 1500, 1999} {
		c := b.completeWith(t, b.addJob(t, svc, slot, 3), down("HTTP 503"), p)
		require.Empty(t, c.Alert, "slot %d", slot)
		require.Equal(t, "deploy", c.HeldBack, "slot %d", slot)
	}
	require.Empty(t, b.outbox(t, svc))
	require.Equal(t, 4, b.count(t, `SELECT count(*) FROM monitoring_job_result WHERE service_id = $1`, svc), "results are recorded as usual")
	require.Equal(t, 3, b.count(t, `SELECT consecutive_failures FROM service_status WHERE service_id = $1`, svc))
	// ...so the outage is announced once the window is over, if it still holds.
	b.run(t, svc, p, []step{{2000, down("HTTP 503"), "DOWN"}, {2100, up(), "UP"}})
	events := b.outbox(t, svc)
	require.Len(t, events, 2)
	require.Greater(t, *events[1].downSeconds, 0.0)

	// The window names one service: the other alerts as usual.
	b.run(t, bystander, p, []step{{900, up(), ""}, {1500, down("HTTP 500"), "DOWN"}})
}

func TestRecoveryInsideAWindowIsAnnouncedAfterIt(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "inventory")
	require.NoError(t, b.store.SyncMaintenanceWindows(ctx, []monitoring.MaintenanceWindowSpec{{
		Name: "fix", Services: []string{"inventory"}, Start: time.Unix(1000, 0), End: time.Unix(2000, 0),
	}}))
	p := monitoring.CompleteParams{FailureThreshold: 1}
	b.run(t, svc, p, []step{
		{500, up(), ""},
		{600, down("HTTP 500"), "DOWN"}, // before the window
		{1000, up(), ""},                // fixed during the window: held back
		{1100, down("HTTP 500"), ""},    // broken again, still inside: nothing
		{1200, up(), ""},
		{2000, up(), "UP"}, // the window is over and it is UP: announce the recovery
	})
	require.Equal(t, []string{"DOWN@600", "UP@2000"}, kinds(b.outbox(t, svc)))
}

func TestRecurringWindowOnAGroup(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "inventory")
	_, err := b.pool.Exec(ctx, `INSERT INTO monitoring_group (name) VALUES ('core');
UPDATE monitored_service SET group_id = (SELECT id FROM monitoring_group WHERE name = 'core')`)
	require.NoError(t, err)
	require.NoError(t, b.store.SyncMaintenanceWindows(ctx, []monitoring.MaintenanceWindowSpec{{
		Name: "sunday patching", Groups: []string{"core"}, Cron: "0 2 * * sun", Duration: time.Hour, Timezone: "Europe/Berlin",
	}}))
	at := func(s string) int64 {
		v, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return v.Unix()
	}
	p := monitoring.CompleteParams{FailureThreshold: 1}
	b.run(t, svc, p, []step{
		{at("2026-05-03T00:00:00Z"), up(), ""},
		{at("2026-05-03T00:10:00Z"), down("HTTP 500"), ""},     // 02:10 in Berlin on a Sunday: inside
		{at("2026-05-03T00:59:00Z"), down("HTTP 500"), ""},     // 02:59: inside
		{at("2026-05-03T01:00:00Z"), down("HTTP 500"), "DOWN"}, // 03:00: the window has closed
	})
}

func TestSyncMaintenanceWindowsAndShowThem(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	b.addService(t, "inventory")
	b.addService(t, "billing")
	now := time.Now().UTC().Truncate(time.Second)
	windows := []monitoring.MaintenanceWindowSpec{
		{Name: "now", Services: []string{"inventory"}, Start: now.Add(-time.Hour), End: now.Add(time.Hour)},
		{Name: "later", Services: []string{"billing"}, Start: now.Add(24 * time.Hour), End: now.Add(25 * time.Hour)},
		{Name: "daily", Services: []string{"billing", "gone"}, Cron: "0 3 * * *", Duration: 30 * time.Minute},
	}
	for range 2 { // idempotent
		require.NoError(t, b.store.SyncMaintenanceWindows(ctx, windows))
	}
	states, err := b.store.MaintenanceWindows(ctx)
	require.NoError(t, err)
	require.Len(t, states, 3)
	byName := map[string]monitoring.MaintenanceWindowState{}
	for _, s := range states {
		byName[s.Name] = s
	}
	require.True(t, byName["now"].Open)
	require.Equal(t, []string{"inventory"}, byName["now"].AffectedServices)
	require.False(t, byName["later"].Open)
	require.NotNil(t, byName["later"].NextStart)
	require.True(t, byName["later"].NextStart.Equal(now.Add(24*time.Hour)))
	require.True(t, byName["daily"].Recurring)
	require.Equal(t, "UTC", byName["daily"].Timezone)
	require.NotNil(t, byName["daily"].NextStart)
	require.Equal(t, 3, byName["daily"].NextStart.UTC().Hour())
	require.Equal(t, []string{"billing"}, byName["daily"].AffectedServices, "a name that is not a service matches nothing")

	inMaintenance, err := b.store.ServicesInMaintenance(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"inventory": "now"}, inMaintenance)

	// Windows removed from the file are removed from the database.
	require.NoError(t, b.store.SyncMaintenanceWindows(ctx, windows[:1]))
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM maintenance_window`))
}
