package monitoring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

// TestProbeSecretsStayOutOfEverything runs the real scheduler against a target that needs
// a secret from the environment, then looks for the secret in every row of every table,
// in the logs, in the views the API serialises and in the rendered pages.
func TestProbeSecretsStayOutOfEverything(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	const secret = "s3cr3t-Zq9-never-stored"

	var authorized sync.Map
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := r.Header.Get("Authorization") == "Bearer "+secret && r.Header.Get("X-Api-Key") == secret
		authorized.Store(r.URL.Path, ok)
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/slow":
			time.Sleep(40 * time.Millisecond)
			_, _ = w.Write([]byte(`{"status":"UP"}`))
		default:
			_, _ = w.Write([]byte(`{"status":"DEGRADED","token_seen":true}`))
		}
	}))
	t.Cleanup(target.Close)

	spec := monitoring.ProbeSpec{
		Method:      "POST",
		Headers:     map[string]string{"X-Api-Key": "${VIGIL_TEST_SECRET}"},
		Body:        `{"key":"${VIGIL_TEST_SECRET}"}`,
		BearerToken: "${VIGIL_TEST_SECRET}",
	}
	condSpec := spec
	condSpec.Conditions = []string{"[STATUS] == 200", "[BODY].status == UP"}
	slowSpec := spec
	slowSpec.DegradedAboveMS = 10
	_, err := b.store.SyncConfig(ctx, nil, []monitoring.ServiceSpec{
		{Name: "conditional", URL: target.URL + "/health", Interval: time.Hour, Timeout: 2 * time.Second, Enabled: true, Probe: condSpec},
		{Name: "slow", URL: target.URL + "/slow", Interval: time.Hour, Timeout: 2 * time.Second, Enabled: true, Probe: slowSpec},
	})
	require.NoError(t, err)

	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prober := monitoring.NewHTTPProber(time.Second).WithEnv([]string{"VIGIL_TEST_SECRET=" + secret})
	sched := monitoring.NewScheduler(b.store, prober, monitoring.SchedulerConfig{
		Instance: monitoring.Instance{Name: "probe-test", Addr: "-", Version: "test"},
		Workers:  2, Lease: 10 * time.Second, Poll: 20 * time.Millisecond, ProducerEvery: 50 * time.Millisecond,
		FailureThreshold: 1, AlertBeforeFirstUp: true,
	}, monitoring.NewMetrics(prometheus.NewRegistry()), log)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = sched.Run(runCtx) }()
	require.Eventually(t, func() bool {
		return b.count(t, `SELECT count(*) FROM monitoring_job_result`) == 2
	}, 15*time.Second, 20*time.Millisecond)
	stop()
	<-done

	for _, path := range []string{"/health", "/slow"} {
		ok, _ := authorized.Load(path)
		require.Equal(t, true, ok, "the target got the secret for %s", path)
	}

	// What was stored: the condition that failed with the observed value, and the slow UP.
	var failed, reason string
	require.NoError(t, b.pool.QueryRow(ctx, `
SELECT r.failed_condition, r.error FROM monitoring_job_result r JOIN monitored_service s ON s.id = r.service_id
WHERE s.name = 'conditional' AND r.status = 'DOWN'`).Scan(&failed, &reason))
	assert.Equal(t, "[BODY].status == UP", failed)
	assert.Equal(t, `condition [BODY].status == UP failed: observed "DEGRADED"`, reason)
	assert.Equal(t, 1, b.count(t, `SELECT count(*) FROM monitoring_job_result r JOIN monitored_service s ON s.id = r.service_id
WHERE s.name = 'slow' AND r.status = 'UP' AND r.degraded`))
	assert.Equal(t, 1, b.count(t, `SELECT count(*) FROM service_status WHERE degraded`))
	// The job's snapshot holds the template, as the service does.
	assert.Equal(t, 2, b.count(t, `SELECT count(*) FROM monitoring_job WHERE probe->>'bearer_token' = '${VIGIL_TEST_SECRET}'`))

	// The secret is nowhere in the database: every row of every table, as text.
	rows, err := b.pool.Query(ctx, `SELECT quote_ident(table_name) FROM information_schema.tables
WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	require.Contains(t, tables, "monitoring_job_result")
	for _, table := range tables {
		assert.Zero(t, b.count(t, `SELECT count(*) FROM `+table+` x WHERE strpos(x::text, $1) > 0`, secret), "table %s", table)
	}

	assert.Contains(t, logs.String(), "failed: observed", "the probe results were logged")
	assert.NotContains(t, logs.String(), secret, "logs")

	// The views behind the pages and the JSON API, and the rendered pages.
	overview, err := b.store.Overview(ctx, monitoring.OverviewParams{})
	require.NoError(t, err)
	detail, err := b.store.ServiceDetail(ctx, monitoring.ServiceDetailParams{Name: "conditional"})
	require.NoError(t, err)
	slow, err := b.store.ServiceDetail(ctx, monitoring.ServiceDetailParams{Name: "slow"})
	require.NoError(t, err)
	for _, v := range []any{overview, detail, slow} {
		j, err := json.Marshal(v)
		require.NoError(t, err)
		assert.NotContains(t, string(j), secret)
	}
	var html bytes.Buffer
	require.NoError(t, templates.Overview(overview).Render(ctx, &html))
	require.NoError(t, templates.Service(templates.ServiceView{Detail: detail}).Render(ctx, &html))
	require.NoError(t, templates.Service(templates.ServiceView{Detail: slow}).Render(ctx, &html))
	page := html.String()
	assert.NotContains(t, page, secret)
	assert.NotContains(t, page, "VIGIL_TEST_SECRET", "pages show header names and the kind of auth only")

	// And the pages say what happened.
	assert.Contains(t, page, `data-testid="failed-condition">[BODY].status == UP</code>`)
	assert.Contains(t, page, `failed: observed &#34;DEGRADED&#34;`)
	assert.Contains(t, page, `data-testid="condition">[STATUS] == 200</code>`)
	assert.Contains(t, page, `data-testid="config-probe-type">http</dd>`)
	assert.Contains(t, page, `data-testid="strip-slow"`)
	assert.Equal(t, 2, strings.Count(page, `data-testid="degraded"`), "the overview row and the slow service's page")
	assert.Contains(t, page, "auth: bearer token")
}

