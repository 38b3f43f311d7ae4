package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/vigilhq/vigil/internal/auth"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/web"
)

func TestLoginAndLogoutAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(o *web.Options) { o.RequireLogin = true })
	b.addUser(t, "ada", auth.RoleAdmin)
	// A second replica on the same database.
	other := web.New(web.Options{Store: monitoring.NewStore(b.pool), RequireLogin: true})

	c := b.client()
	rec := c.tryLogin(t, "ada", testPassword)
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	require.Equal(t, "/", rec.Header().Get("Location"))
	ck := c.cookies["vigil_session"]
	require.NotNil(t, ck)
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, ck.SameSite)
	require.False(t, ck.Secure, "plain HTTP without VIGIL_SECURE_COOKIES")
	// Only a hash of the id is stored.
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM vigil_session WHERE id_hash = sha256(convert_to($1, 'UTF8'))`, ck.Value))
	require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM vigil_session WHERE encode(id_hash, 'escape') LIKE '%' || $1 || '%'`, ck.Value))

	doc := parse(t, c.do(t, http.MethodGet, "/", nil))
	require.Equal(t, "ada", text(one(t, doc, "current-user")))

	// The other replica honours the session...
	c2 := &client{b: b, e: other, addr: c.addr, cookies: c.cookies}
	require.Equal(t, http.StatusOK, c2.do(t, http.MethodGet, "/admin", nil).Code)

	// ...and stops honouring it the moment this one logs out.
	saved := *ck
	csrf := c.csrf(t)
	rec = c.post(t, "/logout", csrf, nil)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/login", rec.Header().Get("Location"))
	require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM vigil_session`))
	c2.cookies = map[string]*http.Cookie{"vigil_session": &saved}
	rec = c2.do(t, http.MethodGet, "/admin", nil)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/login?next=%2Fadmin", rec.Header().Get("Location"))
}

func TestSecureCookies(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(o *web.Options) { o.SecureCookies = true })
	b.addUser(t, "ada", auth.RoleAdmin)
	c := b.client()
	require.Equal(t, http.StatusSeeOther, c.tryLogin(t, "ada", testPassword).Code)
	require.True(t, c.cookies["vigil_session"].Secure)
}

func TestLoginFailureIsGenericAndRateLimited(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(o *web.Options) {
		o.LoginLimit = monitoring.LoginLimit{PerAccount: 3, PerAddress: 5, Window: time.Hour}
	})
	b.addUser(t, "ada", auth.RoleAdmin)
	c := b.client()

	wrong := c.tryLogin(t, "ada", "wrong password")
	require.Equal(t, http.StatusUnauthorized, wrong.Code)
	unknown := c.tryLogin(t, "nobody", testPassword)
	require.Equal(t, http.StatusUnauthorized, unknown.Code)
	msg := text(one(t, parse(t, wrong), "login-error"))
	require.Equal(t, msg, text(one(t, parse(t, unknown), "login-error")), "the same words whatever was wrong")
	require.Nil(t, c.cookies["vigil_session"])

	// Per account: two more failures use up ada's three; then even the right
	// password is refused, from any address.
	c.tryLogin(t, "ada", "wrong again")
	c.tryLogin(t, "ada", "and again")
	fresh := b.client()
	fresh.addr = "198.51.100.7:4000"
	rec := fresh.tryLogin(t, "ada", testPassword)
	require.Equal(t, http.StatusTooManyRequests, rec.Code)
	require.Contains(t, text(one(t, parse(t, rec), "login-error")), "Too many failed logins")
	require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM vigil_session`))

	// Per address: 192.0.2.10 has 4 failures; one more for another account
	// blocks the address for every account, but not other addresses.
	b.addUser(t, "bob", auth.RoleViewer)
	require.Equal(t, http.StatusUnauthorized, c.tryLogin(t, "bob", "nope").Code)
	require.Equal(t, http.StatusTooManyRequests, c.tryLogin(t, "bob", testPassword).Code)
	require.Equal(t, http.StatusSeeOther, fresh.tryLogin(t, "bob", testPassword).Code)

	// A forged X-Forwarded-For does not get the blocked address a new count.
	req := httptest.NewRequest(http.MethodGet, "/login", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.99")
	require.Equal(t, http.StatusOK, c.send(req).Code)
	require.Equal(t, http.StatusTooManyRequests, c.tryLogin(t, "bob", testPassword).Code)
}

