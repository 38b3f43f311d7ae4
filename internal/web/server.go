// Package web serves Vigil's HTTP side: the dashboard pages, their JSON API,
// health endpoints and /metrics. Handlers call package monitoring; they hold
// no SQL. Every page reads the database only, so any replica shows the same
// picture.
package web

import (
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/migrations"
	"github.com/vigilhq/vigil/templates"
)

// Server holds what handlers need.
type Server struct {
	store    *monitoring.Store
	gatherer prometheus.Gatherer
	log      *slog.Logger
	instance string
	refresh  time.Duration

	publicDashboard bool
	secureCookies   bool
	sessionIdle     time.Duration
	sessionAbsolute time.Duration
	loginLimit      monitoring.LoginLimit
	lease           time.Duration
	allowLinkLocal  bool
	passwordChecks  chan struct{} // a slot per concurrent argon2id check
}

// Options configure the HTTP side.
type Options struct {
	Store    *monitoring.Store
	Gatherer prometheus.Gatherer
	Logger   *slog.Logger
	Instance string
	// Refresh is how often an open page polls for fresh content; 0 means 5s.
	Refresh time.Duration

	// RequireLogin closes the read-only pages and GET API to anyone not logged
	// in (VIGIL_PUBLIC_DASHBOARD unset or false). Changes always need a login
	// or, under /api/v1, a Bearer token.
	RequireLogin bool
	// SecureCookies marks cookies Secure even when this replica serves plain
	// HTTP behind a TLS-terminating proxy (VIGIL_SECURE_COOKIES=true).
	SecureCookies bool
	// SessionIdle and SessionMaxAge end a session after that long unused or
	// that long after login; 0 means 2h and 24h.
	SessionIdle, SessionMaxAge time.Duration
	// LoginLimit caps failed logins; zero means 5 per account and 20 per
	// client address within 15 minutes.
	LoginLimit monitoring.LoginLimit
	// Lease is the scheduler's lease, which a service's timeout must stay
	// under; 0 means the config file's default.
	Lease time.Duration
	// AllowLinkLocal lets operators add link-local and metadata targets.
	AllowLinkLocal bool
}

// requestTimeout bounds a page's or API call's database reads.
const requestTimeout = 10 * time.Second

// contentSecurityPolicy allows only this origin's own files: no inline
// script or style, so injected markup could not run even if it got through.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// New builds the echo router with its middleware in one place.
func New(opts Options) *echo.Echo {
	s := &Server{store: opts.Store, gatherer: opts.Gatherer, log: opts.Logger, instance: opts.Instance, refresh: opts.Refresh}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.refresh <= 0 {
		s.refresh = 5 * time.Second
	}
	s.publicDashboard, s.secureCookies = !opts.RequireLogin, opts.SecureCookies
	s.sessionIdle, s.sessionAbsolute = cmp.Or(opts.SessionIdle, defaultIdle), cmp.Or(opts.SessionMaxAge, defaultAbsolute)
	s.loginLimit = opts.LoginLimit
	if s.loginLimit == (monitoring.LoginLimit{}) {
		s.loginLimit = monitoring.LoginLimit{PerAccount: 5, PerAddress: 20, Window: defaultLoginWait}
	}
	s.lease, s.allowLinkLocal = opts.Lease, opts.AllowLinkLocal
	s.passwordChecks = make(chan struct{}, 4)
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	// The login limit counts failures per client address: take the peer's
	// address, not an X-Forwarded-For header any client can write.
	e.IPExtractor = echo.ExtractIPDirect()
	e.Use(middleware.Recover())
	e.Use(middleware.RequestID())
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection:         "0",
		ContentTypeNosniff:    "nosniff",
		XFrameOptions:         "DENY",
		ReferrerPolicy:        "same-origin",
		ContentSecurityPolicy: contentSecurityPolicy,
	}))
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURI: true, LogMethod: true, LogLatency: true, LogError: true,
		Skipper: isProbe,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			s.log.Debug("request", "method", v.Method, "uri", v.URI, "status", v.Status, "latency", v.Latency)
			return nil
		},
	}))
	// The overview of a large installation is a few megabytes of repetitive
	// HTML; /metrics negotiates its own compression.
	e.Use(middleware.GzipWithConfig(middleware.GzipConfig{
		Skipper:   func(c echo.Context) bool { return isProbe(c) || c.Path() == "/metrics" },
		MinLength: 1024,
		Level:     gzip.BestSpeed,
	}))

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{})))
	e.GET("/static/:hash/:name", serveStatic)

	// Sessions and tokens are looked up in PostgreSQL, so every replica
	// honours a login and a logout at once.
	session := e.Group("", withTimeout(requestTimeout), s.identify)
	session.GET("/login", s.showLoginPage)
	session.POST("/login", s.login)
	manage := session.Group("", s.requireSession)
	manage.POST("/logout", s.logout)
	manage.GET("/admin", s.showAdminPage)
	manage.GET("/admin/services/new", s.showNewServicePage)
	manage.POST("/admin/services", s.createService)
	manage.GET("/admin/services/:name/edit", s.showEditServicePage)
	manage.POST("/admin/services/:name", s.updateService)
	manage.POST("/admin/services/:name/pause", s.pauseService)
	manage.POST("/admin/services/:name/resume", s.resumeService)
	manage.GET("/admin/services/:name/delete", s.showDeleteServicePage)
	manage.POST("/admin/services/:name/delete", s.deleteService)
	manage.POST("/admin/groups", s.createGroup)
	manage.POST("/admin/groups/:name/delete", s.deleteGroup)
	manage.POST("/admin/jobs/:id/requeue", s.requeueJobForm)
	manage.GET("/admin/users", s.showUsersPage)
	manage.POST("/admin/users", s.createUser)
	manage.POST("/admin/users/:name/delete", s.deleteUser)
	manage.GET("/account/tokens", s.showTokensPage)
	manage.POST("/account/tokens", s.createToken)
	manage.POST("/account/tokens/:id/revoke", s.revokeToken)

	pages := session.Group("", s.requireReader)
	pages.GET("/", s.showOverviewPage)
	pages.GET("/services/:name", s.showServicePage)
	pages.GET("/jobs", s.showJobsPage)
	pages.GET("/instances", s.showInstancesPage)
	pages.GET("/alerts", s.showAlertsPage)

	api := e.Group("/api/v1", withTimeout(requestTimeout), s.identify)
	change := api.Group("", s.requireToken)
	change.POST("/services", s.apiCreateService)
	change.PUT("/services/:name", s.apiUpdateService)
	change.POST("/services/:name/pause", s.apiSetEnabled(false))
	change.POST("/services/:name/resume", s.apiSetEnabled(true))
	change.DELETE("/services/:name", s.apiDeleteService)
	change.POST("/groups", s.apiCreateGroup)
	change.DELETE("/groups/:name", s.apiDeleteGroup)
	change.POST("/jobs/:id/requeue", s.apiRequeueJob)
	change.POST("/jobs/:id/cancel", s.apiCancelJob)
	// Registered last, so an unknown /api/v1 path answers like a read: 404, or
	// 401 when reading needs a login.
	read := api.Group("", s.requireReader)
	read.GET("/overview", s.getOverview)
	read.GET("/services", s.listServices)
	read.GET("/services/:name", s.getService)
	read.GET("/jobs", s.listJobs)
	read.GET("/instances", s.listInstances)
	read.GET("/alerts", s.listAlerts)
	return e
}

