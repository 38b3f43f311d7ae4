package web

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/auth"
	"github.com/vigilhq/vigil/internal/monitoring"
)

// Cookie names. The session cookie holds a random id; PostgreSQL holds its
// hash, so every replica honours it and a logout ends it everywhere at once.
const (
	sessionCookie    = "vigil_session"
	loginCSRFCookie  = "vigil_login_csrf"
	csrfField        = "_csrf"
	principalKey     = "vigil.principal"
	defaultIdle      = 2 * time.Hour
	defaultAbsolute  = 24 * time.Hour
	defaultLoginWait = 15 * time.Minute
)

// principal is who makes a request: a user by session or by API token.
type principal struct {
	user      monitoring.User // Role is the token's role for a token
	csrf      string          // the session's form token; "" for a token
	viaToken  bool
	sessionID []byte // the session's hash, for logout
}

func (p *principal) actor() string {
	if p.viaToken {
		return p.user.Name + " (API token)"
	}
	return p.user.Name
}

// canChange reports whether p may change services and jobs of group ("" for
// ungrouped, which only admins may change).
func (p *principal) canChange(group string) bool {
	if p == nil {
		return false
	}
	switch p.user.Role {
	case auth.RoleAdmin:
		return true
	case auth.RoleEditor:
		return group != "" && slices.Contains(p.user.Groups, group)
	}
	return false
}

func (p *principal) isAdmin() bool { return p != nil && p.user.Role == auth.RoleAdmin }

func (p *principal) canManage() bool {
	return p != nil && (p.user.Role == auth.RoleAdmin || p.user.Role == auth.RoleEditor)
}

func currentPrincipal(c echo.Context) *principal {
	p, _ := c.Get(principalKey).(*principal)
	return p
}

// identify finds the request's principal: a Bearer token under /api, else the
// session cookie. An unknown, expired or revoked credential is treated as none
// (a stale cookie is cleared), so public pages still work.
func (s *Server) identify(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		if h := c.Request().Header.Get(echo.HeaderAuthorization); h != "" && strings.HasPrefix(c.Request().URL.Path, "/api/") {
			token, ok := strings.CutPrefix(h, "Bearer ")
			if !ok {
				return echo.NewHTTPError(http.StatusUnauthorized, "use Authorization: Bearer <token>")
			}
			u, err := s.store.APITokenUse(ctx, auth.HashSecret(strings.TrimSpace(token)))
			if errors.Is(err, monitoring.ErrNotFound) {
				return echo.NewHTTPError(http.StatusUnauthorized, "unknown or revoked API token")
			}
			if err != nil {
				return err
			}
			c.Set(principalKey, &principal{user: u, viaToken: true})
			return next(c)
		}
		if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
			hash := auth.HashSecret(ck.Value)
			sess, err := s.store.SessionTouch(ctx, hash, s.sessionIdle)
			switch {
			case errors.Is(err, monitoring.ErrNotFound):
				s.clearCookie(c, sessionCookie)
			case err != nil:
				return err
			default:
				c.Set(principalKey, &principal{user: sess.User, csrf: sess.CSRFToken, sessionID: hash})
			}
		}
		return next(c)
	}
}

// requireReader lets a request read when the dashboard is public or someone
// is logged in; otherwise pages send the browser to the login page and the
// API answers 401.
func (s *Server) requireReader(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.publicDashboard || currentPrincipal(c) != nil {
			return next(c)
		}
		if strings.HasPrefix(c.Request().URL.Path, "/api/") {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="vigil"`)
			return echo.NewHTTPError(http.StatusUnauthorized, "log in or send Authorization: Bearer <token>")
		}
		return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
	}
}

// requireSession guards the browser's management pages: a login, and for
// every POST the session's CSRF token in the form.
func (s *Server) requireSession(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := currentPrincipal(c)
		if p == nil || p.viaToken {
			if c.Request().Method != http.MethodGet {
				return echo.NewHTTPError(http.StatusUnauthorized, "your session has ended: log in again")
			}
			return c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
		}
		if c.Request().Method == http.MethodPost && !sameToken(c.FormValue(csrfField), p.csrf) {
			return echo.NewHTTPError(http.StatusForbidden, "the form has expired or did not come from this site: reload the page and try again")
		}
		return next(c)
	}
}

// requireToken guards API mutations: only a Bearer token, so a browser's
// cookie can never be ridden by another site to change anything.
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := currentPrincipal(c)
		if p == nil || !p.viaToken {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="vigil"`)
			return echo.NewHTTPError(http.StatusUnauthorized, "changes through the API need Authorization: Bearer <token>; create one under /account/tokens")
		}
		return next(c)
	}
}

func sameToken(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (s *Server) setCookie(c echo.Context, name, value string, maxAge time.Duration) {
	c.SetCookie(&http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: int(maxAge / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureCookies || c.IsTLS(),
	})
}

func (s *Server) clearCookie(c echo.Context, name string) {
	c.SetCookie(&http.Cookie{
		Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureCookies || c.IsTLS(),
	})
}

var errForbidden = echo.NewHTTPError(http.StatusForbidden, "your role does not allow this change")
