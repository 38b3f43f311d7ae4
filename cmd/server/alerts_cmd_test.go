package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/config"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
)

// runAlerts is called directly: run.go dispatches "server alerts" to it.

// failedDelivery writes a service, a job, a DOWN event and a FAILED delivery of it.
func failedDelivery(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	var id int64
	err := pool.QueryRow(context.Background(), `
WITH s AS (INSERT INTO monitored_service (name, url, interval_seconds, timeout_ms) VALUES ('inventory', 'http://127.0.0.1:1/', 30, 1000) RETURNING id),
j AS (INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at)
      SELECT id, 60, 'http://127.0.0.1:1/', 1000, 3, clock_timestamp() FROM s RETURNING id, service_id),
e AS (INSERT INTO alert_outbox (event_key, service_id, job_id, scheduled_slot, kind, reason, routed_at)
      SELECT 'job-' || id || '-DOWN', service_id, id, 60, 'DOWN', 'HTTP 500', clock_timestamp() FROM j RETURNING id)
INSERT INTO alert_delivery (event_id, webhook, state, attempts, max_attempts, last_error, finished_at)
SELECT id, 'ops', 'FAILED', 3, 3, 'HTTP 502: bad gateway', clock_timestamp() FROM e RETURNING id`).Scan(&id)
	require.NoError(t, err)
	return id
}

func TestAlertsListAndRetryCommands(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pool := testPool(t, url)
	id := failedDelivery(t, pool)
	ctx := context.Background()

	var out, errOut bytes.Buffer
	code := runAlerts(ctx, []string{"list", "-state", "failed"}, []string{"DATABASE_URL=" + url}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), "FAILED")
	require.Contains(t, out.String(), "HTTP 502: bad gateway")
	require.Contains(t, out.String(), "inventory")

	out.Reset()
	code = runAlerts(ctx, []string{"retry", "-database-url", url, strconv.FormatInt(id, 10)}, nil, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), fmt.Sprintf("delivery %d is PENDING again", id))
	require.Equal(t, "PENDING", queryString(t, pool, `SELECT state FROM alert_delivery WHERE id = $1`, id))
	require.Equal(t, 0, queryInt(t, pool, `SELECT attempts FROM alert_delivery WHERE id = $1`, id))

	// Retrying what is not FAILED, or does not exist, says so and exits 1.
	errOut.Reset()
	code = runAlerts(ctx, []string{"retry", "-database-url", url, strconv.FormatInt(id, 10), "999999"}, nil, &out, &errOut)
	require.Equal(t, 1, code)
	require.Contains(t, errOut.String(), "is PENDING: delivery is not FAILED")
	require.Contains(t, errOut.String(), "delivery 999999: not found")

	// Usage mistakes exit 2.
	for _, args := range [][]string{{}, {"retry"}, {"retry", "abc"}, {"list", "-state", "LOST"}, {"frob"}} {
		require.Equal(t, 2, runAlerts(ctx, args, []string{"DATABASE_URL=" + url}, &out, &errOut), "%v", args)
	}
}

func TestDispatcherConfigFromTheFile(t *testing.T) {
	t.Parallel()
	cfg, err := config.ParseEnv([]byte(`
alerts:
  base_url: https://vigil.example.com
  retry_base: 2s
  retry_cap: 1m
  webhooks:
    - name: pager
      url: https://pager.example.com/hook
      headers: {Authorization: "Bearer ${PAGER_TOKEN}"}
      events: [down]
      timeout: 3s
      max_attempts: 4
    - name: chat
      url: ${CHAT_URL}
      format: discord
`), []string{"PAGER_TOKEN=t0k", "CHAT_URL=https://chat.example.com/api/webhooks/1/x"})
	require.NoError(t, err)
	dc := dispatcherConfig(cfg, "east-1")
	require.Equal(t, "east-1", dc.Instance)
	require.Equal(t, "https://vigil.example.com", dc.BaseURL)
	require.Equal(t, 2*time.Second, dc.RetryBase)
	require.Equal(t, time.Minute, dc.RetryCap)
	require.Equal(t, []monitoring.Webhook{
		{Name: "pager", URL: "https://pager.example.com/hook", Headers: map[string]string{"Authorization": "Bearer t0k"},
			Events: []string{"DOWN"}, Format: "json", Timeout: 3 * time.Second, MaxAttempts: 4},
		{Name: "chat", URL: "https://chat.example.com/api/webhooks/1/x", Events: []string{"DOWN", "UP"}, Format: "discord",
			Timeout: 10 * time.Second, MaxAttempts: 8},
	}, dc.Webhooks)
}

