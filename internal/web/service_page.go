package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

// chartBuckets are the bar widths of the service charts: about 60 bars for
// every range, whole hours from 7 days up so those read the hourly rollup.
var chartBuckets = map[string]time.Duration{
	"1h": time.Minute, "24h": 24 * time.Minute, "7d": 3 * time.Hour, "30d": 12 * time.Hour,
}

type serviceQuery struct {
	name      string
	rangeName string
	span      time.Duration
	limit     int
	cursor    int64
}

func parseServiceQuery(c echo.Context) (serviceQuery, error) {
	var q serviceQuery
	var err error
	if q.name, err = nameParam(c); err != nil {
		return q, err
	}
	if q.rangeName, q.span, err = rangeParam(c); err != nil {
		return q, err
	}
	if q.limit, err = limitParam(c); err != nil {
		return q, err
	}
	q.cursor, err = cursorParam(c)
	return q, err
}

func (s *Server) serviceDetail(c echo.Context, q serviceQuery) (monitoring.ServiceDetail, error) {
	d, err := s.store.ServiceDetail(c.Request().Context(), monitoring.ServiceDetailParams{
		Name: q.name, Range: q.span, Bucket: chartBuckets[q.rangeName], Results: q.limit, BeforeSlot: q.cursor,
	})
	if errors.Is(err, monitoring.ErrNotFound) {
		return d, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("No service is named %q. The overview lists them all.", q.name))
	}
	return d, err
}

func (s *Server) showServicePage(c echo.Context) error {
	q, err := parseServiceQuery(c)
	if err != nil {
		return err
	}
	d, err := s.serviceDetail(c, q)
	if err != nil {
		return err
	}
	deliveries, err := s.alertDeliveries(c, d.Alerts)
	if err != nil {
		return err
	}
	v := templates.ServiceView{Detail: d, Deliveries: deliveries, Range: q.rangeName}
	if q.cursor != 0 {
		v.FirstHref = pageHref(c, map[string]string{"cursor": ""})
	}
	if d.NextBeforeSlot != 0 {
		v.NextHref = pageHref(c, map[string]string{"cursor": strconv.FormatInt(d.NextBeforeSlot, 10)})
	}
	return s.page(c, http.StatusOK, templates.Page{Title: d.Service.Name}, templates.Service(v))
}

// getService is GET /api/v1/services/{name}: the service page as JSON.
func (s *Server) getService(c echo.Context) error {
	q, err := parseServiceQuery(c)
	if err != nil {
		return err
	}
	d, err := s.serviceDetail(c, q)
	if err != nil {
		return err
	}
	results := make([]apiResult, len(d.Results))
	for i, r := range d.Results {
		results[i] = toAPIResult(r)
	}
	deliveries, err := s.alertDeliveries(c, d.Alerts)
	if err != nil {
		return err
	}
	alerts := make([]apiAlert, len(d.Alerts))
	for i, a := range d.Alerts {
		alerts[i] = toAPIAlert(a, deliveries[a.ID])
	}
	return c.JSON(http.StatusOK, map[string]any{
		"service":     toAPIServiceSummary(d.Service),
		"series":      toAPISeries(q.rangeName, d.Series),
		"results":     results,
		"next_cursor": cursorString(d.NextBeforeSlot),
		"alerts":      alerts,
	})
}
