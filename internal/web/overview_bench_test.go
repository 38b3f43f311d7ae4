package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// BenchmarkOverview2000 serves the overview (database reads and rendering)
// for 2,000 services in 20 groups, each with a history of results at a 30 s
// interval, rolled up as maintenance would: VIGIL_BENCH_HISTORY results per
// service, 200 by default (100 minutes; 2880 is a full day).
func BenchmarkOverview2000(b *testing.B) {
	const services = 2000
	history := 200
	if v := os.Getenv("VIGIL_BENCH_HISTORY"); v != "" {
		var err error
		history, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	tb := setup(b)
	start := time.Now()
	seedLarge(b, tb, services, history)
	b.Logf("seeded %d services x %d results in %s", services, history, time.Since(start).Round(time.Millisecond))

	var size int
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		tb.e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET /: %d %s", rec.Code, rec.Body.String())
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size)/1e6, "MB/page")
}

// seedLarge fills the database like a large installation: services in 20
// groups with `history` results each at a 30 s interval, about 3% DOWN, and
// two live replicas.
func seedLarge(t testing.TB, tb *testBundle, services, history int) {
	ctx := context.Background()
	tb.exec(t, `INSERT INTO monitoring_group (name) SELECT 'group-' || g FROM generate_series(1, 20) g`)
	tb.exec(t, `
INSERT INTO monitored_service (name, group_id, url, interval_seconds, timeout_ms)
SELECT 'service-' || lpad(i::text, 4, '0'), (SELECT id FROM monitoring_group WHERE name = 'group-' || (i % 20 + 1)),
       'http://127.0.0.1:8081/ok', 30, 2000
FROM generate_series(1, $1) i`, services)
	tb.exec(t, `
WITH now AS (SELECT extract(epoch FROM clock_timestamp())::bigint / 30 * 30 AS e),
j AS (
    INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at,
                                state, attempts, owner_instance, finished_at)
    SELECT s.id, now.e - k * 30, s.url, 2000, 3, to_timestamp(now.e - k * 30), 'DONE', 1,
           'replica-' || (k % 2), clock_timestamp()
    FROM monitored_service s, now, generate_series(0, $1 - 1) k
    RETURNING id, service_id, scheduled_slot, owner_instance
)
INSERT INTO monitoring_job_result (job_id, service_id, scheduled_slot, status, latency_ms, http_status, error,
                                   attempt, owner_token, probed_by, observed_at)
SELECT id, service_id, scheduled_slot, d.status, 5 + random() * 50,
       CASE d.status WHEN 'UP' THEN 200 ELSE 503 END,
       CASE d.status WHEN 'DOWN' THEN 'HTTP 503 Service Unavailable' END,
       1, gen_random_uuid(), owner_instance, to_timestamp(scheduled_slot) + interval '40 milliseconds'
FROM j, LATERAL (SELECT CASE WHEN random() < 0.03 THEN 'DOWN' ELSE 'UP' END AS status) d`, history)
	tb.exec(t, `
INSERT INTO service_status (service_id, status, last_slot, last_job_id, checked_at, checked_by, latency_ms,
                            http_status, error, status_since)
SELECT DISTINCT ON (service_id) service_id, status, scheduled_slot, job_id, observed_at, probed_by, latency_ms,
       http_status, error, observed_at
FROM monitoring_job_result ORDER BY service_id, scheduled_slot DESC`)
	tb.exec(t, `INSERT INTO vigil_instance (name, addr, version, started_at, heartbeat_at)
SELECT 'replica-' || i, ':808' || i, 'bench', clock_timestamp(), clock_timestamp() FROM generate_series(0, 1) i`)
	// What maintenance does in a running installation: roll up the final hours
	// and days, so uptime reads rollups plus the last hour or so of results.
	_, err := monitoring.NewStore(tb.pool).RollUp(ctx)
	require.NoError(t, err)
	_, err = tb.pool.Exec(ctx, `VACUUM ANALYZE`)
	require.NoError(t, err)

}
