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

func (s *Server) jobPage(c echo.Context) (monitoring.JobListParams, monitoring.JobPage, error) {
	var p monitoring.JobListParams
	var err error
	if p.State, err = stateParam(c); err != nil {
		return p, monitoring.JobPage{}, err
	}
	if p.Limit, err = limitParam(c); err != nil {
		return p, monitoring.JobPage{}, err
	}
	if p.Before, err = cursorParam(c); err != nil {
		return p, monitoring.JobPage{}, err
	}
	p.Service = strings.TrimSpace(c.QueryParam("service"))
	page, err := s.store.JobList(c.Request().Context(), p)
	if errors.Is(err, monitoring.ErrNotFound) {
		return p, page, echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("No service is named %q.", p.Service))
	}
	return p, page, err
}

func (s *Server) showJobsPage(c echo.Context) error {
	p, page, err := s.jobPage(c)
	if err != nil {
		return err
	}
	v := templates.JobsView{Page: page, State: p.State, Service: p.Service, Limit: p.Limit}
	if p.Before != 0 {
		v.FirstHref = pageHref(c, map[string]string{"cursor": ""})
	}
	if page.Next != 0 {
		v.NextHref = pageHref(c, map[string]string{"cursor": strconv.FormatInt(page.Next, 10)})
	}
	return s.page(c, http.StatusOK, templates.Page{Title: "Jobs", Section: "jobs"}, templates.Jobs(v))
}

// listJobs is GET /api/v1/jobs?state=&service=&limit=&cursor=.
func (s *Server) listJobs(c echo.Context) error {
	_, page, err := s.jobPage(c)
	if err != nil {
		return err
	}
	jobs := make([]apiJob, len(page.Jobs))
	for i, j := range page.Jobs {
		jobs[i] = toAPIJob(j)
	}
	return c.JSON(http.StatusOK, map[string]any{"jobs": jobs, "next_cursor": cursorString(page.Next)})
}
