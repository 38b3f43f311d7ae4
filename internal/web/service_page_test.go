package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServicePage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.addService(t, service{name: "payments", group: "backend", interval: 10})
	var jobs []int64
	for i := 75; i >= 1; i-- {
		r := result{ago: i * 10, status: "UP", latency: float64(10 + i%5), by: "replica-a", httpCode: 200}
		if i <= 2 {
			r = result{ago: i * 10, status: "DOWN", latency: 2, by: "replica-b", reason: "HTTP 503", httpCode: 503, attempt: 2}
		}
		jobs = append(jobs, b.addResult(t, id, r))
	}
	b.setStatus(t, id)
	b.addAlert(t, id, jobs[len(jobs)-2], "DOWN", "HTTP 503")

	doc := b.page(t, "/services/payments", http.StatusOK)
	require.Equal(t, "payments", text(one(t, doc, "service-name")))
	require.Equal(t, "DOWN", attr(one(t, one(t, doc, "service-title"), "status"), "data-status"))
	require.Regexp(t, `^DOWN since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$`, text(one(t, doc, "current-status")))
	require.Equal(t, "replica-b", text(one(t, doc, "checked-by")))
	require.Equal(t, "HTTP 503", text(one(t, doc, "reason")))
	require.Equal(t, "https://user:xxxxx@example.test/health", text(one(t, doc, "config-url")), "the password is hidden")
	require.Equal(t, "10 s", text(one(t, doc, "config-interval")))
	require.Equal(t, "2 s", text(one(t, doc, "config-timeout")))
	require.Equal(t, "97.3%", text(one(t, doc, "uptime-24h")))

	// Both charts are server-rendered SVG, labelled in words.
	latency := one(t, doc, "latency-chart")
	require.Len(t, elements(latency, "svg"), 1)
	require.Contains(t, attr(elements(latency, "svg")[0], "aria-label"), "Latency over the last 24 hours")
	avail := one(t, doc, "availability-chart")
	require.Equal(t, "Availability over the last 24 hours: 97.3% (73 of 75 checks UP).",
		attr(elements(avail, "svg")[0], "aria-label"))
	require.NotEmpty(t, findAll(avail, "class", "bar-down"))

	// Results: newest first, who checked, and paged.
	rows := byTestID(doc, "result-row")
	require.Len(t, rows, 50)
	require.Equal(t, "replica-b", text(one(t, rows[0], "result-by")))
	require.Equal(t, "HTTP 503", text(one(t, rows[0], "result-reason")))
	require.Equal(t, "UP", attr(one(t, rows[2], "status"), "data-status"))
	next := attr(one(t, doc, "next-page"), "href")
	require.Empty(t, byTestID(doc, "first-page"))

	page2 := b.page(t, next, http.StatusOK)
	rows2 := byTestID(page2, "result-row")
	require.Len(t, rows2, 25)
	require.Empty(t, byTestID(page2, "next-page"))
	require.NotEmpty(t, byTestID(page2, "first-page"))
	seen := map[string]bool{}
	for _, r := range append(rows, rows2...) {
		require.False(t, seen[attr(r, "data-job")], "no result on two pages")
		seen[attr(r, "data-job")] = true
	}
	require.Len(t, seen, 75)

	// Alerts raised for it.
	alerts := byTestID(doc, "alert-row")
	require.Len(t, alerts, 1)
	require.Equal(t, "DOWN", attr(one(t, alerts[0], "status"), "data-status"))

	// Another range.
	doc = b.page(t, "/services/payments?range=1h", http.StatusOK)
	require.Contains(t, attr(elements(one(t, doc, "availability-chart"), "svg")[0], "aria-label"), "over the last hour")
	var current []string
	for _, a := range elements(one(t, doc, "ranges"), "a") {
		if attr(a, "aria-current") == "true" {
			current = append(current, text(a))
		}
	}
	require.Equal(t, []string{"1h"}, current)
}

func TestServicePageWithoutResults(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addService(t, service{name: "fresh"})
	doc := b.page(t, "/services/fresh", http.StatusOK)
	require.Contains(t, text(one(t, doc, "empty-results")), "No results yet: the first check runs within one interval (30 s).")
	require.Contains(t, text(one(t, doc, "latency-chart")), "No results in this range")
	require.NotEmpty(t, byTestID(doc, "empty-alerts"))
}

func TestServicePageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addService(t, service{name: "payments"})

	doc := b.page(t, "/services/nope", http.StatusNotFound)
	require.Equal(t, `No service is named "nope". The overview lists them all.`, text(one(t, doc, "error-message")))
	doc = b.page(t, "/services/payments?range=2w", http.StatusBadRequest)
	require.Equal(t, "range must be one of 1h, 24h, 7d, 30d", text(one(t, doc, "error-message")))

	var e struct {
		Error string `json:"error"`
	}
	b.getJSON(t, "/api/v1/services/nope", http.StatusNotFound, &e)
	require.Contains(t, e.Error, `No service is named "nope"`)
	b.getJSON(t, "/api/v1/services/payments?cursor=abc", http.StatusBadRequest, &e)
	require.Equal(t, "cursor must be the next_cursor value of an earlier response", e.Error)
	b.getJSON(t, "/api/v1/services/payments?limit=1000", http.StatusBadRequest, &e)
	require.Equal(t, "limit must be a whole number from 1 to 200", e.Error)
}

func TestServiceAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const name = "a/b c"
	id := b.addService(t, service{name: name, group: "web"})
	for i := 5; i >= 1; i-- {
		b.addResult(t, id, result{ago: i * 30, status: "UP", latency: 7, httpCode: 200})
	}
	b.setStatus(t, id)

	var out struct {
		Service    map[string]any   `json:"service"`
		Series     map[string]any   `json:"series"`
		Results    []map[string]any `json:"results"`
		NextCursor *string          `json:"next_cursor"`
		Alerts     []map[string]any `json:"alerts"`
	}
	b.getJSON(t, "/api/v1/services/"+url.PathEscape(name)+"?limit=3", http.StatusOK, &out)
	require.Equal(t, name, out.Service["name"])
	require.Equal(t, "UP", out.Service["status"])
	require.EqualValues(t, 30, out.Service["interval_seconds"])
	require.EqualValues(t, 2000, out.Service["timeout_ms"])
	require.Equal(t, "24h", out.Series["range"])
	require.Len(t, out.Series["points"], 60)
	require.Len(t, out.Results, 3)
	require.ElementsMatch(t, []string{"job_id", "slot", "status", "latency_ms", "http_status", "error", "attempt", "probed_by", "observed_at",
		"degraded", "failed_condition"}, keys(out.Results[0]))
	require.Equal(t, "http", out.Service["probe_type"])
	require.Equal(t, []any{}, out.Service["conditions"])
	require.Equal(t, false, out.Service["degraded"])
	require.NotNil(t, out.NextCursor)
	require.Empty(t, out.Alerts)

	b.getJSON(t, "/api/v1/services/"+url.PathEscape(name)+"?limit=3&cursor="+*out.NextCursor, http.StatusOK, &out)
	require.Len(t, out.Results, 2)
	require.Nil(t, out.NextCursor)
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