func isProbe(c echo.Context) bool {
	p := c.Path()
	return p == "/healthz" || p == "/readyz" || p == "/metrics"
}

func withTimeout(d time.Duration) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			ctx, cancel := context.WithTimeout(req.Context(), d)
			defer cancel()
			c.SetRequest(req.WithContext(ctx))
			err := next(c)
			// The error handler runs after this returns: give it a live context.
			c.SetRequest(req)
			return err
		}
	}
}

// render writes a component with a status code, streaming it: pages read
// all their data before rendering, so rendering fails only when the client
// goes away, and a large overview need not be held in memory twice.
func render(c echo.Context, status int, component templ.Component) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	h.Set(echo.HeaderCacheControl, "no-cache")
	c.Response().WriteHeader(status)
	if err := component.Render(c.Request().Context(), c.Response()); err != nil {
		return fmt.Errorf("render %s: %w", c.Request().URL.Path, err)
	}
	return nil
}

// page renders content inside the layout, or alone when the page's script
// asks for the fragment (?fragment=1) to refresh it in place.
func (s *Server) page(c echo.Context, status int, p templates.Page, content templ.Component) error {
	if c.QueryParam("fragment") == "1" {
		return render(c, status, content)
	}
	p.Instance = s.instance
	if who := currentPrincipal(c); who != nil && !who.viaToken {
		p.User, p.CSRF, p.CanManage = who.user.Name, who.csrf, who.canManage()
	}
	if status == http.StatusOK && !p.Form {
		p.Refresh = int(s.refresh / time.Second)
	}
	return render(c, status, templates.Layout(p, content))
}

// healthz says the process is alive; it never touches the database, so a
// database outage does not get a healthy replica restarted.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "instance": s.instance})
}

// readyz says whether this replica can do its work: the database answers and
// its schema is the one this binary expects.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	var version int64
	var dirty bool
	err := s.store.Pool().QueryRow(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty)
	switch {
	case err != nil:
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": "database: " + err.Error()})
	case dirty || version != int64(migrations.Latest()):
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable",
			"error": fmt.Sprintf("schema version %d (dirty=%t), this binary expects %d", version, dirty, migrations.Latest())})
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

// handleError renders every error once: JSON under /api and for the health
// endpoints, an HTML page elsewhere. 5xx are logged as errors, 4xx as
// warnings; a 5xx never shows its cause to the client.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		s.log.Warn("request failed after the response began", "path", c.Request().URL.Path, "err", err)
		return
	}
	code, msg := http.StatusInternalServerError, "internal error"
	var he *echo.HTTPError
	var connErr *pgconn.ConnectError
	switch {
	case errors.As(err, &he):
		code, msg = he.Code, fmt.Sprint(he.Message)
	case errors.Is(err, context.DeadlineExceeded):
		code, msg = http.StatusServiceUnavailable, "the database did not answer in time; try again"
	case errors.As(err, &connErr):
		code, msg = http.StatusServiceUnavailable, "the database is unreachable; try again"
	}
	path := c.Request().URL.Path
	if code >= 500 {
		s.log.Error("request failed", "path", path, "status", code, "err", err)
	} else {
		s.log.Warn("request rejected", "path", path, "status", code, "err", err)
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(code)
		return
	}
	if strings.HasPrefix(path, "/api/") || isProbe(c) || strings.HasPrefix(path, "/static/") {
		_ = c.JSON(code, map[string]string{"error": msg})
		return
	}
	title := http.StatusText(code)
	if title == "" {
		title = "Error"
	}
	page := templates.Page{Title: title}
	if rerr := s.page(c, code, page, templates.Error(templates.ErrorView{Code: code, Title: title, Message: msg})); rerr != nil {
		s.log.Error("render error page", "err", rerr)
		_ = c.String(code, msg)
	}
}
