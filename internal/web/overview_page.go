package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

func (s *Server) showOverviewPage(c echo.Context) error {
	o, err := s.store.Overview(c.Request().Context(), monitoring.OverviewParams{})
	if err != nil {
		return err
	}
	return s.page(c, http.StatusOK, templates.Page{Title: "Overview", Section: "overview"}, templates.Overview(o))
}

type apiOverview struct {
	Summary struct {
		Services struct {
			Total   int `json:"total"`
			Up      int `json:"up"`
			Down    int `json:"down"`
			Pending int `json:"pending"`
			Paused  int `json:"paused"`
		} `json:"services"`
		Jobs struct {
			Ready       int64 `json:"ready"`
			Running     int64 `json:"running"`
			Failed      int64 `json:"failed"`
			LeaseLapsed int64 `json:"lease_lapsed"`
		} `json:"jobs"`
		LiveInstances int `json:"live_instances"`
	} `json:"summary"`
	Services  []apiServiceSummary `json:"services"`
	Truncated bool                `json:"truncated"`
}

// getOverview is the front page as JSON: the summary, and every service with
// uptime and its latest results.
func (s *Server) getOverview(c echo.Context) error {
	o, err := s.store.Overview(c.Request().Context(), monitoring.OverviewParams{})
	if err != nil {
		return err
	}
	var out apiOverview
	sum := &out.Summary
	sum.Services.Total, sum.Services.Up, sum.Services.Down = o.Total, o.Counts.Up, o.Counts.Down
	sum.Services.Pending, sum.Services.Paused = o.Counts.Pending, o.Counts.Paused
	sum.Jobs.Ready, sum.Jobs.Running, sum.Jobs.Failed, sum.Jobs.LeaseLapsed = o.Jobs.Ready, o.Jobs.Running, o.Jobs.Failed, o.Jobs.ExpiredRunning
	sum.LiveInstances = o.LiveInstances
	out.Services = make([]apiServiceSummary, len(o.Services))
	for i, svc := range o.Services {
		out.Services[i] = toAPIServiceSummary(svc)
	}
	out.Truncated = o.Truncated()
	return c.JSON(http.StatusOK, out)
}

// listServices is GET /api/v1/services: every active service with its
// latest status, in the overview's order.
func (s *Server) listServices(c echo.Context) error {
	services, err := s.store.ServiceStatuses(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]apiService, len(services))
	for i, svc := range services {
		out[i] = toAPIService(svc)
	}
	return c.JSON(http.StatusOK, map[string]any{"services": out})
}
