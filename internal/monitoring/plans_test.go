package monitoring_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// No statement on the hot path reads monitoring_job sequentially: on a table
// that has churned (many DONE rows, some due, some held) every plan, custom
// or generic, goes through an index. Run with -v to see the plans.
func TestHotPathPlansUseIndexes(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	_, err := b.pool.Exec(ctx, `
INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms)
SELECT 'svc-' || i, 'http://127.0.0.1:1/', 30, 1000 FROM generate_series(1, 2000) i;
-- 100 finished slots per service, one due slot, and a few held (some expired).
INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, state, attempts, available_at, finished_at)
SELECT s.id, slot * 30, s.url, 1000, 3, 'DONE', 1, to_timestamp(slot * 30), to_timestamp(slot * 30 + 1)
FROM monitored_service s CROSS JOIN generate_series(1, 100) slot;
INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at)
SELECT s.id, 101 * 30, s.url, 1000, 3, clock_timestamp() FROM monitored_service s;
UPDATE monitoring_job SET state = 'RUNNING', attempts = 1, owner_token = gen_random_uuid(), owner_instance = 'r1',
       lease_until = clock_timestamp() + CASE WHEN id % 2 = 0 THEN interval '1 minute' ELSE interval '-1 minute' END
WHERE id IN (SELECT id FROM monitoring_job WHERE state = 'READY' ORDER BY id LIMIT 200);
ANALYZE monitoring_job; ANALYZE monitored_service; ANALYZE service_status;`)
	require.NoError(t, err)

	token := "'6f1c1f4e-8d5e-4c59-9a43-0d7c1f3b2a10'"
	statements := []struct {
		name, sql, args string
		setup           string
	}{
		{name: "enqueue due", sql: monitoring.EnqueueDueSQL, args: "3, 60000"},
		{name: "claim", sql: monitoring.ClaimSQL, args: "64, 'r1', 30000"},
		{name: "complete batch", sql: monitoring.CompleteRoundSQL, setup: "SET LOCAL enable_nestloop = off",
			args: "'{1,2,3}', '{" + strings.Repeat(strings.Trim(token, "'")+",", 2) + strings.Trim(token, "'") + "}', '{UP,UP,DOWN}', " +
				"'{1.5,2,3}', '{200,200,500}', '{NULL,NULL,boom}', '{r1,r1,r1}', '{f,f,f}', '{NULL,NULL,NULL}'"},
		{name: "renew", sql: monitoring.RenewSQL, args: "1, " + token + ", 30000"},
		{name: "retry", sql: monitoring.RetrySQL, args: "1, " + token + ", 5000, 60000, 'boom'"},
		{name: "release", sql: monitoring.ReleaseSQL, args: "1, " + token},
		{name: "fail exhausted", sql: monitoring.FailExhaustedSQL},
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for _, st := range statements {
			err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
				defer func() { _, _ = tx.Exec(ctx, "DEALLOCATE hot") }()
				if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
					return err
				}
				if st.setup != "" {
					if _, err := tx.Exec(ctx, st.setup); err != nil {
						return err
					}
				}
				if _, err := tx.Exec(ctx, "PREPARE hot AS "+st.sql); err != nil {
					return err
				}
				execute := "EXECUTE hot"
				if st.args != "" {
					execute += "(" + st.args + ")"
				}
				var plan []byte
				if err := tx.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+execute).Scan(&plan); err != nil {
					return err
				}
				if scans := seqScans(t, plan); len(scans) > 0 {
					t.Errorf("%s (%s): sequential scan of %s", st.name, mode, strings.Join(scans, ", "))
				}
				if f := unboundedTimeScans(t, plan); len(f) > 0 {
					t.Errorf("%s (%s): the clock only filters a scan of the queue's partial index, so the scan "+
						"reads every row of the state instead of stopping at the first not yet due: %s",
						st.name, mode, strings.Join(f, "; "))
				}
				if testing.Verbose() {
					rows, err := tx.Query(ctx, "EXPLAIN (COSTS OFF) "+execute)
					if err != nil {
						return err
					}
					lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
					if err != nil {
						return err
					}
					t.Logf("%s (%s):\n%s", st.name, mode, strings.Join(lines, "\n"))
				}
				return nil
			})
			require.NoError(t, err, "%s (%s)", st.name, mode)
		}
	}
}

// unboundedTimeScans lists scans of the READY and RUNNING partial indexes
// whose time comparison is a Filter on clock_timestamp() rather than an index
// bound.
func unboundedTimeScans(t *testing.T, plan []byte) []string {
	t.Helper()
	var out []string
	walkPlan(t, plan, func(n map[string]any) {
		index, _ := n["Index Name"].(string)
		filter, _ := n["Filter"].(string)
		if (index == "monitoring_job_ready_idx" || index == "monitoring_job_running_idx") &&
			strings.Contains(filter, "clock_timestamp()") {
			out = append(out, index+": "+filter)
		}
	})
	return out
}

// walkPlan calls visit for every node of a JSON plan.
func walkPlan(t *testing.T, plan []byte, visit func(map[string]any)) {
	t.Helper()
	var doc []struct{ Plan map[string]any }
	require.NoError(t, json.Unmarshal(plan, &doc))
	var walk func(n map[string]any)
	walk = func(n map[string]any) {
		visit(n)
		children, _ := n["Plans"].([]any)
		for _, c := range children {
			if m, ok := c.(map[string]any); ok {
				walk(m)
			}
		}
	}
	for _, d := range doc {
		walk(d.Plan)
	}
}

// seqScans lists the relations a JSON plan reads by Seq Scan that are
// monitoring_job.
func seqScans(t *testing.T, plan []byte) []string {
	t.Helper()
	var out []string
	walkPlan(t, plan, func(n map[string]any) {
		if n["Node Type"] == "Seq Scan" && n["Relation Name"] == "monitoring_job" {
			out = append(out, "monitoring_job")
		}
	})
	return out
}