// The "done when", in one process: two replicas (scheduler + dispatcher each)
// watch a target; it goes down, one replica is stopped, it comes back. The receiver gets
// one DOWN and one UP alert, each once.
func TestTwoReplicasAnnounceOneOutageOnce(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	pool := testPool(t, url)
	store := monitoring.NewStore(pool)

	var healthy atomic.Bool
	healthy.Store(true)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			http.Error(w, "broken", http.StatusServiceUnavailable)
		}
	}))
	defer target.Close()
	var mu sync.Mutex
	posts := map[string][]string{} // idempotency key -> kinds received
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		posts[r.Header.Get("Idempotency-Key")] = append(posts[r.Header.Get("Idempotency-Key")], string(body))
	}))
	defer receiver.Close()
	received := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, p := range posts {
			n += len(p)
		}
		return n
	}

	cfg, err := config.ParseEnv([]byte(fmt.Sprintf(`
scheduler: {lease: 2s, poll: 20ms, retry_base: 100ms, retry_cap: 500ms}
services:
  - {name: shop, url: "%s/health", interval: 1s, timeout: 500ms}
alerts:
  failure_threshold: 1
  retry_base: 50ms
  retry_cap: 200ms
  webhooks:
    - {name: ops, url: "%s/hook", timeout: 1s}
`, target.URL, receiver.URL)), nil)
	require.NoError(t, err)
	groups, services := configSpecs(cfg)
	_, err = store.SyncConfig(context.Background(), groups, services)
	require.NoError(t, err)

	startReplica := func(name string) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		reg := prometheus.NewRegistry()
		sc := cfg.Scheduler
		sched := monitoring.NewScheduler(store, monitoring.NewHTTPProber(time.Second), monitoring.SchedulerConfig{
			Instance: monitoring.Instance{Name: name, Addr: "-", Version: "test"},
			Workers:  2, Lease: sc.Lease, Poll: sc.Poll, MaxAttempts: sc.MaxAttempts, RetryBase: sc.RetryBase, RetryCap: sc.RetryCap,
			FailureThreshold: cfg.Alerts.FailureThreshold, SuccessThreshold: cfg.Alerts.SuccessThreshold,
			AlertBeforeFirstUp: cfg.Alerts.AlertBeforeFirstUp,
			ProducerEvery:      100 * time.Millisecond, ShutdownGrace: 100 * time.Millisecond,
		}, monitoring.NewMetrics(reg), log)
		schedDone := make(chan struct{})
		go func() {
			defer close(schedDone)
			_ = sched.Run(ctx)
		}()
		dispatcherDone := startDispatcher(ctx, store, cfg, name, reg, log)
		var once sync.Once
		stop = func() {
			once.Do(func() {
				cancel()
				<-schedDone
				<-dispatcherDone
			})
		}
		t.Cleanup(stop)
		return stop
	}
	stopA := startReplica("replica-a")
	startReplica("replica-b")

	alertState := func() string {
		var s string
		_ = pool.QueryRow(context.Background(), `SELECT coalesce(max(alert_state), '') FROM service_status`).Scan(&s)
		return s
	}
	waitUntil(t, "the service to be seen UP", func() bool { return alertState() == "UP" })
	healthy.Store(false)
	waitUntil(t, "the DOWN alert", func() bool { return received() == 1 })
	stopA()
	healthy.Store(true)
	waitUntil(t, "the UP alert", func() bool { return received() == 2 })
	waitUntil(t, "both deliveries recorded", func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM alert_delivery WHERE state = 'DELIVERED'`) == 2
	})

	require.Equal(t, 2, queryInt(t, pool, `SELECT count(*) FROM alert_outbox`), "one DOWN and one UP event")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, posts, 2, "two alerts, each with its own key")
	var kinds []string
	for _, bodies := range posts {
		require.Len(t, bodies, 1, "each alert received once")
		switch {
		case bytes.Contains([]byte(bodies[0]), []byte(`"kind":"DOWN"`)):
			kinds = append(kinds, "DOWN")
		case bytes.Contains([]byte(bodies[0]), []byte(`"kind":"UP"`)):
			kinds = append(kinds, "UP")
		}
	}
	require.ElementsMatch(t, []string{"DOWN", "UP"}, kinds)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAlertReceiverDropsRepeatsAndCanFailOnPurpose(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	srv := httptest.NewServer(&alertReceiver{out: &out, failFirst: 1, seen: map[string]bool{}})
	defer srv.Close()
	post := func(key string) int {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/hook", bytes.NewBufferString(`{"kind":"DOWN","text":"shop is DOWN"}`))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 500, post("k1"), "-fail-first 1")
	require.Equal(t, 200, post("k1"))
	require.Equal(t, 200, post("k1"), "a repeat is acknowledged and dropped")
	resp, err := http.Get(srv.URL + "/")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.JSONEq(t, `{"alerts": [{"kind":"DOWN","text":"shop is DOWN"}]}`, string(body))
	require.Contains(t, out.String(), "answered 500 on purpose")
	require.Contains(t, out.String(), "/hook shop is DOWN key=k1")
	require.Contains(t, out.String(), "duplicate dropped key=k1")
}
