package monitoring_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

func TestHTTPProber(t *testing.T) {
	t.Parallel()
	var gotAgent string
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		gotAgent = r.UserAgent()
		_, _ = w.Write([]byte(`{"status":"UP"}`))
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/login", http.StatusFound) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		// More than 1 MiB, then the body never ends: a probe that read past
		// its cap would wait here until its timeout and report DOWN.
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20+1)))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	// A port nothing listens on, for a refused connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedURL := "http://" + ln.Addr().String() + "/"
	ln.Close()

	scenarios := []struct {
		name       string
		url        string
		timeout    time.Duration
		wantStatus string
		wantCode   int
		wantReason string
	}{
		{"2xx is UP", srv.URL + "/ok", time.Second, "UP", 200, ""},
		{"5xx is DOWN", srv.URL + "/fail", time.Second, "DOWN", 503, "HTTP 503 Service Unavailable"},
		{"redirect not followed", srv.URL + "/moved", time.Second, "DOWN", 302, `redirect to "/login"`},
		{"timeout", srv.URL + "/slow", 200 * time.Millisecond, "DOWN", 0, "timeout after 200ms"},
		{"refused", closedURL, time.Second, "DOWN", 0, "connection refused"},
		{"body capped at 1 MiB", srv.URL + "/huge", 2 * time.Second, "UP", 200, ""},
	}
	prober := monitoring.NewHTTPProber(time.Second)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			res := prober.Probe(context.Background(), sc.url, sc.timeout)
			require.Equal(t, sc.wantStatus, res.Status, res.Error)
			require.Equal(t, sc.wantCode, res.HTTPStatus)
			if sc.wantReason == "" {
				require.Empty(t, res.Error)
			} else {
				require.Contains(t, res.Error, sc.wantReason)
			}
			require.Greater(t, res.Latency, time.Duration(0))
		})
	}
	require.True(t, strings.HasPrefix(gotAgent, "Vigil/"), "User-Agent names Vigil: %q", gotAgent)
}

func TestHTTPProberDNSFailureIsDown(t *testing.T) {
	t.Parallel()
	res := monitoring.NewHTTPProber(time.Second).Probe(context.Background(), "http://no-such-host.invalid/health", 2*time.Second)
	require.Equal(t, "DOWN", res.Status)
	require.Regexp(t, `DNS lookup failed|timeout`, res.Error)
}