func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "ada", auth.RoleAdmin)
	for _, tc := range []struct{ name, expire string }{
		{"idle", `UPDATE vigil_session SET idle_until = clock_timestamp() - interval '1 second'`},
		{"absolute", `UPDATE vigil_session SET expires_at = clock_timestamp() - interval '1 second'`},
	} {
		c := b.client()
		c.login(t, "ada")
		require.Equal(t, http.StatusOK, c.do(t, http.MethodGet, "/admin", nil).Code, tc.name)
		b.exec(t, tc.expire)
		rec := c.do(t, http.MethodGet, "/admin", nil)
		require.Equal(t, http.StatusSeeOther, rec.Code, tc.name)
		require.True(t, strings.HasPrefix(rec.Header().Get("Location"), "/login"), tc.name)
		require.Nil(t, c.cookies["vigil_session"], "%s: the stale cookie is cleared", tc.name)
		b.exec(t, `DELETE FROM vigil_session`)
	}

	// Use pushes the idle expiry forward (at most once a minute), but never
	// past the absolute one.
	c := b.client()
	c.login(t, "ada")
	b.exec(t, `UPDATE vigil_session SET idle_until = clock_timestamp() + interval '2 minutes',
	                                    expires_at = clock_timestamp() + interval '10 minutes'`)
	c.do(t, http.MethodGet, "/admin", nil)
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM vigil_session
		WHERE idle_until < clock_timestamp() + interval '3 minutes'`), "seen less than a minute ago: not rewritten")
	b.exec(t, `UPDATE vigil_session SET last_seen_at = clock_timestamp() - interval '2 minutes'`)
	c.do(t, http.MethodGet, "/admin", nil)
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM vigil_session
		WHERE idle_until > clock_timestamp() + interval '5 minutes' AND idle_until <= expires_at`))
}

func TestFormsNeedTheSessionsCSRFToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "ada", auth.RoleAdmin)
	c := b.client()
	c.login(t, "ada")
	form := url.Values{"name": {"new"}, "url": {"http://127.0.0.1:8081/ok"}, "interval": {"30s"}, "enabled": {"true"}}

	rec := c.do(t, http.MethodPost, "/admin/services", form)
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Contains(t, text(one(t, parse(t, rec), "error-message")), "did not come from this site")
	rec = c.post(t, "/admin/services", "forged", form)
	require.Equal(t, http.StatusForbidden, rec.Code)
	// Another user's token is no good either.
	b.addUser(t, "eve", auth.RoleAdmin)
	eve := b.client()
	eve.addr = "198.51.100.9:1"
	rec = c.post(t, "/admin/services", eve.login(t, "eve"), form)
	require.Equal(t, http.StatusForbidden, rec.Code)
	_, found := b.serviceRow(t, "new")
	require.False(t, found)

	// The login form has its own token.
	anon := b.client()
	rec = anon.do(t, http.MethodPost, "/login", url.Values{"name": {"ada"}, "password": {testPassword}})
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Nil(t, anon.cookies["vigil_session"])
}

func TestReadingNeedsLoginUnlessPublic(t *testing.T) {
	t.Parallel()
	b := setupWith(t, func(o *web.Options) { o.RequireLogin = true })
	b.addUser(t, "vic", auth.RoleViewer)
	c := b.client()
	rec := c.do(t, http.MethodGet, "/jobs?state=FAILED", nil)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, "/login?next=%2Fjobs%3Fstate%3DFAILED", rec.Header().Get("Location"))
	require.Equal(t, http.StatusUnauthorized, c.do(t, http.MethodGet, "/api/v1/services", nil).Code)
	require.Equal(t, http.StatusOK, c.do(t, http.MethodGet, "/healthz", nil).Code)

	// The login page sends the user back where they were going. Like every
	// form page it is not refreshed in place, which would wipe what is typed.
	rec = c.do(t, http.MethodGet, "/login?next=%2Fjobs%3Fstate%3DFAILED", nil)
	require.Equal(t, "0", attr(one(t, parse(t, rec), "content"), "data-refresh"))
	rec = c.tryLogin(t, "vic", testPassword)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.Equal(t, http.StatusOK, c.do(t, http.MethodGet, "/jobs", nil).Code)
	require.Equal(t, http.StatusOK, c.do(t, http.MethodGet, "/api/v1/services", nil).Code)

	// The public dashboard (the default of web.Options) needs no login to read.
	pub := setup(t).client()
	require.Equal(t, http.StatusOK, pub.do(t, http.MethodGet, "/", nil).Code)
	require.Equal(t, http.StatusOK, pub.do(t, http.MethodGet, "/api/v1/services", nil).Code)
	require.Equal(t, http.StatusSeeOther, pub.do(t, http.MethodGet, "/admin", nil).Code)
}

