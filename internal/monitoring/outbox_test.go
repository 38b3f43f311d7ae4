package monitoring_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// receivedPost is one request a test receiver got.
type receivedPost struct {
	path    string
	key     string
	attempt string
	body    []byte
	header  http.Header
	at      time.Time
}

// receiver is a real local HTTP server standing in for a webhook endpoint. answer decides
// the status of the n-th request (1-based) to a path; nil answers 200.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	posts  []receivedPost
	answer func(path string, n int) int
}

func newReceiver(t *testing.T, answer func(path string, n int) int) *receiver {
	t.Helper()
	r := &receiver{answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.posts = append(r.posts, receivedPost{path: req.URL.Path, key: req.Header.Get("Idempotency-Key"),
			attempt: req.Header.Get("X-Vigil-Attempt"), body: body, header: req.Header.Clone(), at: time.Now()})
		n := 0
		for _, p := range r.posts {
			if p.path == req.URL.Path {
				n++
			}
		}
		r.mu.Unlock()
		status := http.StatusOK
		if r.answer != nil {
			status = r.answer(req.URL.Path, n)
		}
		w.WriteHeader(status)
		if status >= 300 {
			fmt.Fprint(w, "boom\nfrom the receiver")
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received(path string) []receivedPost {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []receivedPost
	for _, p := range r.posts {
		if path == "" || p.path == path {
			out = append(out, p)
		}
	}
	return out
}

func (r *receiver) hook(name, path string) monitoring.Webhook {
	return monitoring.Webhook{Name: name, URL: r.srv.URL + path, Format: "json", Timeout: 2 * time.Second, MaxAttempts: 5}
}

// addEvent writes an outbox event for a new job of the service, as Complete would.
func (b *testBundle) addEvent(t *testing.T, serviceID, slot int64, kind, reason string) (id int64, key string) {
	t.Helper()
	jobID := b.addJob(t, serviceID, slot, 3)
	key = fmt.Sprintf("job-%d-%s", jobID, kind)
	err := b.pool.QueryRow(context.Background(), `
INSERT INTO alert_outbox (event_key, service_id, job_id, scheduled_slot, kind, reason)
VALUES ($1, $2, $3, $4, $5, NULLIF($6, '')) RETURNING id`, key, serviceID, jobID, slot, kind, reason).Scan(&id)
	require.NoError(t, err)
	return id, key
}

// startDispatcher runs a dispatcher until the test ends.
func (b *testBundle) startDispatcher(t *testing.T, cfg monitoring.DispatcherConfig) *monitoring.DispatcherMetrics {
	t.Helper()
	if cfg.Poll == 0 {
		cfg.Poll = 10 * time.Millisecond
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase, cfg.RetryCap = 20*time.Millisecond, 200*time.Millisecond
	}
	metrics := monitoring.NewDispatcherMetrics(prometheus.NewRegistry())
	d := monitoring.NewDispatcher(b.store, cfg, metrics, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return metrics
}

// waitFor polls cond until it holds, failing the test after a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (b *testBundle) deliveryState(t *testing.T, eventID int64, webhook string) (state string, attempts int, lastError, owner string) {
	t.Helper()
	// No row yet (not routed) reads as state "".
	err := b.pool.QueryRow(context.Background(), `
SELECT coalesce(max(state), ''), coalesce(max(attempts), 0), coalesce(max(last_error), ''), coalesce(max(owner_instance), '')
FROM alert_delivery WHERE event_id = $1 AND webhook = $2`, eventID, webhook).Scan(&state, &attempts, &lastError, &owner)
	require.NoError(t, err)
	return state, attempts, lastError, owner
}

func TestDispatchersDeliverEachEventOncePerWebhook(t *testing.T) {
	t.Parallel()
	_, b := setup(t)
	rcv := newReceiver(t, nil)
	svc := b.addService(t, "inventory")
	const events = 12
	keys := map[string]bool{}
	for i := range events {
		kind := []string{"DOWN", "UP"}[i%2]
		_, key := b.addEvent(t, svc, int64(100+i), kind, "HTTP 503")
		keys[key] = true
	}

	hooks := []monitoring.Webhook{rcv.hook("ops", "/ops"), rcv.hook("chat", "/chat")}
	hooks[1].Format = "slack"
	var metrics []*monitoring.DispatcherMetrics
	for _, name := range []string{"replica-a", "replica-b", "replica-c"} {
		metrics = append(metrics, b.startDispatcher(t, monitoring.DispatcherConfig{Instance: name, Webhooks: hooks, Senders: 3}))
	}
	waitFor(t, "every delivery", func() bool {
		return b.count(t, `SELECT count(*) FROM alert_delivery WHERE state = 'DELIVERED'`) == 2*events
	})

	for _, hook := range hooks {
		posts := rcv.received("/" + hook.Name)
		require.Len(t, posts, events, "webhook %s: each event once", hook.Name)
		seen := map[string]bool{}
		for _, p := range posts {
			require.False(t, seen[p.key], "webhook %s got key %s twice", hook.Name, p.key)
			seen[p.key] = true
			require.Equal(t, "1", p.attempt)
		}
		for key := range keys {
			require.True(t, seen[monitoring.IdempotencyKey(key, hook.Name)], "webhook %s never got %s", hook.Name, key)
		}
	}
	// A dispatcher counts a delivery just after its mark commits, so the
	// counters can trail the table for a moment.
	delivered := func() float64 {
		var n float64
		for _, m := range metrics {
			n += testutil.ToFloat64(m.Deliveries.WithLabelValues("delivered"))
		}
		return n
	}
	waitFor(t, "the delivered counters", func() bool { return delivered() >= 2*events })
	require.EqualValues(t, 2*events, delivered())
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM alert_outbox WHERE routed_at IS NULL`))
}

func TestStalledDispatcherLosesTheDeliveryAndItsMarkIsRejected(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	rcv := newReceiver(t, nil)
	svc := b.addService(t, "inventory")
	eventID, eventKey := b.addEvent(t, svc, 100, "DOWN", "connection refused")
	hook := rcv.hook("ops", "/hook")

	// Replica A routes, claims with a short lease and POSTs: the receiver has the alert.
	_, created, err := b.store.RouteEvents(ctx, []monitoring.WebhookRoute{{Name: "ops", Down: true, Up: true, MaxAttempts: 5}})
	require.NoError(t, err)
	require.EqualValues(t, 1, created)
	claimed, err := b.store.ClaimDeliveries(ctx, monitoring.DeliveryClaimParams{
		Instance: "replica-a", Limit: 10, Lease: 300 * time.Millisecond, Webhooks: []string{"ops"}})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	a := claimed[0]
	res := monitoring.NewWebhookSender("http://vigil.test", nil).Send(ctx, hook, a)
	require.True(t, res.Delivered(), res.Err)
	require.Len(t, rcv.received(""), 1)

	// A stalls before recording success. Replica B cannot take the delivery while A's
	// lease holds, and takes it over once it expires on the DB clock.
	metricsB := b.startDispatcher(t, monitoring.DispatcherConfig{Instance: "replica-b", Webhooks: []monitoring.Webhook{hook}, BaseURL: "http://vigil.test"})
	waitFor(t, "replica-b to redeliver", func() bool {
		state, _, _, _ := b.deliveryState(t, eventID, "ops")
		return state == monitoring.DeliveryDelivered
	})
	posts := rcv.received("")
	require.Len(t, posts, 2, "delivered again after the lease expired")
	require.Equal(t, posts[0].key, posts[1].key, "the same Idempotency-Key from both replicas")
	require.Equal(t, monitoring.IdempotencyKey(eventKey, "ops"), posts[0].key)
	require.JSONEq(t, string(posts[0].body), string(posts[1].body), "the same body")
	require.Equal(t, []string{"1", "2"}, []string{posts[0].attempt, posts[1].attempt})
	require.GreaterOrEqual(t, posts[1].at.Sub(posts[0].at), 300*time.Millisecond-5*time.Millisecond, "not before the lease expired")

	// A wakes up: its mark is stale and changes nothing.
	require.ErrorIs(t, b.store.MarkDelivered(ctx, a.ID, a.Token, 200), monitoring.ErrStaleDelivery)
	_, err = b.store.RetryDeliveryLater(ctx, monitoring.DeliveryRetryParams{ID: a.ID, Token: a.Token, Error: "late", Delay: time.Second})
	require.ErrorIs(t, err, monitoring.ErrStaleDelivery)
	state, attempts, _, owner := b.deliveryState(t, eventID, "ops")
	require.Equal(t, monitoring.DeliveryDelivered, state)
	require.Equal(t, 2, attempts)
	require.Equal(t, "replica-b", owner)
	// The counter follows the committed mark by a moment.
	waitFor(t, "replica-b's delivered counter", func() bool {
		return testutil.ToFloat64(metricsB.Deliveries.WithLabelValues("delivered")) >= 1
	})
	require.EqualValues(t, 1, testutil.ToFloat64(metricsB.Deliveries.WithLabelValues("delivered")))
}

func TestDeliveryIsRetriedWithBackoffUntilTheReceiverRecovers(t *testing.T) {
	t.Parallel()
	_, b := setup(t)
	rcv := newReceiver(t, func(_ string, n int) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusAccepted
	})
	svc := b.addService(t, "inventory")
	eventID, _ := b.addEvent(t, svc, 100, "DOWN", "HTTP 500")
	base := 40 * time.Millisecond
	metrics := b.startDispatcher(t, monitoring.DispatcherConfig{Instance: "a", Webhooks: []monitoring.Webhook{rcv.hook("ops", "/hook")},
		RetryBase: base, RetryCap: time.Second, Poll: 5 * time.Millisecond})

	waitFor(t, "delivery", func() bool {
		state, _, _, _ := b.deliveryState(t, eventID, "ops")
		return state == monitoring.DeliveryDelivered
	})
	posts := rcv.received("")
	require.Len(t, posts, 4, "delivered on the fourth try")
	for i, p := range posts {
		require.Equal(t, posts[0].key, p.key)
		require.Equal(t, fmt.Sprint(i+1), p.attempt)
	}
	// Backoff after attempt n is at least half of base * 2^(n-1) (equal jitter).
	for n := 1; n <= 3; n++ {
		gap := posts[n].at.Sub(posts[n-1].at)
		floor := base << (n - 1) / 2
		require.GreaterOrEqual(t, gap, floor-2*time.Millisecond, "gap before attempt %d", n+1)
	}
	state, attempts, lastError, _ := b.deliveryState(t, eventID, "ops")
	require.Equal(t, monitoring.DeliveryDelivered, state)
	require.Equal(t, 4, attempts)
	require.Empty(t, lastError)
	require.Equal(t, 202, b.count(t, `SELECT last_http_status FROM alert_delivery WHERE event_id = $1`, eventID))
	// The counter follows the committed mark by a moment.
	waitFor(t, "the delivered counter", func() bool {
		return testutil.ToFloat64(metrics.Deliveries.WithLabelValues("delivered")) >= 1
	})
	require.EqualValues(t, 3, testutil.ToFloat64(metrics.Deliveries.WithLabelValues("retried")))
	require.EqualValues(t, 1, testutil.ToFloat64(metrics.Deliveries.WithLabelValues("delivered")))
}

func TestFailedDeliveryKeepsItsErrorAndCanBeRetried(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	var healthy sync.Map
	rcv := newReceiver(t, func(string, int) int {
		if _, ok := healthy.Load("yes"); ok {
			return http.StatusOK
		}
		return http.StatusInternalServerError
	})
	svc := b.addService(t, "inventory")
	eventID, _ := b.addEvent(t, svc, 100, "DOWN", "HTTP 500")
	hook := rcv.hook("ops", "/hook")
	hook.MaxAttempts = 2
	b.startDispatcher(t, monitoring.DispatcherConfig{Instance: "a", Webhooks: []monitoring.Webhook{hook}})

	waitFor(t, "the delivery to fail", func() bool {
		state, _, _, _ := b.deliveryState(t, eventID, "ops")
		return state == monitoring.DeliveryFailed
	})
	state, attempts, lastError, _ := b.deliveryState(t, eventID, "ops")
	require.Equal(t, monitoring.DeliveryFailed, state)
	require.Equal(t, 2, attempts)
	require.Equal(t, "HTTP 500: boom from the receiver", lastError)
	require.Len(t, rcv.received(""), 2)

	page, err := b.store.DeliveryList(ctx, monitoring.DeliveryListParams{State: monitoring.DeliveryFailed})
	require.NoError(t, err)
	require.Len(t, page.Deliveries, 1)
	row := page.Deliveries[0]
	require.Equal(t, "inventory", row.Service)
	require.Equal(t, "HTTP 500: boom from the receiver", row.LastError)
	require.Equal(t, 500, *row.LastHTTPStatus)
	require.NotNil(t, row.FinishedAt)
	counts, err := b.store.DeliveryCounts(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, counts.Failed)

	// The operator fixes the receiver and retries: a fresh series of attempts.
	healthy.Store("yes", true)
	require.NoError(t, b.store.RetryFailedDelivery(ctx, row.ID))
	waitFor(t, "the retried delivery", func() bool {
		state, _, _, _ := b.deliveryState(t, eventID, "ops")
		return state == monitoring.DeliveryDelivered
	})
	require.Len(t, rcv.received(""), 3)
	require.ErrorIs(t, b.store.RetryFailedDelivery(ctx, row.ID), monitoring.ErrDeliveryNotFailed)
	require.ErrorIs(t, b.store.RetryFailedDelivery(ctx, row.ID+1000), monitoring.ErrNotFound)
}

func TestRoutingFollowsEachWebhooksEvents(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "inventory")
	down, _ := b.addEvent(t, svc, 100, "DOWN", "HTTP 500")
	up, _ := b.addEvent(t, svc, 200, "UP", "")
	routes := []monitoring.WebhookRoute{
		{Name: "pager", Down: true, MaxAttempts: 3},
		{Name: "chat", Down: true, Up: true, MaxAttempts: 7},
	}
	events, created, err := b.store.RouteEvents(ctx, routes)
	require.NoError(t, err)
	require.EqualValues(t, 2, events)
	require.EqualValues(t, 3, created)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM alert_delivery WHERE webhook = 'pager' AND event_id = $1`, down))
	require.Equal(t, 0, b.count(t, `SELECT count(*) FROM alert_delivery WHERE webhook = 'pager' AND event_id = $1`, up))
	require.Equal(t, 7, b.count(t, `SELECT max_attempts FROM alert_delivery WHERE webhook = 'chat' AND event_id = $1`, up))

	// Routing again (another replica, the next tick) creates nothing.
	events, created, err = b.store.RouteEvents(ctx, routes)
	require.NoError(t, err)
	require.Zero(t, events)
	require.Zero(t, created)
	// Even an event routed twice keeps one delivery per webhook.
	_, err = b.pool.Exec(ctx, `UPDATE alert_outbox SET routed_at = NULL`)
	require.NoError(t, err)
	_, created, err = b.store.RouteEvents(ctx, routes)
	require.NoError(t, err)
	require.Zero(t, created)
	require.Equal(t, 3, b.count(t, `SELECT count(*) FROM alert_delivery`))

	// A replica that does not know a webhook leaves its deliveries alone.
	claimed, err := b.store.ClaimDeliveries(ctx, monitoring.DeliveryClaimParams{Instance: "x", Limit: 10, Lease: time.Minute, Webhooks: []string{"other"}})
	require.NoError(t, err)
	require.Empty(t, claimed)
}

func TestOutboxMetricsReportUndeliveredEvents(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	svc := b.addService(t, "inventory")
	b.addEvent(t, svc, 100, "DOWN", "HTTP 500")
	_, err := b.pool.Exec(ctx, `UPDATE alert_outbox SET created_at = clock_timestamp() - interval '90 seconds'`)
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	reg.MustRegister(monitoring.NewOutboxCollector(b.store))
	gauge := func(name string) float64 {
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() == name {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("no metric %s", name)
		return 0
	}
	require.EqualValues(t, 1, gauge("vigil_alert_events_unrouted"))
	require.InDelta(t, 90, gauge("vigil_alert_oldest_undelivered_event_age_seconds"), 5)

	_, _, err = b.store.RouteEvents(ctx, []monitoring.WebhookRoute{{Name: "ops", Down: true, Up: true, MaxAttempts: 1}})
	require.NoError(t, err)
	require.EqualValues(t, 0, gauge("vigil_alert_events_unrouted"))
	require.EqualValues(t, 1, gauge("vigil_alert_deliveries_pending"))
	require.InDelta(t, 90, gauge("vigil_alert_oldest_undelivered_event_age_seconds"), 5, "still waiting for its delivery")

	// The delivery gives up: failed, no longer pending, nothing left undelivered in flight.
	claimed, err := b.store.ClaimDeliveries(ctx, monitoring.DeliveryClaimParams{Instance: "a", Limit: 1, Lease: time.Minute, Webhooks: []string{"ops"}})
	require.NoError(t, err)
	state, err := b.store.RetryDeliveryLater(ctx, monitoring.DeliveryRetryParams{ID: claimed[0].ID, Token: claimed[0].Token, Error: "HTTP 500"})
	require.NoError(t, err)
	require.Equal(t, monitoring.DeliveryFailed, state)
	require.EqualValues(t, 0, gauge("vigil_alert_deliveries_pending"))
	require.EqualValues(t, 1, gauge("vigil_alert_deliveries_failed"))
	require.EqualValues(t, 0, gauge("vigil_alert_oldest_undelivered_event_age_seconds"))
}

func TestJSONBodyCarriesTheEvent(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	rcv := newReceiver(t, nil)
	svc := b.addService(t, "billing api")
	_, err := b.pool.Exec(ctx, `INSERT INTO monitoring_group (name) VALUES ('core')`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE monitored_service SET group_id = (SELECT id FROM monitoring_group WHERE name = 'core') WHERE id = $1`, svc)
	require.NoError(t, err)
	eventID, key := b.addEvent(t, svc, 1_777_777_200, "UP", "")
	_, err = b.pool.Exec(ctx, `UPDATE alert_outbox SET down_seconds = 330 WHERE id = $1`, eventID)
	require.NoError(t, err)
	hook := rcv.hook("ops", "/hook")
	hook.Headers = map[string]string{"Authorization": "Bearer t0ken"}
	b.startDispatcher(t, monitoring.DispatcherConfig{Instance: "a", Webhooks: []monitoring.Webhook{hook}, BaseURL: "https://vigil.example.com/"})
	waitFor(t, "delivery", func() bool { return len(rcv.received("")) == 1 })

	post := rcv.received("")[0]
	require.Equal(t, "Bearer t0ken", post.header.Get("Authorization"))
	require.Equal(t, "application/json", post.header.Get("Content-Type"))
	require.Contains(t, post.header.Get("User-Agent"), "Vigil/")
	require.Equal(t, key, post.header.Get("X-Vigil-Event"))
	var body map[string]any
	require.NoError(t, json.Unmarshal(post.body, &body))
	require.Equal(t, float64(eventID), body["event_id"])
	require.Equal(t, key, body["event_key"])
	require.Equal(t, post.key, body["idempotency_key"])
	require.Equal(t, "UP", body["kind"])
	require.Equal(t, "billing api", body["service"])
	require.Equal(t, "core", body["group"])
	require.Equal(t, "2026-05-03T03:00:00Z", body["slot"])
	require.Nil(t, body["reason"])
	require.Equal(t, 330.0, body["down_seconds"])
	require.Equal(t, "https://vigil.example.com/services/billing%20api", body["url"])
	require.Equal(t, "✅ billing api (core) is UP again after 5m30s", body["text"])
	_, err = time.Parse(time.RFC3339, body["occurred_at"].(string))
	require.NoError(t, err)
}
