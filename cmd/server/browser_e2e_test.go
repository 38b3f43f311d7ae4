package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/pgtest"
)

// newBrowser starts a headless Chromium (Debian's package) for one test.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs Debian's chromium package")
		}
		t.Skip("chromium is not installed: apt-get install chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser, which lives as long as ctx; a
	// browser that does not start within a minute fails the test instead of
	// hanging the suite.
	watchdog := time.AfterFunc(time.Minute, cancelAlloc)
	_, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1`))
	watchdog.Stop()
	require.NoError(t, err, "start chromium")
	return ctx
}

// newTab opens another tab in the same browser.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	_, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1`)) // opens the tab
	require.NoError(t, err)
	return ctx
}

// within bounds one browser step, so a page that never shows what the test
// waits for fails the test rather than hanging it.
func within(t *testing.T, tab context.Context) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rowStatuses reads the overview as a viewer sees it: service name -> status
// badge text, from the rows' data-testid elements.
const rowStatusesJS = `(() => {
  const out = {};
  for (const row of document.querySelectorAll('[data-testid="service-row"]')) {
    const name = row.querySelector('[data-testid="service-name"]').textContent.trim();
    out[name] = row.querySelector('[data-testid="status"]').dataset.status;
  }
  return out;
})()`

func readStatuses(t *testing.T, tab context.Context) map[string]string {
	t.Helper()
	got, err := chromedp.Run(within(t, tab), chromedp.Evaluate[map[string]string](rowStatusesJS))
	require.NoError(t, err)
	return got
}

// Two replicas serve the same picture; a service turning DOWN shows up
// without a reload; the jobs page names the replica holding a job.
func TestBrowserTwoReplicasShowTheSamePicture(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	dbURL := pgtest.NewEmptyDatabase(t)

	var down atomic.Bool
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select { // holds its job RUNNING for as long as the test needs
		case <-stop:
		case <-r.Context().Done():
		}
	})
	target := httptest.NewServer(mux)
	t.Cleanup(target.Close)
	cfg := writeConfig(t, `
scheduler: {lease: 30s, poll: 200ms, spread: 0s}
groups: [{name: shop}]
services:
  - {name: checkout, group: shop, url: "`+target.URL+`/health", interval: 1s, timeout: 2s}
  - {name: search, group: shop, url: "`+target.URL+`/health", interval: 2s, timeout: 2s}
  - {name: reports, url: "`+target.URL+`/slow", interval: 1h, timeout: 25s}
`)
	a := startReplica(t, "replica-a", dbURL, cfg)
	b := startReplica(t, "replica-b", dbURL, cfg)
	pool := testPool(t, dbURL)
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM service_status WHERE status = 'UP'`) == 2
	}, 30*time.Second, 100*time.Millisecond)

	tabA, tabB := newTab(t, browser), newTab(t, browser)
	for _, step := range []struct {
		tab  context.Context
		addr string
	}{{tabA, a.addr}, {tabB, b.addr}} {
		require.NoError(t, chromedp.Do(within(t, step.tab),
			chromedp.Navigate("http://"+step.addr+"/"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="service-row"]`)),
		))
	}
	want := map[string]string{"checkout": "UP", "search": "UP", "reports": "PENDING"}
	require.Equal(t, want, readStatuses(t, tabA), "replica-a's overview")
	require.Equal(t, want, readStatuses(t, tabB), "replica-b's overview")

	// Mark the page: a full reload would lose the mark.
	_, err := chromedp.Run(within(t, tabA), chromedp.Evaluate[int](`window.vigilTestMark = 42`))
	require.NoError(t, err)
	down.Store(true)
	require.Eventually(t, func() bool {
		return readStatuses(t, tabA)["checkout"] == "DOWN"
	}, 30*time.Second, 200*time.Millisecond, "checkout turns DOWN on the open page")
	mark, err := chromedp.Run(within(t, tabA), chromedp.Evaluate[int](`window.vigilTestMark || 0`))
	require.NoError(t, err)
	require.Equal(t, 42, mark, "the page updated in place, without a reload")

	// The jobs page shows which replica holds the slow job.
	owner := queryString(t, pool, `SELECT owner_instance FROM monitoring_job j JOIN monitored_service s ON s.id = j.service_id
WHERE s.name = 'reports' AND j.state = 'RUNNING'`)
	require.NoError(t, chromedp.Do(within(t, tabB),
		chromedp.Navigate("http://"+b.addr+"/jobs?state=RUNNING"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="job-row"]`)),
	))
	held, err := chromedp.Run(within(t, tabB), chromedp.Evaluate[[]string](`[...document.querySelectorAll('[data-testid="job-row"]')]
  .filter(r => r.querySelector('[data-testid="job-service"]').textContent.trim() === 'reports')
  .map(r => r.querySelector('[data-testid="job-owner"]').textContent.trim())`))
	require.NoError(t, err)
	require.Equal(t, []string{owner}, held)
}