func TestViewerCannotChangeAnything(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "vic", auth.RoleViewer, "core")
	svc := b.addAdminService(t, "shop", "core")
	failed := b.addJob(t, svc, job{ago: 60, state: "FAILED", lastError: "boom"})
	c := b.client()
	csrf := c.login(t, "vic")

	require.Equal(t, http.StatusForbidden, c.do(t, http.MethodGet, "/admin", nil).Code)
	doc := parse(t, c.do(t, http.MethodGet, "/", nil))
	require.Empty(t, findAll(doc, "href", "/admin"), "no Manage link for a viewer")
	for _, tc := range []struct {
		target string
		form   url.Values
	}{
		{"/admin/services", url.Values{"name": {"new"}, "group": {"core"}, "url": {"http://127.0.0.1/"}, "enabled": {"true"}}},
		{"/admin/services/shop", url.Values{"group": {"core"}, "url": {"http://127.0.0.1/other"}, "enabled": {"true"}}},
		{"/admin/services/shop/pause", nil},
		{"/admin/services/shop/delete", url.Values{"history": {"delete"}}},
		{"/admin/groups", url.Values{"name": {"mine"}}},
		{"/admin/jobs/" + itoa(failed) + "/requeue", nil},
	} {
		rec := c.post(t, tc.target, csrf, tc.form)
		require.Equal(t, http.StatusForbidden, rec.Code, "POST %s: %s", tc.target, rec.Body.String())
	}
	row, _ := b.serviceRow(t, "shop")
	require.Equal(t, serviceRow{Group: "core", URL: "http://127.0.0.1:8081/ok", Interval: 30, Timeout: 2000, Enabled: true, Source: "admin"}, row)
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM monitored_service`))
	require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM monitoring_group WHERE name = 'mine'`))
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM monitoring_job WHERE state = 'FAILED'`))
	require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM vigil_audit`))
}

