package monitoring_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// syncBuffer is a log sink two goroutines may write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// counterSum adds up a counter family's samples whose labels include match.
func counterSum(t *testing.T, reg *prometheus.Registry, name string, match map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range match {
				if labels[k] != v {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// Two replicas run the maintenance runner side by side: between them the
// history is rolled up and pruned, each task run by one of them at a time, and
// both stop when their context ends.
func TestMaintenanceRunnerOnTwoReplicas(t *testing.T) {
	t.Parallel()
	r := newReplicaPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := func() int64 {
		var id int64
		require.NoError(t, r.poolA.QueryRow(ctx, `INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms)
VALUES ('lifecycle', 'http://127.0.0.1:1/', 600, 1000) RETURNING id`).Scan(&id))
		return id
	}()
	now := dbEpoch(t, r.poolA)
	insertHistory(t, r.poolA, svc, generate(now-now%3600-10*day, now-now%3600-3600, 600, 5))

	var logs syncBuffer
	regs := map[string]*prometheus.Registry{"a": prometheus.NewRegistry(), "b": prometheus.NewRegistry()}
	var wg sync.WaitGroup
	for instance, store := range map[string]*monitoring.Store{"a": r.a, "b": r.b} {
		runner := monitoring.NewMaintenanceRunner(store, monitoring.MaintenanceConfig{
			Instance:       instance,
			Retention:      monitoring.RetentionPolicy{Raw: 7 * 24 * time.Hour, BatchSize: 200},
			RollupEvery:    50 * time.Millisecond,
			RetentionEvery: 50 * time.Millisecond,
		}, regs[instance], slog.New(slog.NewTextHandler(&logs, nil)).With("instance", instance))
		wg.Go(func() { assert.NoError(t, runner.Run(ctx)) })
	}

	cutoff := now - now%3600 - 7*day
	var deleted int
	require.NoError(t, r.poolA.QueryRow(ctx, `
SELECT count(*) FROM generate_series($1::bigint, $2::bigint - 1, 600) s WHERE s < $3`,
		now-now%3600-10*day, now-now%3600-3600, cutoff).Scan(&deleted))
	deletedCounted := func() float64 {
		var n float64
		for _, reg := range regs {
			n += counterSum(t, reg, "vigil_retention_deleted_rows_total", map[string]string{"kind": monitoring.PrunedResults})
		}
		return n
	}
	require.Eventually(t, func() bool {
		var left int
		require.NoError(t, r.poolA.QueryRow(ctx, `SELECT count(*) FROM monitoring_job_result WHERE scheduled_slot < $1`, cutoff).Scan(&left))
		return left == 0 && deletedCounted() == float64(deleted)
	}, 20*time.Second, 25*time.Millisecond, "old results deleted, and the replicas' counters add up to what was deleted")
	cancel()
	wg.Wait()

	holders, err := r.a.LockHolders(context.Background())
	require.NoError(t, err)
	names := map[string]string{}
	for _, h := range holders {
		names[h.Name] = h.LockedBy
	}
	assert.Contains(t, names, monitoring.TaskRollup)
	assert.Contains(t, names, monitoring.TaskRetention)

	var ran float64
	for _, reg := range regs {
		ran += counterSum(t, reg, "vigil_maintenance_runs_total", map[string]string{"task": monitoring.TaskRetention, "outcome": "ok"})
		assert.Zero(t, counterSum(t, reg, "vigil_maintenance_runs_total", map[string]string{"outcome": "error"}), logs.String())
	}
	assert.GreaterOrEqual(t, ran, 1.0)
	assert.Contains(t, logs.String(), "retention pass")
	assert.Contains(t, logs.String(), "rollups updated")

	families, err := regs["a"].Gather()
	require.NoError(t, err)
	var watermarks []string
	for _, f := range families {
		if f.GetName() == "vigil_lifecycle_watermark_timestamp_seconds" {
			for _, m := range f.GetMetric() {
				watermarks = append(watermarks, m.GetLabel()[0].GetValue())
			}
		}
	}
	assert.ElementsMatch(t, []string{"rollup_hourly", "rollup_daily", "raw_deleted_before"}, watermarks)
	assert.False(t, strings.Contains(logs.String(), "level=ERROR"), logs.String())
}
