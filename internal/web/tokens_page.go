package web

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/auth"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

// showTokensPage lists the user's API tokens (an admin's lists everyone's).
func (s *Server) showTokensPage(c echo.Context) error {
	return s.renderTokens(c, http.StatusOK, templates.TokensView{})
}

func (s *Server) renderTokens(c echo.Context, status int, v templates.TokensView) error {
	p := currentPrincipal(c)
	owner := p.user.ID
	if p.isAdmin() {
		owner = 0
	}
	var err error
	if v.Tokens, err = s.store.APITokens(c.Request().Context(), owner); err != nil {
		return err
	}
	v.Roles = tokenRoles(p.user.Role)
	v.ShowUser = p.isAdmin()
	v.CSRF = p.csrf
	return s.page(c, status, templates.Page{Title: "API tokens", Section: "admin", Form: true}, templates.Tokens(v))
}

// createToken makes a token for the logged-in user with its role or a lower
// one, stores its hash and shows the secret once.
func (s *Server) createToken(c echo.Context) error {
	p := currentPrincipal(c)
	ctx := c.Request().Context()
	name := strings.TrimSpace(c.FormValue("name"))
	role := c.FormValue("role")
	switch {
	case name == "" || len(name) > 100:
		return s.renderTokens(c, http.StatusUnprocessableEntity, templates.TokensView{Name: name, Error: "name the token (1 to 100 characters), e.g. after the script that uses it"})
	case !slices.Contains(tokenRoles(p.user.Role), role):
		return s.renderTokens(c, http.StatusUnprocessableEntity, templates.TokensView{Name: name, Error: "role: choose " + strings.Join(tokenRoles(p.user.Role), ", ")})
	}
	secret, err := auth.NewSecret(auth.TokenPrefix)
	if err != nil {
		return err
	}
	id, err := s.store.APITokenCreate(ctx, p.user.ID, name, role, auth.HashSecret(secret))
	if err != nil {
		return err
	}
	s.audit(ctx, p, "token.create", strconv.FormatInt(id, 10), "name="+name+" role="+role)
	return s.renderTokens(c, http.StatusCreated, templates.TokensView{Created: secret})
}

func (s *Server) revokeToken(c echo.Context) error {
	p := currentPrincipal(c)
	ctx := c.Request().Context()
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil {
		return echo.NewHTTPError(http.StatusBadRequest, "token id must be a number")
	}
	owner := p.user.ID
	if p.isAdmin() {
		owner = 0
	}
	if err := s.store.APITokenRevoke(ctx, id, owner); err != nil {
		if err == monitoring.ErrNotFound {
			return echo.NewHTTPError(http.StatusNotFound, "no such live token of yours")
		}
		return err
	}
	s.audit(ctx, p, "token.revoke", c.Param("id"), "")
	return c.Redirect(http.StatusSeeOther, "/account/tokens")
}
