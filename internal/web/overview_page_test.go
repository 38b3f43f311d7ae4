package web_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestOverviewShowsServicesByGroupWithHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	storefront := b.addService(t, service{name: "storefront", group: "web"})
	for i := 60; i >= 1; i-- {
		r := result{ago: i * 30, status: "UP", latency: 12, by: "replica-a", httpCode: 200}
		if i == 3 || i == 55 {
			r = result{ago: i * 30, status: "DOWN", latency: 3, by: "replica-b", reason: "connection refused"}
		}
		b.addResult(t, storefront, r)
	}
	b.setStatus(t, storefront)
	ledger := b.addService(t, service{name: "ledger", group: "backend"})
	b.addResult(t, ledger, result{ago: 2 * 86400, status: "UP", latency: 5}) // outside 24 h, inside 7 d
	b.addResult(t, ledger, result{ago: 40, status: "DOWN", latency: 2000, by: "replica-b", reason: "timeout after 2s"})
	b.setStatus(t, ledger)
	b.addService(t, service{name: "fresh", group: "backend"})
	b.addService(t, service{name: "archive", disabled: true})
	b.addInstance(t, instance{name: "replica-a", heartbeatAgo: 2})
	b.addInstance(t, instance{name: "replica-b", heartbeatAgo: 60})
	b.addJob(t, ledger, job{ago: 0, state: "READY"})
	b.addJob(t, ledger, job{ago: 1, state: "RUNNING", owner: "replica-a", leaseLeft: 20})
	b.addJob(t, storefront, job{ago: 5000, state: "FAILED", lastError: "lease expired"})

	doc := b.page(t, "/", http.StatusOK)

	// Groups in name order, the ungrouped last.
	var groups []string
	for _, g := range byTestID(doc, "group") {
		groups = append(groups, text(elements(g, "h2")[0]))
	}
	require.Equal(t, []string{"backend", "web", "Ungrouped"}, groups)

	sf := row(t, doc, "service", "storefront")
	require.Equal(t, "UP", attr(one(t, sf, "status"), "data-status"))
	require.Contains(t, text(one(t, sf, "status")), "UP", "the status is a word, not only a colour")
	require.Equal(t, "replica-a", text(one(t, sf, "checked-by")))
	require.Equal(t, "12 ms", text(one(t, sf, "latency")))
	// 58 of 60 results UP, all within 24 h.
	require.Equal(t, "96.7%", text(one(t, sf, "uptime-24h")))
	require.Equal(t, "96.7%", text(one(t, sf, "uptime-30d")))
	strip := one(t, sf, "strip")
	marks := elements(strip, "li")
	require.Len(t, marks, 50, "the strip holds the last 50 results")
	require.True(t, hasClass(marks[len(marks)-3], "d"), "the third newest result was DOWN")
	require.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC · DOWN · 3 ms · connection refused$`, attr(marks[len(marks)-3], "title"))
	require.Regexp(t, `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC · UP · 12 ms$`, attr(marks[len(marks)-1], "title"))
	require.Equal(t, "Last 50 results: 49 UP, 1 DOWN", attr(strip, "aria-label"))
	require.Equal(t, "/services/storefront", attr(elements(sf, "a")[0], "href"))

	lg := row(t, doc, "service", "ledger")
	require.Equal(t, "DOWN", attr(one(t, lg, "status"), "data-status"))
	require.Equal(t, "2.00 s", text(one(t, lg, "latency")))
	require.Equal(t, "0.0%", text(one(t, lg, "uptime-24h")))
	require.Equal(t, "50.0%", text(one(t, lg, "uptime-7d")))

	fresh := row(t, doc, "service", "fresh")
	require.Equal(t, "PENDING", attr(one(t, fresh, "status"), "data-status"))
	require.Equal(t, "—", text(one(t, fresh, "uptime-24h")))
	require.Empty(t, elements(one(t, fresh, "strip"), "li"))
	require.Equal(t, "PAUSED", attr(one(t, row(t, doc, "service", "archive"), "status"), "data-status"))

	sum := one(t, doc, "summary")
	require.Equal(t, "▲ 1 up", text(one(t, sum, "count-up")))
	require.Equal(t, "▼ 1 down", text(one(t, sum, "count-down")))
	require.Equal(t, "1 pending", text(one(t, sum, "count-pending")))
	require.Equal(t, "1 paused", text(one(t, sum, "count-paused")))
	require.Equal(t, "1 ready", text(one(t, sum, "jobs-ready")))
	require.Equal(t, "1 running", text(one(t, sum, "jobs-running")))
	require.Equal(t, "✖ 1 failed", text(one(t, sum, "jobs-failed")))
	require.Equal(t, "1 live", text(one(t, sum, "live-replicas")))
	require.Equal(t, "Served by replica-test", text(one(t, doc, "served-by")))
}

func TestOverviewWithoutServicesSaysWhatToDo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc := b.page(t, "/", http.StatusOK)
	require.Contains(t, text(one(t, doc, "empty-services")), "No services: add one to vigil.yaml.")
	require.Empty(t, byTestID(doc, "group"))
}

func TestOverviewFragmentIsTheContentAlone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addService(t, service{name: "storefront"})

	full := b.get(t, "/")
	require.Equal(t, http.StatusOK, full.Code)
	body := full.Body.String()
	require.Contains(t, body, `<main id="content"`)
	require.Contains(t, body, `data-refresh="5"`)

	frag := b.get(t, "/?fragment=1")
	require.Equal(t, http.StatusOK, frag.Code)
	doc := b.page(t, "/?fragment=1", http.StatusOK)
	require.Empty(t, elements(doc, "nav"), "no layout in a fragment")
	require.Empty(t, elements(doc, "main"))
	require.Len(t, byTestID(doc, "service-row"), 1)
	require.False(t, strings.Contains(frag.Body.String(), "<html"))
}

func TestOverviewAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.addService(t, service{name: "storefront", group: "web"})
	b.addResult(t, id, result{ago: 60, status: "UP", latency: 10})
	b.addResult(t, id, result{ago: 30, status: "DOWN", latency: 3, reason: "HTTP 503"})
	b.setStatus(t, id)

	var out struct {
		Summary struct {
			Services map[string]int `json:"services"`
		} `json:"summary"`
		Services []struct {
			Name   string              `json:"name"`
			Status string              `json:"status"`
			Uptime map[string]*float64 `json:"uptime"`
			Recent []map[string]any    `json:"recent"`
		} `json:"services"`
	}
	b.getJSON(t, "/api/v1/overview", http.StatusOK, &out)
	require.Equal(t, 1, out.Summary.Services["down"])
	require.Len(t, out.Services, 1)
	require.Equal(t, "DOWN", out.Services[0].Status)
	require.InDelta(t, 50.0, *out.Services[0].Uptime["24h"], 0.001)
	require.Len(t, out.Services[0].Recent, 2)
	require.Equal(t, "HTTP 503", out.Services[0].Recent[1]["error"], "recent results are oldest first")
}