// A probe change is a config change (rewritten once, then left alone), and a job keeps the
// probe it was enqueued with, like its target_url.
func TestSyncConfigStoresProbeAndJobsSnapshotIt(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	spec := monitoring.ServiceSpec{Name: "db", URL: "tcp://127.0.0.1:5432", Interval: time.Hour, Timeout: time.Second, Enabled: true,
		Probe: monitoring.ProbeSpec{Type: "tcp", Conditions: []string{"[CONNECTED] == true"}}}
	sum, err := b.store.SyncConfig(ctx, nil, []monitoring.ServiceSpec{spec})
	require.NoError(t, err)
	require.EqualValues(t, 1, sum.Upserted)
	sum, err = b.store.SyncConfig(ctx, nil, []monitoring.ServiceSpec{spec})
	require.NoError(t, err)
	require.EqualValues(t, 0, sum.Upserted, "an unchanged probe is not rewritten")

	_, err = b.store.EnqueueDue(ctx, 3, 0)
	require.NoError(t, err)
	changed := spec
	changed.Probe.Conditions = []string{"[RESPONSE_TIME] < 100"}
	sum, err = b.store.SyncConfig(ctx, nil, []monitoring.ServiceSpec{changed})
	require.NoError(t, err)
	require.EqualValues(t, 1, sum.Upserted, "a changed probe is a change")

	job := claimOne(t, ctx, b, "a", time.Minute)
	require.Equal(t, spec.Probe, job.Probe, "the job keeps the probe of its enqueue")
	require.Equal(t, "tcp://127.0.0.1:5432", job.TargetURL)
}
