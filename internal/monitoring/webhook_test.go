package monitoring_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

func sampleEvent() monitoring.AlertEvent {
	latency := 12.5
	status := 503
	return monitoring.AlertEvent{
		ID: 7, Key: "job-42-DOWN", Kind: "DOWN", Service: "billing api", Group: "core", Slot: 1_777_777_200,
		Reason: "HTTP 503 <b>&</b> @everyone", LatencyMS: &latency, HTTPStatus: &status,
		TargetURL: "http://127.0.0.1:8081/health", CreatedAt: time.Date(2026, 5, 3, 3, 0, 1, 0, time.UTC),
	}
}

func TestWebhookBodies(t *testing.T) {
	t.Parallel()
	e := sampleEvent()
	scenarios := []struct {
		format string
		want   map[string]any
	}{
		{"slack", map[string]any{
			"text": "🔴 billing api (core) is DOWN: HTTP 503 &lt;b&gt;&amp;&lt;/b&gt; @everyone <http://vigil.test/services/billing%20api|details>",
		}},
		{"discord", map[string]any{
			"content":          "🔴 billing api (core) is DOWN: HTTP 503 <b>&</b> @everyone\nhttp://vigil.test/services/billing%20api",
			"allowed_mentions": map[string]any{"parse": []any{}},
		}},
		{"json", map[string]any{
			"event_id": 7.0, "event_key": "job-42-DOWN", "idempotency_key": monitoring.IdempotencyKey("job-42-DOWN", "ops"),
			"kind": "DOWN", "service": "billing api", "group": "core", "slot": "2026-05-03T03:00:00Z",
			"occurred_at": "2026-05-03T03:00:01Z", "reason": "HTTP 503 <b>&</b> @everyone", "latency_ms": 12.5,
			"http_status": 503.0, "down_seconds": nil, "target_url": "http://127.0.0.1:8081/health",
			"url":  "http://vigil.test/services/billing%20api",
			"text": "🔴 billing api (core) is DOWN: HTTP 503 <b>&</b> @everyone",
		}},
	}
	for _, sc := range scenarios {
		body, err := monitoring.WebhookBody(sc.format, e, "ops", "http://vigil.test/")
		require.NoError(t, err, sc.format)
		var got map[string]any
		require.NoError(t, json.Unmarshal(body, &got), sc.format)
		require.Equal(t, sc.want, got, sc.format)
	}
	_, err := monitoring.WebhookBody("xml", e, "ops", "http://vigil.test")
	require.Error(t, err)
}

func TestDiscordBodyStaysUnderItsLimit(t *testing.T) {
	t.Parallel()
	e := sampleEvent()
	e.Reason = strings.Repeat("x", 5000)
	body, err := monitoring.WebhookBody("discord", e, "ops", "http://vigil.test")
	require.NoError(t, err)
	var got struct{ Content string }
	require.NoError(t, json.Unmarshal(body, &got))
	require.LessOrEqual(t, len([]rune(got.Content)), 2000)
}

func TestRecoveryTextSaysHowLongTheServiceWasDown(t *testing.T) {
	t.Parallel()
	for seconds, want := range map[float64]string{
		42: "after 42s", 330: "after 5m30s", 300: "after 5m", 8100: "after 2h15m", 7200: "after 2h", 3*86400 + 4*3600: "after 3d4h",
	} {
		e := sampleEvent()
		e.Kind, e.Reason, e.DownSeconds = "UP", "", &seconds
		p := monitoring.NewWebhookPayload(e, "ops", "http://vigil.test")
		require.Equal(t, "✅ billing api (core) is UP again "+want, p.Text)
		require.Nil(t, p.Reason)
	}
}

func TestIdempotencyKeyIsPerEventAndWebhook(t *testing.T) {
	t.Parallel()
	k := monitoring.IdempotencyKey("job-1-DOWN", "ops")
	require.Equal(t, k, monitoring.IdempotencyKey("job-1-DOWN", "ops"), "stable")
	require.NotEqual(t, k, monitoring.IdempotencyKey("job-1-DOWN", "chat"))
	require.NotEqual(t, k, monitoring.IdempotencyKey("job-1-UP", "ops"))
	require.Regexp(t, `^vigil-[0-9a-f]{32}$`, k)
}

func TestDeliveryBackoff(t *testing.T) {
	t.Parallel()
	base, ceiling := time.Second, 30*time.Second
	for attempt, full := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second, 6: 30 * time.Second, 40: 30 * time.Second} {
		for range 50 {
			d := monitoring.DeliveryBackoff(attempt, base, ceiling, 0)
			require.GreaterOrEqual(t, d, full/2, "attempt %d", attempt)
			require.LessOrEqual(t, d, full, "attempt %d", attempt)
		}
	}
	// A receiver's Retry-After is honoured, up to the ceiling.
	require.Equal(t, 20*time.Second, monitoring.DeliveryBackoff(1, base, ceiling, 20*time.Second))
	require.Equal(t, ceiling, monitoring.DeliveryBackoff(1, base, ceiling, time.Hour))
}

func TestWebhookSends(t *testing.T) {
	t.Parallel()
	require.True(t, monitoring.Webhook{}.Sends("DOWN"), "no list means every event")
	w := monitoring.Webhook{Events: []string{"down"}}
	require.True(t, w.Sends("DOWN"))
	require.False(t, w.Sends("UP"))
}

func TestSendErrorsDoNotLeakTheURL(t *testing.T) {
	t.Parallel()
	redirect := httptest.NewServer(http.RedirectHandler("http://elsewhere.test/", http.StatusMovedPermanently))
	defer redirect.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	sender := monitoring.NewWebhookSender("http://vigil.test", nil)
	d := monitoring.Delivery{ID: 1, Webhook: "chat", Attempt: 1, Event: sampleEvent()}

	res := sender.Send(context.Background(), monitoring.Webhook{URL: redirect.URL + "/T0/s3cret", Timeout: time.Second}, d)
	require.False(t, res.Delivered())
	require.Equal(t, http.StatusMovedPermanently, res.HTTPStatus)
	require.Contains(t, res.Err, "redirects are not followed")

	res = sender.Send(context.Background(), monitoring.Webhook{URL: closed.URL + "/T0/s3cret", Timeout: time.Second}, d)
	require.False(t, res.Delivered())
	require.Zero(t, res.HTTPStatus)
	require.Contains(t, res.Err, "connection refused")
	require.NotContains(t, res.Err, "s3cret")

	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices the client leaving only once the body is read
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	res = sender.Send(context.Background(), monitoring.Webhook{URL: slow.URL + "/s3cret", Timeout: 50 * time.Millisecond}, d)
	require.Equal(t, "no answer within 50ms", res.Err)
}
