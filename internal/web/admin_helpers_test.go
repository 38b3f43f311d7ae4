package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/vigilhq/vigil/internal/auth"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
	"github.com/vigilhq/vigil/internal/web"
)

// setupWith is setup with the server's options adjusted.
func setupWith(t testing.TB, adjust func(*web.Options)) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	opts := web.Options{
		Store:    monitoring.NewStore(pool),
		Gatherer: prometheus.NewRegistry(),
		Instance: "replica-test",
	}
	if adjust != nil {
		adjust(&opts)
	}
	return &testBundle{pool: pool, e: web.New(opts)}
}

// Hashing with production argon2id parameters costs 64 MiB and a noticeable
// moment under -race: hash each test password once.
var (
	hashMu sync.Mutex
	hashes = map[string]string{}
)

func hashOf(t testing.TB, password string) string {
	t.Helper()
	hashMu.Lock()
	defer hashMu.Unlock()
	if h, ok := hashes[password]; ok {
		return h
	}
	h, err := auth.HashPassword(password)
	require.NoError(t, err)
	hashes[password] = h
	return h
}

const testPassword = "correct horse battery"

// addUser creates an account with testPassword.
func (b *testBundle) addUser(t testing.TB, name, role string, groups ...string) {
	t.Helper()
	for _, g := range groups {
		b.exec(t, `INSERT INTO monitoring_group (name) VALUES ($1) ON CONFLICT DO NOTHING`, g)
	}
	_, err := monitoring.NewStore(b.pool).UserCreate(context.Background(), monitoring.UserCreateParams{
		Name: name, Role: role, PasswordHash: hashOf(t, testPassword), Groups: groups,
	})
	require.NoError(t, err)
}

// client is a browser: it keeps cookies and comes from one address.
type client struct {
	b       *testBundle
	e       http.Handler
	addr    string
	cookies map[string]*http.Cookie
	bearer  string
}

func (b *testBundle) client() *client {
	return &client{b: b, e: b.e, addr: "192.0.2.10:5000", cookies: map[string]*http.Cookie{}}
}

func (c *client) do(t testing.TB, method, target string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	var req *http.Request
	if form != nil {
		req = httptest.NewRequest(method, target, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	return c.send(req)
}

func (c *client) send(req *http.Request) *httptest.ResponseRecorder {
	req.RemoteAddr = c.addr
	for _, ck := range c.cookies {
		req.AddCookie(ck)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	rec := httptest.NewRecorder()
	c.e.ServeHTTP(rec, req)
	for _, ck := range rec.Result().Cookies() {
		if ck.MaxAge < 0 {
			delete(c.cookies, ck.Name)
		} else {
			c.cookies[ck.Name] = ck
		}
	}
	return rec
}

// json sends a JSON body.
func (c *client) json(method, target, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return c.send(req)
}

func parse(t testing.TB, rec *httptest.ResponseRecorder) *html.Node {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(rec.Body.String()))
	require.NoError(t, err)
	return doc
}

// tryLogin fills in the login form as a browser would.
func (c *client) tryLogin(t testing.TB, name, password string) *httptest.ResponseRecorder {
	t.Helper()
	rec := c.do(t, http.MethodGet, "/login", nil)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	form := one(t, parse(t, rec), "login-form")
	token := ""
	for _, in := range elements(form, "input") {
		if attr(in, "name") == "_csrf" {
			token = attr(in, "value")
		}
	}
	require.NotEmpty(t, token)
	return c.do(t, http.MethodPost, "/login", url.Values{"_csrf": {token}, "name": {name}, "password": {password}})
}

// login logs in and returns the session's form token, read from a page.
func (c *client) login(t testing.TB, name string) string {
	t.Helper()
	rec := c.tryLogin(t, name, testPassword)
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	return c.csrf(t)
}

func (c *client) csrf(t testing.TB) string {
	t.Helper()
	rec := c.do(t, http.MethodGet, "/jobs", nil)
	require.Equal(t, http.StatusOK, rec.Code)
	for _, in := range elements(one(t, parse(t, rec), "logout-form"), "input") {
		if attr(in, "name") == "_csrf" {
			return attr(in, "value")
		}
	}
	t.Fatal("no _csrf in the logout form")
	return ""
}

// post submits a form with the session's token.
func (c *client) post(t testing.TB, target, csrf string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", csrf)
	return c.do(t, http.MethodPost, target, form)
}

// serviceRow is a service as stored.
type serviceRow struct {
	Group    string
	URL      string
	Interval int
	Timeout  int
	Enabled  bool
	Source   string
	Retired  bool
}

func (b *testBundle) serviceRow(t testing.TB, name string) (serviceRow, bool) {
	t.Helper()
	var r serviceRow
	err := b.pool.QueryRow(context.Background(), `
SELECT coalesce(g.name, ''), s.url, s.interval_seconds, s.timeout_ms, s.enabled, s.source, s.retired_at IS NOT NULL
FROM monitored_service s LEFT JOIN monitoring_group g ON g.id = s.group_id WHERE s.name = $1`, name).
		Scan(&r.Group, &r.URL, &r.Interval, &r.Timeout, &r.Enabled, &r.Source, &r.Retired)
	if err != nil {
		return r, false
	}
	return r, true
}

// addAdminService inserts an operator-owned service in group.
func (b *testBundle) addAdminService(t testing.TB, name, group string) int64 {
	t.Helper()
	id := b.addService(t, service{name: name, group: group})
	b.exec(t, `UPDATE monitored_service SET source = 'admin', url = 'http://127.0.0.1:8081/ok' WHERE id = $1`, id)
	return id
}
