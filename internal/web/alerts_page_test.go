package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAlertsPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.addService(t, service{name: "alpha"})
	z := b.addService(t, service{name: "zulu"})
	down := b.addResult(t, a, result{ago: 120, status: "DOWN", reason: "HTTP 500"})
	up := b.addResult(t, a, result{ago: 60, status: "UP"})
	other := b.addResult(t, z, result{ago: 30, status: "DOWN", reason: "refused"})
	downAlert := b.addAlert(t, a, down, "DOWN", "HTTP 500")
	upAlert := b.addAlert(t, a, up, "UP", "")
	b.addAlert(t, z, other, "DOWN", "refused")
	b.addDelivery(t, downAlert, "ops", "DELIVERED", 200, "")
	b.addDelivery(t, downAlert, "pager", "FAILED", 502, "HTTP 502 from the pager")
	b.exec(t, `UPDATE alert_outbox SET routed_at = clock_timestamp() WHERE id = $1`, upAlert)

	doc := b.page(t, "/alerts", http.StatusOK)
	rows := byTestID(doc, "alert-row")
	require.Len(t, rows, 3)
	require.Equal(t, "zulu", text(one(t, rows[0], "alert-service")), "newest first")
	require.Equal(t, "refused", text(one(t, rows[0], "alert-reason")))
	require.Equal(t, "UP", attr(one(t, rows[1], "status"), "data-status"))
	require.Contains(t, text(rows[1]), "down for 2m 5s")
	require.Equal(t, "waiting for a dispatcher to route it", text(one(t, rows[0], "delivery-none")))
	require.Equal(t, "not sent: no webhook takes UP alerts", text(one(t, rows[1], "delivery-none")))
	ops := row(t, rows[2], "webhook", "ops")
	require.Equal(t, "DELIVERED", attr(one(t, ops, "delivery-state"), "data-state"))
	require.Contains(t, text(ops), "HTTP 200")
	pager := row(t, rows[2], "webhook", "pager")
	require.Equal(t, "✖ FAILED", text(one(t, pager, "delivery-state")))
	require.Contains(t, text(pager), "gave up after 5 attempts")
	require.Equal(t, "HTTP 502 from the pager", text(one(t, pager, "delivery-error")))

	doc = b.page(t, "/alerts?service=alpha&limit=1", http.StatusOK)
	rows = byTestID(doc, "alert-row")
	require.Len(t, rows, 1)
	require.Equal(t, "UP", attr(one(t, rows[0], "status"), "data-status"))
	doc = b.page(t, attr(one(t, doc, "next-page"), "href"), http.StatusOK)
	rows = byTestID(doc, "alert-row")
	require.Len(t, rows, 1)
	require.Equal(t, "HTTP 500", text(one(t, rows[0], "alert-reason")))
	require.Empty(t, byTestID(doc, "next-page"))

	var out struct {
		Alerts     []map[string]any `json:"alerts"`
		NextCursor *string          `json:"next_cursor"`
	}
	b.getJSON(t, "/api/v1/alerts?service=zulu", http.StatusOK, &out)
	require.Len(t, out.Alerts, 1)
	require.Equal(t, "zulu", out.Alerts[0]["service"])
	require.Equal(t, "DOWN", out.Alerts[0]["kind"])
	require.Nil(t, out.Alerts[0]["routed_at"])
	require.Empty(t, out.Alerts[0]["deliveries"])
	require.Nil(t, out.NextCursor)

	b.getJSON(t, "/api/v1/alerts?service=alpha&limit=1&cursor="+id(downAlert+1), http.StatusOK, &out)
	require.Len(t, out.Alerts, 1)
	ds := out.Alerts[0]["deliveries"].([]any)
	require.Len(t, ds, 2)
	require.Equal(t, map[string]any{"webhook": "ops", "state": "DELIVERED", "attempts": 1.0, "max_attempts": 5.0,
		"last_error": nil, "last_http_status": 200.0, "next_attempt_at": nil, "finished_at": ds[0].(map[string]any)["finished_at"]},
		ds[0])
}

func TestAlertsPageEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc := b.page(t, "/alerts", http.StatusOK)
	require.Contains(t, text(one(t, doc, "empty-alerts")), "alerts.failure_threshold")
}
