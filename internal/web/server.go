// Package web serves Vigil's HTTP side: health endpoints, /metrics, and the
// pages. Handlers call package monitoring; they hold no SQL.
package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/migrations"
)

// Server holds what handlers need.
type Server struct {
	store    *monitoring.Store
	gatherer prometheus.Gatherer
	log      *slog.Logger
	instance string
}

// Options configure the HTTP side.
type Options struct {
	Store    *monitoring.Store
	Gatherer prometheus.Gatherer
	Logger   *slog.Logger
	Instance string
}

// New builds the echo router with its middleware in one place.
func New(opts Options) *echo.Echo {
	s := &Server{store: opts.Store, gatherer: opts.Gatherer, log: opts.Logger, instance: opts.Instance}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.Recover())
	e.Use(middleware.RequestID())
	e.Use(middleware.SecureWithConfig(middleware.SecureConfig{
		XSSProtection:      "0",
		ContentTypeNosniff: "nosniff",
		XFrameOptions:      "DENY",
		ReferrerPolicy:     "same-origin",
	}))
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURI: true, LogMethod: true, LogLatency: true, LogError: true,
		Skipper: func(c echo.Context) bool {
			p := c.Path()
			return p == "/healthz" || p == "/readyz" || p == "/metrics"
		},
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			s.log.Debug("request", "method", v.Method, "uri", v.URI, "status", v.Status, "latency", v.Latency)
			return nil
		},
	}))

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{})))
	e.GET("/", s.showOverviewPage)
	return e
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

// handleError renders every error once: JSON under /api and for health
// endpoints, plain text elsewhere. 5xx are logged as errors, 4xx as warnings.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code := http.StatusInternalServerError
	msg := "internal error"
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		msg = fmt.Sprint(he.Message)
	}
	if code >= 500 {
		s.log.Error("request failed", "path", c.Request().URL.Path, "status", code, "err", err)
	} else {
		s.log.Warn("request rejected", "path", c.Request().URL.Path, "status", code, "err", err)
	}
	_ = c.JSON(code, map[string]string{"error": msg})
}
