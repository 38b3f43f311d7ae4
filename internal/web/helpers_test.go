package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
	"github.com/vigilhq/vigil/internal/web"
)

// testBundle is a server on its own migrated database, and the seeding
// helpers that write straight into it.
type testBundle struct {
	pool *pgxpool.Pool
	e    *echo.Echo
}

func setup(t testing.TB) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	e := web.New(web.Options{
		Store:    monitoring.NewStore(pool),
		Gatherer: prometheus.NewRegistry(),
		Instance: "replica-test",
	})
	return &testBundle{pool: pool, e: e}
}

func (b *testBundle) exec(t testing.TB, q string, args ...any) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), q, args...)
	require.NoError(t, err)
}

func (b *testBundle) queryInt(t testing.TB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, b.pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

type service struct {
	name, group string
	interval    int // seconds; 0 means 30
	disabled    bool
}

// addService inserts a service (and its group) and returns its id.
func (b *testBundle) addService(t testing.TB, s service) int64 {
	t.Helper()
	if s.interval == 0 {
		s.interval = 30
	}
	var groupID *int64
	if s.group != "" {
		var id int64
		require.NoError(t, b.pool.QueryRow(context.Background(), `
INSERT INTO monitoring_group (name) VALUES ($1)
ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id`, s.group).Scan(&id))
		groupID = &id
	}
	var id int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `
INSERT INTO monitored_service (name, group_id, url, interval_seconds, timeout_ms, enabled)
VALUES ($1, $2, 'https://user:secret@example.test/health', $3, 2000, $4) RETURNING id`,
		s.name, groupID, s.interval, !s.disabled).Scan(&id))
	return id
}

type result struct {
	ago      int // slot start, seconds before the DB clock's now
	status   string
	latency  float64
	by       string
	reason   string
	attempt  int
	httpCode int
}

// addResult stores a DONE job and its result, as a completion would, and
// returns the job id. It does not touch service_status; see setStatus.
func (b *testBundle) addResult(t testing.TB, serviceID int64, r result) int64 {
	t.Helper()
	if r.attempt == 0 {
		r.attempt = 1
	}
	if r.by == "" {
		r.by = "replica-a"
	}
	var httpCode *int
	if r.httpCode != 0 {
		httpCode = &r.httpCode
	}
	var reason *string
	if r.reason != "" {
		reason = &r.reason
	}
	var id int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `
WITH slot AS (SELECT extract(epoch FROM clock_timestamp())::bigint - $2 AS s),
j AS (
    INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at,
                                state, attempts, owner_instance, claimed_at, finished_at)
    SELECT $1, slot.s, 'http://t/', 1000, 3, to_timestamp(slot.s), 'DONE', $6, $5, clock_timestamp(), clock_timestamp()
    FROM slot
    RETURNING id, scheduled_slot
)
INSERT INTO monitoring_job_result (job_id, service_id, scheduled_slot, status, latency_ms, http_status, error,
                                   attempt, owner_token, probed_by, observed_at)
SELECT j.id, $1, j.scheduled_slot, $3, $4, $7, $8, $6, gen_random_uuid(), $5, to_timestamp(j.scheduled_slot) + interval '1 second'
FROM j
RETURNING job_id`, serviceID, r.ago, r.status, r.latency, r.by, r.attempt, httpCode, reason).Scan(&id))
	return id
}

// setStatus makes service_status match the service's newest result.
func (b *testBundle) setStatus(t testing.TB, serviceID int64) {
	t.Helper()
	b.exec(t, `
INSERT INTO service_status (service_id, status, last_slot, last_job_id, checked_at, checked_by, latency_ms,
                            http_status, error, status_since)
SELECT service_id, status, scheduled_slot, job_id, observed_at, probed_by, latency_ms, http_status, error, observed_at
FROM monitoring_job_result WHERE service_id = $1
ORDER BY scheduled_slot DESC LIMIT 1
ON CONFLICT (service_id) DO UPDATE SET status = EXCLUDED.status, last_slot = EXCLUDED.last_slot,
    last_job_id = EXCLUDED.last_job_id, checked_at = EXCLUDED.checked_at, checked_by = EXCLUDED.checked_by,
    latency_ms = EXCLUDED.latency_ms, http_status = EXCLUDED.http_status, error = EXCLUDED.error`, serviceID)
}

type job struct {
	ago       int // slot start before now, seconds
	state     string
	owner     string
	leaseLeft int // seconds, for RUNNING; negative for a lapsed lease
	lastError string
}

