package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Service names and error texts are user data: every page must show them as
// text, never as markup.
func TestUserDataIsEscapedEverywhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const name = `<script>alert(1)</script>`
	const reason = `<img src=x onerror=alert(2)> & "quotes"`
	id := b.addService(t, service{name: name, group: `<b>grp</b>`})
	jobID := b.addResult(t, id, result{ago: 30, status: "DOWN", latency: 3, reason: reason, by: `<i>replica</i>`})
	b.setStatus(t, id)
	b.addJob(t, id, job{ago: 0, state: "FAILED", lastError: reason})
	b.addAlert(t, id, jobID, "DOWN", reason)

	escaped := "/services/" + url.PathEscape(name)
	for _, target := range []string{
		"/", escaped, "/jobs", "/jobs?service=" + url.QueryEscape(name), "/alerts", "/alerts?service=" + url.QueryEscape(name),
	} {
		t.Run(target, func(t *testing.T) {
			rec := b.get(t, target)
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			body := rec.Body.String()
			require.NotContains(t, body, "<script>alert(1)")
			require.NotContains(t, body, "<img src=x")
			require.NotContains(t, body, "<b>grp")
			require.NotContains(t, body, "<i>replica")

			doc := b.page(t, target, http.StatusOK)
			for _, s := range elements(doc, "script") {
				require.True(t, strings.HasPrefix(attr(s, "src"), "/static/"), "only the page's own script")
				require.Empty(t, text(s))
			}
			require.Empty(t, elements(doc, "img"))
			require.Contains(t, text(doc), name, "the name is shown as text")
		})
	}

	// The link to the service page round-trips the name.
	doc := b.page(t, "/", http.StatusOK)
	link := one(t, doc, "service-name")
	require.Equal(t, name, text(link))
	require.Equal(t, escaped, attr(link, "href"))
	doc = b.page(t, attr(link, "href"), http.StatusOK)
	require.Equal(t, name, text(one(t, doc, "service-name")))
	require.Equal(t, reason, text(one(t, doc, "reason")))

	var out struct {
		Services []struct {
			Name string `json:"name"`
		} `json:"services"`
	}
	b.getJSON(t, "/api/v1/services", http.StatusOK, &out)
	require.Equal(t, name, out.Services[0].Name)
}

func TestPagesSendAContentSecurityPolicy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := b.get(t, "/")
	require.Equal(t, http.StatusOK, rec.Code)
	csp := rec.Header().Get("Content-Security-Policy")
	require.Contains(t, csp, "script-src 'self'")
	require.NotContains(t, csp, "unsafe-inline")
}
