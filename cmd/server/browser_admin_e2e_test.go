package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/pgtest"
)

// logIn signs in through the login form, as a person would.
func logIn(t *testing.T, tab context.Context, addr, name, password string) {
	t.Helper()
	require.NoError(t, chromedp.Do(within(t, tab),
		chromedp.Navigate("http://"+addr+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="login-form"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="login-name"]`), name),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="login-password"]`), password),
		chromedp.Click(chromedp.CSS(`[data-testid="login-submit"]`)),
	))
	require.Eventually(t, func() bool {
		loc, err := chromedp.Run(within(t, tab), chromedp.Location())
		return err == nil && !strings.Contains(loc, "/login")
	}, 15*time.Second, 100*time.Millisecond, "login as %s", name)
}

// An admin logs in on one replica, adds a service that the other replica
// starts checking within a slot, pauses it and requeues a FAILED job; a
// viewer can do none of it.
func TestBrowserAdminManagesServicesViewerCannot(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	dbURL := pgtest.NewEmptyDatabase(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(target.Close)
	cfg := writeConfig(t, `
scheduler: {lease: 10s, poll: 200ms, spread: 0s}
services:
  - {name: from-file, url: "`+target.URL+`/file", interval: 1h, timeout: 2s}
`)
	const adminPassword = "correct-horse-battery"
	a := startReplica(t, "replica-a", dbURL, cfg, "VIGIL_ADMIN_PASSWORD="+adminPassword)
	b := startReplica(t, "replica-b", dbURL, cfg)
	pool := testPool(t, dbURL)

	var stderr bytes.Buffer
	require.Equal(t, 0, runUser(context.Background(), []string{"add", "-database-url", dbURL, "-role", "viewer", "vera"}, nil,
		strings.NewReader("viewer-password-1\n"), &bytes.Buffer{}, &stderr), stderr.String())

	adminTab := newTab(t, browser)
	logIn(t, adminTab, a.addr, "admin", adminPassword)

	// Add a service in the browser on replica-a.
	require.NoError(t, chromedp.Do(within(t, adminTab),
		chromedp.Navigate("http://"+a.addr+"/admin/services/new"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="service-form"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-name"]`), "added-in-browser"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="field-url"]`), target.URL+"/added"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="field-interval"]`), "1s"),
		chromedp.SetValue(chromedp.CSS(`[data-testid="field-timeout"]`), "1s"),
		chromedp.Click(chromedp.CSS(`[data-testid="service-save"]`)),
	))
	// replica-b, which never saw the form, checks it within a slot or two.
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitoring_job_result r JOIN monitored_service s ON s.id = r.service_id
WHERE s.name = 'added-in-browser' AND s.source = 'admin' AND r.probed_by = 'replica-b'`) > 0
	}, 30*time.Second, 100*time.Millisecond, "replica-b checks the service added on replica-a")

	// Pause it from the admin page.
	require.NoError(t, chromedp.Do(within(t, adminTab),
		chromedp.Navigate("http://"+a.addr+"/admin"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="managed-services"]`)),
		chromedp.Click(chromedp.JSPath(`[...document.querySelectorAll('[data-testid="managed-services"] tr')]
  .find(r => r.textContent.includes('added-in-browser')).querySelector('[data-testid="toggle-service"]')`)),
	))
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitored_service WHERE name = 'added-in-browser' AND NOT enabled`) == 1
	}, 15*time.Second, 100*time.Millisecond, "paused")

	// Requeue a FAILED job.
	var failedID int64
	require.NoError(t, pool.QueryRow(context.Background(), `
INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, attempts, state, available_at, finished_at, last_error)
SELECT id, 60, url, 1000, 3, 3, 'FAILED', clock_timestamp(), clock_timestamp(), 'test failure'
FROM monitored_service WHERE name = 'from-file' RETURNING id`).Scan(&failedID))
	require.NoError(t, chromedp.Do(within(t, adminTab),
		chromedp.Navigate("http://"+a.addr+"/admin"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="requeue-job"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="requeue-job"]`)),
	))
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitoring_job WHERE id = $1 AND state <> 'FAILED'`, failedID) == 1
	}, 15*time.Second, 100*time.Millisecond, "requeued")

	// A viewer, in its own browser context (its own cookies), gets no form
	// and changes nothing.
	viewerTab, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	_, err := chromedp.Run(viewerTab, chromedp.Evaluate[int](`1`))
	require.NoError(t, err)
	logIn(t, viewerTab, b.addr, "vera", "viewer-password-1")
	resp, err := chromedp.RunResponse(within(t, viewerTab), chromedp.Navigate("http://"+b.addr+"/admin/services/new"))
	require.NoError(t, err)
	require.EqualValues(t, http.StatusForbidden, resp.Status)
	forms, err := chromedp.Run(within(t, viewerTab), chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="service-form"]').length`))
	require.NoError(t, err)
	require.Zero(t, forms)

	// And with curl-like requests: no token, 401; nothing was written.
	req, _ := http.NewRequest(http.MethodPost, "http://"+b.addr+"/api/v1/services",
		strings.NewReader(`{"name":"sneaky","url":"`+target.URL+`/x"}`))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	require.Equal(t, 0, queryInt(t, pool, `SELECT count(*) FROM monitored_service WHERE name = 'sneaky'`))
}
