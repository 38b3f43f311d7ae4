package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServicesAPIKeepsItsFieldNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.addService(t, service{name: "storefront", group: "web"})
	b.addResult(t, id, result{ago: 30, status: "UP", latency: 12.5, by: "replica-a"})
	b.setStatus(t, id)
	b.addService(t, service{name: "fresh"})

	var out struct {
		Services []map[string]any `json:"services"`
	}
	b.getJSON(t, "/api/v1/services", http.StatusOK, &out)
	require.Len(t, out.Services, 2)
	want := []string{"name", "group", "url", "enabled", "interval_seconds", "status", "last_slot",
		"last_checked_at", "latency_ms", "checked_by"}
	for _, s := range out.Services {
		require.ElementsMatch(t, want, keys(s))
	}
	sf := out.Services[0]
	require.Equal(t, "storefront", sf["name"])
	require.Equal(t, "web", sf["group"])
	require.Equal(t, "UP", sf["status"])
	require.Equal(t, 12.5, sf["latency_ms"])
	require.Equal(t, "replica-a", sf["checked_by"])
	require.Equal(t, "https://user:xxxxx@example.test/health", sf["url"])
	require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, sf["last_slot"])
	fresh := out.Services[1]
	require.Equal(t, "PENDING", fresh["status"])
	require.Nil(t, fresh["group"])
	require.Nil(t, fresh["last_checked_at"])
}

func TestStaticAssetsAreHashedAndCached(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc := b.page(t, "/", http.StatusOK)
	var css string
	for _, l := range elements(doc, "link") {
		if attr(l, "rel") == "stylesheet" {
			css = attr(l, "href")
		}
	}
	require.Regexp(t, regexp.MustCompile(`^/static/[0-9a-f]{16}/app\.css$`), css)

	rec := b.get(t, css)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Header().Get("Content-Type"), "text/css")
	require.Contains(t, rec.Header().Get("Cache-Control"), "immutable")
	require.Contains(t, rec.Body.String(), ".badge")

	stale := b.get(t, "/static/0000000000000000/app.css")
	require.Equal(t, http.StatusOK, stale.Code, "an old page still gets the current file")
	require.Equal(t, "no-cache", stale.Header().Get("Cache-Control"))
	require.Equal(t, http.StatusNotFound, b.get(t, "/static/0000000000000000/nope.js").Code)

	var js string
	for _, s := range elements(doc, "script") {
		js = attr(s, "src")
	}
	rec = b.get(t, js)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Contains(t, rec.Header().Get("Content-Type"), "javascript")
}

func TestLargePagesAreCompressed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		b.addService(t, service{name: n})
	}
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := serve(b, req)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "gzip", rec.Header().Get("Content-Encoding"))
}

func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var h map[string]string
	b.getJSON(t, "/healthz", http.StatusOK, &h)
	require.Equal(t, map[string]string{"status": "ok", "instance": "replica-test"}, h)
	b.getJSON(t, "/readyz", http.StatusOK, &h)
	require.Equal(t, "ready", h["status"])
	rec := b.get(t, "/metrics")
	require.Equal(t, http.StatusOK, rec.Code)
}

func TestUnknownPageIsAnHTMLNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc := b.page(t, "/no/such/page", http.StatusNotFound)
	require.Equal(t, "Not Found", text(one(t, doc, "error-title")))
	require.True(t, strings.HasPrefix(text(one(t, doc, "served-by")), "Served by"))
}
