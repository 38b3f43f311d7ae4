package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/auth"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

// showUsersPage lists accounts for an admin.
func (s *Server) showUsersPage(c echo.Context) error {
	v := templates.UsersView{Role: auth.RoleViewer}
	switch c.QueryParam("done") {
	case "created":
		v.Notice = fmt.Sprintf("Account %q created.", c.QueryParam("subject"))
	case "deleted":
		v.Notice = fmt.Sprintf("Account %q deleted; its sessions and tokens ended with it.", c.QueryParam("subject"))
	}
	return s.renderUsers(c, http.StatusOK, v)
}

func (s *Server) renderUsers(c echo.Context, status int, v templates.UsersView) error {
	p := currentPrincipal(c)
	if !p.isAdmin() {
		return errForbidden
	}
	ctx := c.Request().Context()
	var err error
	if v.Users, err = s.store.Users(ctx); err != nil {
		return err
	}
	if v.Groups, err = s.store.Groups(ctx); err != nil {
		return err
	}
	v.Self, v.CSRF = p.user.Name, p.csrf
	return s.page(c, status, templates.Page{Title: "Accounts", Section: "admin", Form: true}, templates.Users(v))
}

// createUser adds an account; problems are shown next to their fields and
// nothing is written.
func (s *Server) createUser(c echo.Context) error {
	p := currentPrincipal(c)
	if !p.isAdmin() {
		return errForbidden
	}
	ctx := c.Request().Context()
	form, err := c.FormParams()
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "unreadable form")
	}
	v := templates.UsersView{Name: form.Get("name"), Role: form.Get("role"), Chosen: form["group"], Errors: map[string]string{}}
	if msg := accountNameProblem(v.Name); msg != "" {
		v.Errors["name"] = msg
	}
	if !auth.ValidRole(v.Role) {
		v.Errors["role"] = "choose admin, editor or viewer"
	}
	if len(v.Chosen) > 0 && v.Role != auth.RoleEditor {
		v.Errors["groups"] = "groups apply to editors only: admins change everything, viewers nothing"
	}
	hash, err := auth.HashPassword(form.Get("password"))
	if errors.Is(err, auth.ErrWeakPassword) {
		v.Errors["password"] = err.Error()
	} else if err != nil {
		return err
	}
	if len(v.Errors) == 0 {
		_, err = s.store.UserCreate(ctx, monitoring.UserCreateParams{Name: v.Name, Role: v.Role, PasswordHash: hash, Groups: v.Chosen})
		switch {
		case errors.Is(err, monitoring.ErrExists):
			v.Errors["name"] = fmt.Sprintf("an account named %q exists already", v.Name)
		case errors.Is(err, monitoring.ErrNotFound):
			v.Errors["groups"] = "a chosen group no longer exists; reload the page"
		case err != nil:
			return err
		}
	}
	if len(v.Errors) > 0 {
		return s.renderUsers(c, http.StatusUnprocessableEntity, v)
	}
	s.audit(ctx, p, "user.create", v.Name, "role="+v.Role+" groups="+strings.Join(v.Chosen, ","))
	return c.Redirect(http.StatusSeeOther, "/admin/users?done=created&subject="+url.QueryEscape(v.Name))
}

func (s *Server) deleteUser(c echo.Context) error {
	p := currentPrincipal(c)
	if !p.isAdmin() {
		return errForbidden
	}
	ctx, name := c.Request().Context(), c.Param("name")
	if name == p.user.Name {
		return echo.NewHTTPError(http.StatusConflict, "you cannot delete your own account; ask another admin")
	}
	if err := s.store.UserDelete(ctx, name); err != nil {
		return adminError(err)
	}
	s.audit(ctx, p, "user.delete", name, "")
	return c.Redirect(http.StatusSeeOther, "/admin/users?done=deleted&subject="+url.QueryEscape(name))
}

// accountNameProblem applies the config file's rules for names.
func accountNameProblem(name string) string {
	switch {
	case name == "":
		return "name is missing"
	case !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl):
		return "name contains a control character; use printable characters"
	case utf8.RuneCountInString(name) > 200:
		return "name is longer than 200 characters"
	case strings.TrimSpace(name) != name:
		return "name starts or ends with a space; remove it"
	}
	return ""
}
