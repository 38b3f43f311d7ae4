package web_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJobsPageShowsTheQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.addService(t, service{name: "alpha"})
	z := b.addService(t, service{name: "zulu"})
	done := b.addResult(t, a, result{ago: 90, status: "UP", latency: 11, by: "replica-b", httpCode: 200})
	failed := b.addJob(t, a, job{ago: 60, state: "FAILED", owner: "replica-a", lastError: "lease expired on attempt 3 of 3 (owner replica-a)"})
	running := b.addJob(t, z, job{ago: 30, state: "RUNNING", owner: "replica-b", leaseLeft: 20})
	lapsed := b.addJob(t, a, job{ago: 20, state: "RUNNING", owner: "replica-c", leaseLeft: -5})
	ready := b.addJob(t, z, job{ago: 0, state: "READY"})

	doc := b.page(t, "/jobs", http.StatusOK)
	rows := byTestID(doc, "job-row")
	var ids []string
	for _, r := range rows {
		ids = append(ids, attr(r, "data-job"))
	}
	require.Equal(t, []string{id(ready), id(lapsed), id(running), id(failed), id(done)}, ids, "newest first")

	f := row(t, doc, "job", id(failed))
	require.True(t, hasClass(f, "failed"), "FAILED jobs stand out")
	require.Equal(t, "✖ FAILED", text(one(t, f, "status")))
	require.Equal(t, "lease expired on attempt 3 of 3 (owner replica-a)", text(one(t, f, "job-error")))

	r := row(t, doc, "job", id(running))
	require.False(t, hasClass(r, "failed"))
	require.Equal(t, "replica-b", text(one(t, r, "job-owner")))
	lease := one(t, r, "lease-remaining")
	ms, err := strconv.Atoi(attr(elements(lease, "span")[0], "data-countdown"))
	require.NoError(t, err)
	require.InDelta(t, 20000, ms, 3000, "lease remaining on the DB clock")
	require.Regexp(t, regexp.MustCompile(`^1\ds$|^20s$`), text(lease), "readable without JavaScript")
	require.Regexp(t, `^lapsed \ds ago$`, text(one(t, row(t, doc, "job", id(lapsed)), "lease-remaining")))

	d := row(t, doc, "job", id(done))
	require.Equal(t, "—", text(one(t, d, "lease-remaining")))
	require.Contains(t, text(d), "11 ms by replica-b", "which replica checked it and what it saw")

	// Filters, as a page.
	doc = b.page(t, "/jobs?state=running&service=zulu", http.StatusOK)
	rows = byTestID(doc, "job-row")
	require.Len(t, rows, 1)
	require.Equal(t, id(running), attr(rows[0], "data-job"))
	require.Equal(t, "zulu", attr(one(t, doc, "filter-service"), "value"))
	for _, o := range elements(one(t, doc, "filter-state"), "option") {
		_, selected := attrOK(o, "selected")
		require.Equal(t, attr(o, "value") == "RUNNING", selected, "option %s", attr(o, "value"))
	}

	doc = b.page(t, "/jobs?state=DONE&service=zulu", http.StatusOK)
	require.Contains(t, text(one(t, doc, "empty-jobs")), "No jobs match these filters.")
}

func TestJobsAPIPagesWithACursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.addService(t, service{name: "alpha"})
	z := b.addService(t, service{name: "zulu"})
	for i := range 120 {
		svc := a
		if i%3 == 0 {
			svc = z
		}
		b.addJob(t, svc, job{ago: 10000 - i, state: "READY"})
	}

	type page struct {
		Jobs []struct {
			ID      int64  `json:"id"`
			Service string `json:"service"`
		} `json:"jobs"`
		NextCursor *string `json:"next_cursor"`
	}
	seen := map[int64]bool{}
	last := int64(1 << 62)
	url := "/api/v1/jobs?limit=50"
	var sizes []int
	for url != "" {
		var p page
		b.getJSON(t, url, http.StatusOK, &p)
		sizes = append(sizes, len(p.Jobs))
		for _, j := range p.Jobs {
			require.Less(t, j.ID, last, "ids strictly decrease across pages")
			require.False(t, seen[j.ID])
			seen[j.ID], last = true, j.ID
		}
		url = ""
		if p.NextCursor != nil {
			url = "/api/v1/jobs?limit=50&cursor=" + *p.NextCursor
		}
	}
	require.Equal(t, []int{50, 50, 20}, sizes)
	require.Len(t, seen, 120)

	// A filter holds across pages.
	var p page
	b.getJSON(t, "/api/v1/jobs?service=zulu&limit=30", http.StatusOK, &p)
	require.Len(t, p.Jobs, 30)
	require.NotNil(t, p.NextCursor)
	b.getJSON(t, "/api/v1/jobs?service=zulu&limit=30&cursor="+*p.NextCursor, http.StatusOK, &p)
	require.Len(t, p.Jobs, 10)
	require.Nil(t, p.NextCursor)
	for _, j := range p.Jobs {
		require.Equal(t, "zulu", j.Service)
	}

	// The HTML page links to the next page with the filters kept.
	doc := b.page(t, "/jobs?service=alpha&limit=40", http.StatusOK)
	require.Len(t, byTestID(doc, "job-row"), 40)
	next := attr(one(t, doc, "next-page"), "href")
	require.Contains(t, next, "service=alpha")
	doc = b.page(t, next, http.StatusOK)
	require.Len(t, byTestID(doc, "job-row"), 40)
	require.Empty(t, byTestID(doc, "next-page"))
	require.NotEmpty(t, byTestID(doc, "first-page"))
}

func TestJobsAPIFieldsAndErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.addService(t, service{name: "alpha"})
	b.addResult(t, a, result{ago: 30, status: "DOWN", latency: 3, reason: "refused", by: "replica-b"})
	b.addJob(t, a, job{ago: 0, state: "RUNNING", owner: "replica-a", leaseLeft: 10})

	var out struct {
		Jobs       []map[string]any `json:"jobs"`
		NextCursor *string          `json:"next_cursor"`
	}
	b.getJSON(t, "/api/v1/jobs", http.StatusOK, &out)
	require.Len(t, out.Jobs, 2)
	require.Nil(t, out.NextCursor)
	for _, k := range []string{"id", "service", "slot", "state", "attempts", "owner_instance", "lease_until",
		"available_at", "last_error", "result"} {
		require.Contains(t, out.Jobs[0], k)
	}
	require.Equal(t, "RUNNING", out.Jobs[0]["state"])
	require.Equal(t, "replica-a", out.Jobs[0]["owner_instance"])
	require.Nil(t, out.Jobs[0]["result"])
	res := out.Jobs[1]["result"].(map[string]any)
	require.ElementsMatch(t, []string{"status", "latency_ms", "http_status", "error", "probed_by", "observed_at"}, keys(res))
	require.Equal(t, "refused", res["error"])
	require.Equal(t, "replica-b", res["probed_by"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, out.Jobs[0]["slot"], "RFC 3339, UTC")

	var e struct {
		Error string `json:"error"`
	}
	for target, want := range map[string]struct {
		code int
		msg  string
	}{
		"/api/v1/jobs?state=LOST":   {http.StatusBadRequest, "state must be one of READY, RUNNING, DONE, FAILED"},
		"/api/v1/jobs?limit=0":      {http.StatusBadRequest, "limit must be a whole number from 1 to 200"},
		"/api/v1/jobs?limit=x":      {http.StatusBadRequest, "limit must be a whole number from 1 to 200"},
		"/api/v1/jobs?cursor=-4":    {http.StatusBadRequest, "cursor must be the next_cursor value of an earlier response"},
		"/api/v1/jobs?service=nope": {http.StatusNotFound, `No service is named "nope".`},
		"/api/v1/nothing-here":      {http.StatusNotFound, "Not Found"},
	} {
		e.Error = ""
		b.getJSON(t, target, want.code, &e)
		require.Equal(t, want.msg, e.Error, target)
	}
	doc := b.page(t, "/jobs?state=LOST", http.StatusBadRequest)
	require.Equal(t, "state must be one of READY, RUNNING, DONE, FAILED", text(one(t, doc, "error-message")))
}

func id(n int64) string { return fmt.Sprint(n) }