func TestEditorIsLimitedToItsGroups(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "ed", auth.RoleEditor, "core")
	b.exec(t, `INSERT INTO monitoring_group (name) VALUES ('billing')`)
	mine := b.addAdminService(t, "shop", "core")
	theirs := b.addAdminService(t, "invoices", "billing")
	myJob := b.addJob(t, mine, job{ago: 60, state: "FAILED", lastError: "boom"})
	theirJob := b.addJob(t, theirs, job{ago: 60, state: "FAILED", lastError: "boom"})
	c := b.client()
	csrf := c.login(t, "ed")

	// In its own group: create, pause, requeue.
	rec := c.post(t, "/admin/services", csrf, url.Values{"name": {"cart"}, "group": {"core"},
		"url": {"http://127.0.0.1:8081/ok"}, "interval": {"10s"}, "timeout": {"2s"}, "enabled": {"true"}})
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	row, found := b.serviceRow(t, "cart")
	require.True(t, found)
	require.Equal(t, serviceRow{Group: "core", URL: "http://127.0.0.1:8081/ok", Interval: 10, Timeout: 2000, Enabled: true, Source: "admin"}, row)
	doc := parse(t, c.do(t, http.MethodGet, rec.Header().Get("Location"), nil))
	require.Contains(t, text(one(t, doc, "notice")), `Service "cart" added`)

	require.Equal(t, http.StatusSeeOther, c.post(t, "/admin/services/shop/pause", csrf, nil).Code)
	row, _ = b.serviceRow(t, "shop")
	require.False(t, row.Enabled)
	require.Equal(t, http.StatusSeeOther, c.post(t, "/admin/jobs/"+itoa(myJob)+"/requeue", csrf, nil).Code)
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM monitoring_job
		WHERE id = $1 AND state = 'READY' AND attempts = 0 AND finished_at IS NULL AND available_at <= clock_timestamp()`, myJob))
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM vigil_audit WHERE actor = 'ed' AND action = 'job.requeue' AND subject = $1`, itoa(myJob)))

	// Outside it: refused, nothing written.
	rec = c.post(t, "/admin/services", csrf, url.Values{"name": {"ledger"}, "group": {"billing"},
		"url": {"http://127.0.0.1:8081/ok"}, "enabled": {"true"}})
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	require.Contains(t, text(one(t, parse(t, rec), "error-group")), `may not manage services in group "billing"`)
	require.Equal(t, http.StatusForbidden, c.post(t, "/admin/services/invoices/pause", csrf, nil).Code)
	require.Equal(t, http.StatusForbidden, c.post(t, "/admin/jobs/"+itoa(theirJob)+"/requeue", csrf, nil).Code)
	// Nor may it move its own service into another group.
	rec = c.post(t, "/admin/services/shop", csrf, url.Values{"group": {"billing"}, "url": {"http://127.0.0.1:8081/ok"}})
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	_, found = b.serviceRow(t, "ledger")
	require.False(t, found)
	row, _ = b.serviceRow(t, "invoices")
	require.True(t, row.Enabled)
	row, _ = b.serviceRow(t, "shop")
	require.Equal(t, "core", row.Group)
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM monitoring_job WHERE id = $1 AND state = 'FAILED'`, theirJob))

	// The management page offers only what it may do.
	doc = parse(t, c.do(t, http.MethodGet, "/admin", nil))
	require.Len(t, byTestID(managedRow(t, doc, "shop"), "edit-service"), 1)
	require.Empty(t, byTestID(managedRow(t, doc, "invoices"), "edit-service"))
	require.Len(t, byTestID(doc, "requeue-job"), 0, "its job was requeued; the other group's is not offered")
	require.Empty(t, byTestID(doc, "audit"), "the audit log is for admins")
	require.Equal(t, "0", attr(one(t, doc, "content"), "data-refresh"))
	require.Equal(t, "5", attr(one(t, parse(t, c.do(t, http.MethodGet, "/jobs", nil)), "content"), "data-refresh"))
}

// managedRow is a service's row on the management page.
func managedRow(t testing.TB, doc *html.Node, service string) *html.Node {
	return row(t, doc, "service", service)
}

func TestConfigOwnedServiceIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "ada", auth.RoleAdmin)
	b.addService(t, service{name: "inventory", group: "core"}) // source 'config'
	c := b.client()
	csrf := c.login(t, "ada")

	doc := parse(t, c.do(t, http.MethodGet, "/admin", nil))
	r := managedRow(t, doc, "inventory")
	require.Len(t, byTestID(r, "config-owned"), 1)
	require.Empty(t, byTestID(r, "edit-service"))

	for _, target := range []string{"/admin/services/inventory", "/admin/services/inventory/pause", "/admin/services/inventory/delete"} {
		rec := c.post(t, target, csrf, url.Values{"group": {"core"}, "url": {"http://127.0.0.1:9/"}, "history": {"delete"}})
		require.Equal(t, http.StatusConflict, rec.Code, target)
		require.Contains(t, text(one(t, parse(t, rec), "error-message")), "defined in the config file", target)
	}
	rec := c.do(t, http.MethodGet, "/admin/services/inventory/edit", nil)
	require.Equal(t, http.StatusConflict, rec.Code)
	row, found := b.serviceRow(t, "inventory")
	require.True(t, found)
	require.Equal(t, serviceRow{Group: "core", URL: "https://user:secret@example.test/health", Interval: 30, Timeout: 2000, Enabled: true, Source: "config"}, row)
}

func TestBadFormValuesAreShownNextToTheirFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "ada", auth.RoleAdmin)
	c := b.client()
	csrf := c.login(t, "ada")

	rec := c.post(t, "/admin/services", csrf, url.Values{"name": {" padded"}, "url": {"ftp://files.example/x"},
		"interval": {"1500ms"}, "timeout": {"soon"}, "enabled": {"true"}})
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	doc := parse(t, rec)
	require.Contains(t, text(one(t, doc, "error-name")), "name starts or ends with a space")
	require.Contains(t, text(one(t, doc, "error-url")), `uses the scheme "ftp"`)
	require.Contains(t, text(one(t, doc, "error-interval")), "not a whole number of seconds")
	require.Contains(t, text(one(t, doc, "error-timeout")), `timeout "soon" is not a duration`)
	require.Equal(t, "ftp://files.example/x", attr(one(t, doc, "field-url"), "value"), "what was typed is kept")
	require.Equal(t, "soon", attr(one(t, doc, "field-timeout"), "value"))

	// A timeout that outlives the lease, as in the config file.
	rec = c.post(t, "/admin/services", csrf, url.Values{"name": {"slow"}, "url": {"http://127.0.0.1/"}, "timeout": {"45s"}})
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	require.Contains(t, text(one(t, parse(t, rec), "error-timeout")), "is not shorter than scheduler.lease 30s")

	// Cloud metadata addresses are refused.
	rec = c.post(t, "/admin/services", csrf, url.Values{"name": {"meta"}, "url": {"http://169.254.169.254/latest/meta-data"}})
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	one(t, parse(t, rec), "error-url")

	require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM monitored_service`))
	require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM vigil_audit`))
}

func TestDeleteServiceKeepsOrRemovesHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "ada", auth.RoleAdmin)
	kept := b.addAdminService(t, "kept", "core")
	gone := b.addAdminService(t, "gone", "core")
	for _, id := range []int64{kept, gone} {
		jobID := b.addResult(t, id, result{ago: 60, status: "DOWN", reason: "refused"})
		b.setStatus(t, id)
		b.addAlert(t, id, jobID, "DOWN", "refused")
	}
	c := b.client()
	csrf := c.login(t, "ada")

	doc := parse(t, c.do(t, http.MethodGet, "/admin/services/kept/delete", nil))
	require.Equal(t, "keep", attr(one(t, doc, "history-keep"), "value"))
	_, checked := attrOK(one(t, doc, "history-keep"), "checked")
	require.True(t, checked, "keeping history is the default")

	require.Equal(t, http.StatusSeeOther, c.post(t, "/admin/services/kept/delete", csrf, url.Values{"history": {"keep"}}).Code)
	row, found := b.serviceRow(t, "kept")
	require.True(t, found)
	require.True(t, row.Retired)
	require.False(t, row.Enabled)
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM monitoring_job_result WHERE service_id = $1`, kept))

	require.Equal(t, http.StatusSeeOther, c.post(t, "/admin/services/gone/delete", csrf, url.Values{"history": {"delete"}}).Code)
	_, found = b.serviceRow(t, "gone")
	require.False(t, found)
	for _, table := range []string{"monitoring_job", "monitoring_job_result", "service_status", "alert_outbox"} {
		require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM `+table+` WHERE service_id = $1`, gone), table)
	}
	require.EqualValues(t, 2, b.queryInt(t, `SELECT count(*) FROM vigil_audit WHERE action LIKE 'service.delete%'`))
}

func TestAPITokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "ed", auth.RoleEditor, "core")
	c := b.client()
	csrf := c.login(t, "ed")

	// An editor may not mint an admin token.
	rec := c.post(t, "/account/tokens", csrf, url.Values{"name": {"ci"}, "role": {"admin"}})
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	one(t, parse(t, rec), "token-error")

	rec = c.post(t, "/account/tokens", csrf, url.Values{"name": {"ci"}, "role": {"editor"}})
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	secret := text(one(t, parse(t, rec), "new-token"))
	require.True(t, strings.HasPrefix(secret, "vgl_"))
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM vigil_api_token WHERE token_hash = sha256(convert_to($1, 'UTF8')) AND role = 'editor'`, secret))
	// Shown once: the list does not show it again.
	require.NotContains(t, c.do(t, http.MethodGet, "/account/tokens", nil).Body.String(), secret)

	api := b.client()
	api.addr = "198.51.100.20:1"
	body := `{"name": "cart", "group": "core", "url": "http://127.0.0.1:8081/ok", "interval": "15s"}`
	// Without a token, or with only the browser's session cookie: refused.
	require.Equal(t, http.StatusUnauthorized, api.json(http.MethodPost, "/api/v1/services", body).Code)
	rec = c.json(http.MethodPost, "/api/v1/services", body)
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	api.bearer = "vgl_not-a-token"
	require.Equal(t, http.StatusUnauthorized, api.json(http.MethodPost, "/api/v1/services", body).Code)
	_, found := b.serviceRow(t, "cart")
	require.False(t, found)

	api.bearer = secret
	rec = api.json(http.MethodPost, "/api/v1/services", body)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	var created map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &created))
	require.Equal(t, "admin", created["source"])
	require.EqualValues(t, 15, created["interval_seconds"])
	row, found := b.serviceRow(t, "cart")
	require.True(t, found)
	require.Equal(t, 15, row.Interval)
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM vigil_audit WHERE actor = 'ed (API token)' AND action = 'service.create'`))

	// Validation errors come back by field, and nothing is written.
	rec = api.json(http.MethodPut, "/api/v1/services/cart", `{"group": "core", "url": "gopher://x", "interval": "0s"}`)
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	var problems struct{ Fields map[string]string }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &problems))
	require.Contains(t, problems.Fields["url"], "gopher")
	require.Contains(t, problems.Fields["interval"], "shorter than 1s")
	row, _ = b.serviceRow(t, "cart")
	require.Equal(t, "http://127.0.0.1:8081/ok", row.URL)

	require.Equal(t, http.StatusOK, api.json(http.MethodPost, "/api/v1/services/cart/pause", "").Code)
	row, _ = b.serviceRow(t, "cart")
	require.False(t, row.Enabled)
	// Outside its groups, and groups themselves: refused.
	require.Equal(t, http.StatusUnprocessableEntity, api.json(http.MethodPost, "/api/v1/services",
		`{"name": "x", "url": "http://127.0.0.1/"}`).Code)
	require.Equal(t, http.StatusForbidden, api.json(http.MethodPost, "/api/v1/groups", `{"name": "mine"}`).Code)

	// A viewer-role token of the same editor reads but cannot change.
	rec = c.post(t, "/account/tokens", csrf, url.Values{"name": {"dash"}, "role": {"viewer"}})
	viewer := text(one(t, parse(t, rec), "new-token"))
	ro := b.client()
	ro.bearer = viewer
	require.Equal(t, http.StatusOK, ro.json(http.MethodGet, "/api/v1/services", "").Code)
	require.Equal(t, http.StatusForbidden, ro.json(http.MethodPost, "/api/v1/services/cart/resume", "").Code)
	row, _ = b.serviceRow(t, "cart")
	require.False(t, row.Enabled)

	// Revoked: refused at once.
	id := b.queryInt(t, `SELECT id FROM vigil_api_token WHERE name = 'ci'`)
	require.Equal(t, http.StatusSeeOther, c.post(t, "/account/tokens/"+itoa(id)+"/revoke", csrf, nil).Code)
	require.Equal(t, http.StatusUnauthorized, api.json(http.MethodPost, "/api/v1/services/cart/resume", "").Code)
	row, _ = b.serviceRow(t, "cart")
	require.False(t, row.Enabled)
}

func TestAdminAPIGroupsAndRequeue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "ada", auth.RoleAdmin)
	c := b.client()
	csrf := c.login(t, "ada")
	rec := c.post(t, "/account/tokens", csrf, url.Values{"name": {"ops"}, "role": {"admin"}})
	api := b.client()
	api.bearer = text(one(t, parse(t, rec), "new-token"))

	require.Equal(t, http.StatusCreated, api.json(http.MethodPost, "/api/v1/groups", `{"name": "edge"}`).Code)
	require.Equal(t, http.StatusUnprocessableEntity, api.json(http.MethodPost, "/api/v1/groups", `{"name": "edge"}`).Code)
	require.Equal(t, http.StatusCreated, api.json(http.MethodPost, "/api/v1/services",
		`{"name": "cdn", "group": "edge", "url": "https://127.0.0.1/health", "enabled": false}`).Code)
	row, _ := b.serviceRow(t, "cdn")
	require.False(t, row.Enabled)
	require.Equal(t, 5000, row.Timeout, "the config file's default timeout")
	require.Equal(t, http.StatusConflict, api.json(http.MethodDelete, "/api/v1/groups/edge", "").Code)

	svc := b.queryInt(t, `SELECT id FROM monitored_service WHERE name = 'cdn'`)
	failed := b.addJob(t, svc, job{ago: 60, state: "FAILED", lastError: "boom"})
	done := b.addJob(t, svc, job{ago: 120, state: "DONE"})
	require.Equal(t, http.StatusOK, api.json(http.MethodPost, "/api/v1/jobs/"+itoa(failed)+"/requeue", "").Code)
	require.Equal(t, http.StatusConflict, api.json(http.MethodPost, "/api/v1/jobs/"+itoa(done)+"/requeue", "").Code)
	require.Equal(t, http.StatusNotFound, api.json(http.MethodPost, "/api/v1/jobs/999999/requeue", "").Code)
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM monitoring_job WHERE id = $1 AND state = 'READY'`, failed))
	// A READY job can be cancelled before anyone claims it; then it is FAILED.
	require.Equal(t, http.StatusOK, api.json(http.MethodPost, "/api/v1/jobs/"+itoa(failed)+"/cancel", "").Code)
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM monitoring_job
		WHERE id = $1 AND state = 'FAILED' AND last_error = 'cancelled by ada (API token)'`, failed))
	require.Equal(t, http.StatusConflict, api.json(http.MethodPost, "/api/v1/jobs/"+itoa(done)+"/cancel", "").Code)
	require.Equal(t, http.StatusOK, api.json(http.MethodPost, "/api/v1/jobs/"+itoa(failed)+"/requeue", "").Code)

	require.Equal(t, http.StatusNoContent, api.json(http.MethodDelete, "/api/v1/services/cdn?history=delete", "").Code)
	require.Equal(t, http.StatusNoContent, api.json(http.MethodDelete, "/api/v1/groups/edge", "").Code)
	require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM monitoring_group`))

	// Admins see who changed what; newest first.
	doc := parse(t, c.do(t, http.MethodGet, "/admin", nil))
	entries := elements(one(t, doc, "audit"), "tr")[1:]
	require.Len(t, entries, 8)
	cells := func(tr *html.Node) []string {
		var out []string
		for _, td := range elements(tr, "td")[1:4] {
			out = append(out, text(td))
		}
		return out
	}
	require.Equal(t, []string{"ada (API token)", "group.delete", "edge"}, cells(entries[0]))
	require.Equal(t, []string{"ada", "token.create"}, cells(entries[len(entries)-1])[:2])
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestAdminManagesAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addUser(t, "ada", auth.RoleAdmin)
	b.exec(t, `INSERT INTO monitoring_group (name) VALUES ('core'), ('billing')`)
	c := b.client()
	csrf := c.login(t, "ada")

	// Bad input: every problem next to its field, nothing written.
	rec := c.post(t, "/admin/users", csrf, url.Values{"name": {" bob"}, "role": {"viewer"}, "password": {"short"}, "group": {"core"}})
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	doc := parse(t, rec)
	one(t, doc, "error-name")
	require.Contains(t, text(one(t, doc, "error-password")), "shorter than 8")
	require.Contains(t, text(one(t, doc, "error-groups")), "editors only")
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM vigil_user`))

	rec = c.post(t, "/admin/users", csrf, url.Values{"name": {"bob"}, "role": {"editor"}, "password": {testPassword}, "group": {"core"}})
	require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())
	require.EqualValues(t, 1, b.queryInt(t, `SELECT count(*) FROM vigil_user u JOIN vigil_user_group ug ON ug.user_id = u.id
		JOIN monitoring_group g ON g.id = ug.group_id WHERE u.name = 'bob' AND u.role = 'editor' AND g.name = 'core'`))

	// Bob logs in; he may not manage accounts.
	bob := b.client()
	bob.addr = "198.51.100.30:1"
	bobCSRF := bob.login(t, "bob")
	require.Equal(t, http.StatusForbidden, bob.do(t, http.MethodGet, "/admin/users", nil).Code)
	require.Equal(t, http.StatusForbidden, bob.post(t, "/admin/users", bobCSRF,
		url.Values{"name": {"mallory"}, "role": {"admin"}, "password": {testPassword}}).Code)

	// Deleting him ends his session at once.
	require.Equal(t, http.StatusSeeOther, c.post(t, "/admin/users/bob/delete", csrf, nil).Code)
	rec = bob.do(t, http.MethodGet, "/admin", nil)
	require.Equal(t, http.StatusSeeOther, rec.Code)
	require.EqualValues(t, 0, b.queryInt(t, `SELECT count(*) FROM vigil_session s JOIN vigil_user u ON u.id = s.user_id WHERE u.name <> 'ada'`))
	require.Equal(t, http.StatusConflict, c.post(t, "/admin/users/ada/delete", csrf, nil).Code, "not yourself")
}
