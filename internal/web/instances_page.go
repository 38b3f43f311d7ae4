package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/templates"
)

func (s *Server) showInstancesPage(c echo.Context) error {
	list, err := s.store.InstanceList(c.Request().Context())
	if err != nil {
		return err
	}
	v := templates.InstancesView{List: list, Self: s.instance}
	return s.page(c, http.StatusOK, templates.Page{Title: "Replicas", Section: "instances"}, templates.Instances(v))
}

// listInstances is GET /api/v1/instances.
func (s *Server) listInstances(c echo.Context) error {
	list, err := s.store.InstanceList(c.Request().Context())
	if err != nil {
		return err
	}
	out := make([]apiInstance, len(list.Instances))
	for i, in := range list.Instances {
		out[i] = toAPIInstance(in)
	}
	return c.JSON(http.StatusOK, map[string]any{"instances": out})
}