func (b *testBundle) addJob(t testing.TB, serviceID int64, j job) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `
WITH slot AS (SELECT extract(epoch FROM clock_timestamp())::bigint - $2 AS s)
INSERT INTO monitoring_job (service_id, scheduled_slot, target_url, timeout_ms, max_attempts, available_at,
                            state, attempts, owner_instance, owner_token, lease_until, last_error, finished_at)
SELECT $1, slot.s, 'http://t/', 1000, 3, to_timestamp(slot.s), $3,
       CASE $3 WHEN 'READY' THEN 0 WHEN 'FAILED' THEN 3 ELSE 1 END,
       nullif($4, ''),
       CASE WHEN $3 = 'RUNNING' THEN gen_random_uuid() END,
       CASE WHEN $3 = 'RUNNING' THEN clock_timestamp() + $5 * interval '1 second' END,
       nullif($6, ''),
       CASE WHEN $3 IN ('DONE', 'FAILED') THEN clock_timestamp() END
FROM slot
RETURNING id`, serviceID, j.ago, j.state, j.owner, j.leaseLeft, j.lastError).Scan(&id))
	return id
}

type instance struct {
	name          string
	heartbeatAgo  int // seconds
	stopped       bool
	startedAgoMin int
}

func (b *testBundle) addInstance(t testing.TB, in instance) {
	t.Helper()
	b.exec(t, `
INSERT INTO vigil_instance (name, addr, version, started_at, heartbeat_at, stopped_at)
VALUES ($1, ':8080', 'v-test', clock_timestamp() - $2 * interval '1 minute',
        clock_timestamp() - $3 * interval '1 second',
        CASE WHEN $4 THEN clock_timestamp() - $3 * interval '1 second' END)`,
		in.name, in.startedAgoMin, in.heartbeatAgo, in.stopped)
}

// addAlert writes an outbox row for a result's job and returns its id.
func (b *testBundle) addAlert(t testing.TB, serviceID, jobID int64, kind, reason string) int64 {
	t.Helper()
	var id int64
	require.NoError(t, b.pool.QueryRow(context.Background(), `
INSERT INTO alert_outbox (event_key, service_id, job_id, scheduled_slot, kind, reason, down_seconds)
SELECT 'job-' || j.id || '-' || $3, $1, j.id, j.scheduled_slot, $3, nullif($4, ''),
       CASE WHEN $3 = 'UP' THEN 125.0 END
FROM monitoring_job j WHERE j.id = $2
RETURNING id`, serviceID, jobID, kind, reason).Scan(&id))
	return id
}

// addDelivery routes an alert to a webhook and puts the delivery in a final
// state, as a dispatcher would have.
func (b *testBundle) addDelivery(t testing.TB, alertID int64, webhook, state string, httpStatus int, lastError string) {
	t.Helper()
	b.exec(t, `UPDATE alert_outbox SET routed_at = clock_timestamp() WHERE id = $1`, alertID)
	b.exec(t, `
INSERT INTO alert_delivery (event_id, webhook, state, attempts, max_attempts, last_http_status, last_error, finished_at)
VALUES ($1, $2, $3, CASE $3 WHEN 'FAILED' THEN 5 ELSE 1 END, 5, $4, nullif($5, ''),
        CASE WHEN $3 IN ('DELIVERED', 'FAILED') THEN clock_timestamp() END)`,
		alertID, webhook, state, httpStatus, lastError)
}

// get performs a request against the server.
func (b *testBundle) get(t testing.TB, target string) *httptest.ResponseRecorder {
	t.Helper()
	return serve(b, httptest.NewRequest(http.MethodGet, target, nil))
}

func serve(b *testBundle, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, req)
	return rec
}

// page GETs an HTML page, requires the status and parses it.
func (b *testBundle) page(t testing.TB, target string, status int) *html.Node {
	t.Helper()
	rec := b.get(t, target)
	require.Equal(t, status, rec.Code, "GET %s: %s", target, rec.Body.String())
	require.Contains(t, rec.Header().Get("Content-Type"), "text/html")
	doc, err := html.Parse(strings.NewReader(rec.Body.String()))
	require.NoError(t, err)
	return doc
}

// getJSON GETs an API URL, requires the status and decodes the body.
func (b *testBundle) getJSON(t testing.TB, target string, status int, into any) {
	t.Helper()
	rec := b.get(t, target)
	require.Equal(t, status, rec.Code, "GET %s: %s", target, rec.Body.String())
	require.Contains(t, rec.Header().Get("Content-Type"), "application/json")
	require.NoError(t, json.NewDecoder(rec.Body).Decode(into), "GET %s", target)
}

// findAll returns the elements whose attribute key equals val, in document
// order.
func findAll(n *html.Node, key, val string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && attr(n, key) == val {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func byTestID(n *html.Node, id string) []*html.Node { return findAll(n, "data-testid", id) }

// one requires exactly one element with the test id.
func one(t testing.TB, n *html.Node, id string) *html.Node {
	t.Helper()
	found := byTestID(n, id)
	require.Len(t, found, 1, "elements with data-testid=%q", id)
	return found[0]
}

// elements returns the descendants with the tag name.
func elements(n *html.Node, tag string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func attrOK(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// text is the element's text with whitespace collapsed.
func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

// row finds the row element with data-<key>=val.
func row(t testing.TB, doc *html.Node, key, val string) *html.Node {
	t.Helper()
	found := findAll(doc, "data-"+key, val)
	require.Len(t, found, 1, "rows with data-%s=%q", key, val)
	return found[0]
}
