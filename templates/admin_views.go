package templates

import (
	"net/url"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// LoginView is the login page's data.
type LoginView struct {
	Name  string // the name typed, kept after a failed attempt
	Next  string // where to go after logging in (a local path)
	CSRF  string
	Error string // generic: never says which of name or password was wrong
}

// ServiceForm is the create/edit form's data: what was typed and, per field
// (name, group, url, interval, timeout, enabled), what is wrong with it.
type ServiceForm struct {
	Editing  bool // false: a new service
	Name     string
	Group    string
	URL      string
	Interval string // a Go duration, as in the config file
	Timeout  string
	Enabled  bool
	Groups   []string // choosable groups
	Errors   map[string]string
	Message  string // a problem not tied to one field
	CSRF     string
}

// AdminView is the management page's data.
type AdminView struct {
	Services   []monitoring.ManagedService
	Groups     []string
	FailedJobs []monitoring.JobRow
	CanEdit    func(group string) bool // may the viewer change services of this group
	IsAdmin    bool
	Audit      []monitoring.AuditEntry // newest first; admins only
	GroupError string
	GroupName  string
	Notice     string
	CSRF       string
}

// DeleteServiceView asks for confirmation before a service is deleted.
type DeleteServiceView struct {
	Name string
	CSRF string
}

// TokensView is the API tokens page's data.
type TokensView struct {
	Tokens   []monitoring.APIToken
	Roles    []string // roles a new token may carry
	Created  string   // the secret of a token just created: shown this once
	Name     string
	Error    string
	ShowUser bool // an admin sees everyone's tokens
	CSRF     string
}

func servicePath(name string) string      { return ServiceHref(name) }
func serviceAdminPath(name string) string { return "/admin/services/" + url.PathEscape(name) }
func pathEscape(s string) string          { return url.PathEscape(s) }

// pauseAction is the action that flips a service's enabled flag.
func pauseAction(enabled bool) string {
	if enabled {
		return "/pause"
	}
	return "/resume"
}

// UsersView is the accounts page's data (admins only).
type UsersView struct {
	Users  []monitoring.User
	Groups []string // for an editor's memberships
	Self   string   // the admin viewing: not deletable here
	// The new-account form: what was typed and the problems by field (name,
	// role, password, groups).
	Name   string
	Role   string
	Chosen []string
	Errors map[string]string
	CSRF   string
	Notice string
}
