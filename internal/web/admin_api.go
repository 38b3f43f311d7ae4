package web

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/templates"
)

// The API's mutations: the same checks and store calls as the management
// pages, authenticated by Bearer token only (see requireToken).

type problemsBody struct {
	Error  string            `json:"error"`
	Fields map[string]string `json:"fields"`
}

func bindService(c echo.Context) (serviceInput, error) {
	var in serviceInput
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, echo.NewHTTPError(http.StatusBadRequest, "body must be a JSON object with name, group, url, interval, timeout, enabled: "+err.Error())
	}
	return in, nil
}

func (s *Server) apiSaveService(c echo.Context, name string) error {
	p := currentPrincipal(c)
	if !p.canManage() {
		return errForbidden
	}
	in, err := bindService(c)
	if err != nil {
		return err
	}
	res, err := s.saveService(c.Request().Context(), p, name, in)
	if err != nil {
		return adminError(err)
	}
	if res.problems != nil {
		return c.JSON(http.StatusUnprocessableEntity, problemsBody{Error: "the service is not valid", Fields: res.problems})
	}
	status := http.StatusOK
	if name == "" {
		status, name = http.StatusCreated, in.Name
	}
	m, err := s.store.ManagedServiceByName(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(status, map[string]any{
		"name": m.Name, "group": m.Group, "url": templates.RedactURL(m.URL), "enabled": m.Enabled, "source": m.Source,
		"interval_seconds": int64(m.Interval.Seconds()), "timeout_ms": m.Timeout.Milliseconds(),
	})
}

func (s *Server) apiCreateService(c echo.Context) error { return s.apiSaveService(c, "") }
func (s *Server) apiUpdateService(c echo.Context) error { return s.apiSaveService(c, c.Param("name")) }

func (s *Server) apiSetEnabled(enabled bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, name := c.Request().Context(), c.Param("name")
		action := "service.pause"
		if enabled {
			action = "service.resume"
		}
		err := s.changeService(ctx, currentPrincipal(c), name, action, func() error {
			return s.store.ServiceSetEnabled(ctx, name, enabled)
		})
		if err != nil {
			return adminError(err)
		}
		return c.JSON(http.StatusOK, map[string]any{"name": name, "enabled": enabled})
	}
}

func (s *Server) apiDeleteService(c echo.Context) error {
	ctx, name := c.Request().Context(), c.Param("name")
	keep, err := historyChoice(c.QueryParam("history"))
	if err != nil {
		return err
	}
	err = s.changeService(ctx, currentPrincipal(c), name, deleteAction(keep), func() error {
		return s.store.ServiceDelete(ctx, name, keep)
	})
	if err != nil {
		return adminError(err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiCreateGroup(c echo.Context) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, 4<<10)).Decode(&body); err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, `body must be {"name": "..."}`)
	}
	problem, err := s.saveGroup(c.Request().Context(), currentPrincipal(c), body.Name)
	if err != nil {
		return adminError(err)
	}
	if problem != "" {
		return c.JSON(http.StatusUnprocessableEntity, problemsBody{Error: problem, Fields: map[string]string{"name": problem}})
	}
	return c.JSON(http.StatusCreated, map[string]string{"name": body.Name})
}

func (s *Server) apiDeleteGroup(c echo.Context) error {
	p := currentPrincipal(c)
	if !p.isAdmin() {
		return errForbidden
	}
	ctx, name := c.Request().Context(), c.Param("name")
	if err := s.store.GroupDelete(ctx, name); err != nil {
		return adminError(err)
	}
	s.audit(ctx, p, "group.delete", name, "")
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiRequeueJob(c echo.Context) error {
	if err := s.requeueJob(c.Request().Context(), currentPrincipal(c), c.Param("id")); err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return err
		}
		return adminError(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"id": c.Param("id"), "state": "READY"})
}

func (s *Server) apiCancelJob(c echo.Context) error {
	if err := s.cancelJob(c.Request().Context(), currentPrincipal(c), c.Param("id")); err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return err
		}
		return adminError(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"id": c.Param("id"), "state": "FAILED"})
}
