package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

// Query parameters are checked the same way for a page and its JSON: a bad
// value is a 400 that names the parameter and what it accepts.

func badRequest(format string, args ...any) error {
	return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf(format, args...))
}

// limitParam reads ?limit=: empty for the default page size.
func limitParam(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > monitoring.MaxPageSize {
		return 0, badRequest("limit must be a whole number from 1 to %d", monitoring.MaxPageSize)
	}
	return n, nil
}

// cursorParam reads ?cursor=: empty for the first page, otherwise a
// next_cursor value from an earlier response.
func cursorParam(c echo.Context) (int64, error) {
	v := c.QueryParam("cursor")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, badRequest("cursor must be the next_cursor value of an earlier response")
	}
	return n, nil
}

// stateParam reads ?state=, in any letter case.
func stateParam(c echo.Context) (string, error) {
	v := strings.ToUpper(strings.TrimSpace(c.QueryParam("state")))
	if v != "" && !slices.Contains(monitoring.JobStates, v) {
		return "", badRequest("state must be one of %s", strings.Join(monitoring.JobStates, ", "))
	}
	return v, nil
}

var rangeDurations = map[string]time.Duration{
	"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour,
}

// rangeParam reads ?range= for the service charts; 24h by default.
func rangeParam(c echo.Context) (string, time.Duration, error) {
	v := c.QueryParam("range")
	if v == "" {
		v = "24h"
	}
	d, ok := rangeDurations[v]
	if !ok {
		return "", 0, badRequest("range must be one of %s", strings.Join(templates.Ranges, ", "))
	}
	return v, d, nil
}

// nameParam is the :name path parameter, unescaped. Echo matches on the raw
// path when it holds escapes (a name with "/" arrives as %2F), and then
// leaves the parameter escaped.
func nameParam(c echo.Context) (string, error) {
	v := c.Param("name")
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	name, err := url.PathUnescape(v)
	if err != nil {
		return "", badRequest("the service name in the path is not validly escaped")
	}
	return name, nil
}

// pageHref is the current path with query values replaced; "" values are
// dropped, so links stay short.
func pageHref(c echo.Context, set map[string]string) string {
	q := c.Request().URL.Query()
	q.Del("fragment")
	for k, v := range set {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	u := url.URL{Path: c.Request().URL.Path, RawPath: c.Request().URL.RawPath, RawQuery: q.Encode()}
	return u.String()
}

func cursorString(n int64) *string {
	if n == 0 {
		return nil
	}
	s := strconv.FormatInt(n, 10)
	return &s
}
