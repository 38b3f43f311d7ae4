package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/auth"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

// The one message a failed login shows, so it tells nobody whether a name
// exists; and the one a blocked login shows.
const (
	loginFailed  = "Unknown user or wrong password."
	loginBlocked = "Too many failed logins for this account or from this address. Wait a few minutes and try again."
)

// showLoginPage renders the login form with a fresh double-submit token: the
// form is the one POST made before a session exists.
func (s *Server) showLoginPage(c echo.Context) error {
	if p := currentPrincipal(c); p != nil && !p.viaToken {
		return c.Redirect(http.StatusSeeOther, localPath(c.QueryParam("next")))
	}
	return s.renderLogin(c, http.StatusOK, templates.LoginView{Next: localPath(c.QueryParam("next"))})
}

func (s *Server) renderLogin(c echo.Context, status int, v templates.LoginView) error {
	token, err := auth.NewSecret("")
	if err != nil {
		return err
	}
	s.setCookie(c, loginCSRFCookie, token, 0)
	v.CSRF = token
	return s.page(c, status, templates.Page{Title: "Log in", Form: true}, templates.Login(v))
}

// login checks the rate limit, then the password; whatever fails, the answer
// is the same generic message.
func (s *Server) login(c echo.Context) error {
	ctx := c.Request().Context()
	name := strings.TrimSpace(c.FormValue("name"))
	password := c.FormValue("password")
	next := localPath(c.FormValue("next"))
	ck, err := c.Cookie(loginCSRFCookie)
	if err != nil || !sameToken(c.FormValue(csrfField), ck.Value) {
		return echo.NewHTTPError(http.StatusForbidden, "the login form has expired or did not come from this site: reload it and try again")
	}
	view := templates.LoginView{Name: name, Next: next}
	addr := c.RealIP()
	blocked, err := s.store.LoginBlocked(ctx, name, addr, s.loginLimit)
	if err != nil {
		return err
	}
	if blocked {
		view.Error = loginBlocked
		return s.renderLogin(c, http.StatusTooManyRequests, view)
	}
	// Each check takes 64 MiB for a moment: a burst of logins waits its turn
	// instead of exhausting memory.
	select {
	case s.passwordChecks <- struct{}{}:
		defer func() { <-s.passwordChecks }()
	case <-ctx.Done():
		return ctx.Err()
	}
	u, err := s.store.UserByName(ctx, name)
	ok := false
	switch {
	case errors.Is(err, monitoring.ErrNotFound):
		auth.CheckNoPassword(password)
	case err != nil:
		return err
	default:
		ok = auth.CheckPassword(u.PasswordHash, password)
	}
	if !ok {
		if err := s.store.LoginFailureRecord(ctx, name, addr); err != nil {
			return err
		}
		s.log.Warn("login failed", "user", name, "addr", addr)
		view.Error = loginFailed
		return s.renderLogin(c, http.StatusUnauthorized, view)
	}
	id, err := auth.NewSecret("")
	if err != nil {
		return err
	}
	csrf, err := auth.NewSecret("")
	if err != nil {
		return err
	}
	if err := s.store.SessionCreate(ctx, monitoring.SessionParams{
		UserID: u.ID, IDHash: auth.HashSecret(id), CSRFToken: csrf, Idle: s.sessionIdle, Absolute: s.sessionAbsolute,
	}); err != nil {
		return err
	}
	s.setCookie(c, sessionCookie, id, s.sessionAbsolute)
	s.clearCookie(c, loginCSRFCookie)
	s.log.Info("login", "user", u.Name, "addr", addr)
	return c.Redirect(http.StatusSeeOther, next)
}

// logout deletes the session row: every replica stops honouring it at once.
func (s *Server) logout(c echo.Context) error {
	p := currentPrincipal(c)
	if err := s.store.SessionDelete(c.Request().Context(), p.sessionID); err != nil {
		return err
	}
	s.clearCookie(c, sessionCookie)
	return c.Redirect(http.StatusSeeOther, "/login")
}

// localPath keeps a post-login redirect on this site: "/x" but not "//evil"
// or "/\evil", which browsers read as another host, nor anything with a
// control character: browsers drop tabs and newlines from a URL, so
// "/\t/evil" is "//evil" too.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") ||
		strings.IndexFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "/"
	}
	return p
}
