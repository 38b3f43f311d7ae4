package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

// alertDeliveries reads the webhook deliveries of a page of alerts.
func (s *Server) alertDeliveries(c echo.Context, alerts []monitoring.Alert) (map[int64][]monitoring.DeliveryRow, error) {
	ids := make([]int64, len(alerts))
	for i, a := range alerts {
		ids[i] = a.ID
	}
	return s.store.EventDeliveries(c.Request().Context(), ids)
}

func (s *Server) alertPage(c echo.Context) (monitoring.AlertListParams, monitoring.AlertPage, error) {
	var p monitoring.AlertListParams
	var err error
	if p.Limit, err = limitParam(c); err != nil {
		return p, monitoring.AlertPage{}, err
	}
	if p.Before, err = cursorParam(c); err != nil {
		return p, monitoring.AlertPage{}, err
	}
	p.Service = strings.TrimSpace(c.QueryParam("service"))
	page, err := s.store.AlertList(c.Request().Context(), p)
	if errors.Is(err, monitoring.ErrNotFound) {
		return p, page, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("No service is named %q.", p.Service))
	}
	return p, page, err
}

func (s *Server) showAlertsPage(c echo.Context) error {
	p, page, err := s.alertPage(c)
	if err != nil {
		return err
	}
	deliveries, err := s.alertDeliveries(c, page.Alerts)
	if err != nil {
		return err
	}
	v := templates.AlertsView{Page: page, Deliveries: deliveries, Service: p.Service}
	if p.Before != 0 {
		v.FirstHref = pageHref(c, map[string]string{"cursor": ""})
	}
	if page.Next != 0 {
		v.NextHref = pageHref(c, map[string]string{"cursor": strconv.FormatInt(page.Next, 10)})
	}
	return s.page(c, http.StatusOK, templates.Page{Title: "Alerts", Section: "alerts"}, templates.Alerts(v))
}

// listAlerts is GET /api/v1/alerts?service=&limit=&cursor=.
func (s *Server) listAlerts(c echo.Context) error {
	_, page, err := s.alertPage(c)
	if err != nil {
		return err
	}
	deliveries, err := s.alertDeliveries(c, page.Alerts)
	if err != nil {
		return err
	}
	alerts := make([]apiAlert, len(page.Alerts))
	for i, a := range page.Alerts {
		alerts[i] = toAPIAlert(a, deliveries[a.ID])
	}
	return c.JSON(http.StatusOK, map[string]any{"alerts": alerts, "next_cursor": cursorString(page.Next)})
}
