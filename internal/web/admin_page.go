package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/vigilhq/vigil/internal/auth"
	"github.com/vigilhq/vigil/internal/config"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/templates"
)

// showAdminPage lists services, groups and FAILED jobs with what the user may
// do to each. Viewers get 403: there is nothing here they may do.
func (s *Server) showAdminPage(c echo.Context) error {
	return s.renderAdmin(c, http.StatusOK, templates.AdminView{Notice: noticeText(c.QueryParam("done"), c.QueryParam("subject"))})
}

func (s *Server) renderAdmin(c echo.Context, status int, v templates.AdminView) error {
	p := currentPrincipal(c)
	if !p.canManage() {
		return errForbidden
	}
	ctx := c.Request().Context()
	var err error
	if v.Services, err = s.store.ManagedServices(ctx); err != nil {
		return err
	}
	if v.Groups, err = s.store.Groups(ctx); err != nil {
		return err
	}
	jobs, err := s.store.JobList(ctx, monitoring.JobListParams{State: "FAILED", Limit: 50})
	if err != nil {
		return err
	}
	for _, j := range jobs.Jobs {
		if group, ok := serviceGroup(v.Services, j.Service); ok && p.canChange(group) {
			v.FailedJobs = append(v.FailedJobs, j)
		}
	}
	v.CanEdit = p.canChange
	v.IsAdmin = p.isAdmin()
	if v.IsAdmin {
		if v.Audit, err = s.store.AuditList(ctx, 50); err != nil {
			return err
		}
	}
	v.CSRF = p.csrf
	return s.page(c, status, templates.Page{Title: "Manage", Section: "admin", Form: true}, templates.Admin(v))
}

func serviceGroup(list []monitoring.ManagedService, name string) (string, bool) {
	for _, m := range list {
		if m.Name == name {
			return m.Group, true
		}
	}
	return "", false
}

func (s *Server) showNewServicePage(c echo.Context) error {
	p := currentPrincipal(c)
	if !p.canManage() {
		return errForbidden
	}
	return s.renderServiceForm(c, http.StatusOK, templates.ServiceForm{Enabled: true, Interval: "30s"})
}

func (s *Server) renderServiceForm(c echo.Context, status int, v templates.ServiceForm) error {
	p := currentPrincipal(c)
	groups, err := s.store.Groups(c.Request().Context())
	if err != nil {
		return err
	}
	for _, g := range groups {
		if p.canChange(g) {
			v.Groups = append(v.Groups, g)
		}
	}
	v.CSRF = p.csrf
	title := "New service"
	if v.Editing {
		title = "Edit " + v.Name
	}
	return s.page(c, status, templates.Page{Title: title, Section: "admin", Form: true}, templates.ServiceFormPage(v))
}

func formInput(c echo.Context) serviceInput {
	enabled := c.FormValue("enabled") == "true"
	return serviceInput{
		Name: c.FormValue("name"), Group: c.FormValue("group"), URL: c.FormValue("url"),
		Interval: c.FormValue("interval"), Timeout: c.FormValue("timeout"), Enabled: &enabled,
	}
}

// serviceChange is the outcome of a create or update: field problems for the
// form, or an error for the error handler.
type serviceChange struct {
	problems map[string]string
}

// saveService validates and applies a create (name == "") or an update, with
// the same checks for the form and the API. An editor may only put services
// into, and take them out of, its own groups.
func (s *Server) saveService(ctx context.Context, p *principal, name string, in serviceInput) (serviceChange, error) {
	if name != "" {
		in.Name = name
		current, err := s.store.ManagedServiceByName(ctx, name)
		if err != nil {
			return serviceChange{}, err
		}
		if current.Source != monitoring.SourceAdmin {
			return serviceChange{}, monitoring.ErrConfigOwned
		}
		if !p.canChange(current.Group) {
			return serviceChange{}, errForbidden
		}
	}
	spec, problems, err := s.checkService(ctx, in)
	if err != nil || problems != nil {
		return serviceChange{problems: problems}, err
	}
	if !p.canChange(spec.Group) {
		return serviceChange{problems: map[string]string{"group": groupRefusal(p, spec.Group)}}, nil
	}
	if name == "" {
		err = s.store.ServiceCreate(ctx, spec)
	} else {
		err = s.store.ServiceUpdate(ctx, name, spec)
	}
	switch {
	case errors.Is(err, monitoring.ErrExists):
		return serviceChange{problems: map[string]string{"name": fmt.Sprintf(
			"a service named %q exists (perhaps deleted with its history kept); choose another name", spec.Name)}}, nil
	case errors.Is(err, monitoring.ErrNotFound) && name == "":
		return serviceChange{problems: map[string]string{"group": fmt.Sprintf("group %q does not exist any more", spec.Group)}}, nil
	case err != nil:
		return serviceChange{}, err
	}
	action := "service.create"
	if name != "" {
		action = "service.update"
	}
	s.audit(ctx, p, action, spec.Name, fmt.Sprintf("group=%q url=%q interval=%s timeout=%s enabled=%t",
		spec.Group, spec.URL, formatDuration(spec.Interval), formatDuration(spec.Timeout), spec.Enabled))
	return serviceChange{}, nil
}

func groupRefusal(p *principal, group string) string {
	if group == "" {
		return "only an admin may leave a service without a group; choose one of your groups"
	}
	return fmt.Sprintf("you may not manage services in group %q; choose one of your groups (%s)", group, strings.Join(p.user.Groups, ", "))
}

// audit records a change; a failure to record is logged, not shown, since the
// change itself is already made.
func (s *Server) audit(ctx context.Context, p *principal, action, subject, detail string) {
	if err := s.store.AuditRecord(ctx, p.actor(), action, subject, detail); err != nil {
		s.log.Error("audit record", "action", action, "subject", subject, "err", err)
	}
	s.log.Info("admin change", "actor", p.actor(), "action", action, "subject", subject)
}

func (s *Server) createService(c echo.Context) error {
	p := currentPrincipal(c)
	if !p.canManage() {
		return errForbidden
	}
	in := formInput(c)
	res, err := s.saveService(c.Request().Context(), p, "", in)
	if err != nil {
		return adminError(err)
	}
	if res.problems != nil {
		return s.renderServiceForm(c, http.StatusUnprocessableEntity, formView(in, false, res.problems))
	}
	return c.Redirect(http.StatusSeeOther, noticeURL("created", in.Name))
}

func formView(in serviceInput, editing bool, problems map[string]string) templates.ServiceForm {
	return templates.ServiceForm{
		Editing: editing, Name: in.Name, Group: in.Group, URL: in.URL, Interval: in.Interval, Timeout: in.Timeout,
		Enabled: in.Enabled == nil || *in.Enabled, Errors: problems, Message: problems[""],
	}
}

func (s *Server) showEditServicePage(c echo.Context) error {
	p := currentPrincipal(c)
	m, err := s.store.ManagedServiceByName(c.Request().Context(), c.Param("name"))
	if err != nil {
		return adminError(err)
	}
	if m.Source != monitoring.SourceAdmin {
		return adminError(monitoring.ErrConfigOwned)
	}
	if !p.canChange(m.Group) {
		return errForbidden
	}
	return s.renderServiceForm(c, http.StatusOK, templates.ServiceForm{
		Editing: true, Name: m.Name, Group: m.Group, URL: m.URL,
		Interval: formatDuration(m.Interval), Timeout: formatDuration(m.Timeout), Enabled: m.Enabled,
	})
}

func (s *Server) updateService(c echo.Context) error {
	p := currentPrincipal(c)
	in := formInput(c)
	name := c.Param("name")
	res, err := s.saveService(c.Request().Context(), p, name, in)
	if err != nil {
		return adminError(err)
	}
	if res.problems != nil {
		in.Name = name
		return s.renderServiceForm(c, http.StatusUnprocessableEntity, formView(in, true, res.problems))
	}
	return c.Redirect(http.StatusSeeOther, noticeURL("saved", name))
}

// changeService runs a pause, resume or delete after the permission checks.
func (s *Server) changeService(ctx context.Context, p *principal, name, action string, apply func() error) error {
	m, err := s.store.ManagedServiceByName(ctx, name)
	if err != nil {
		return err
	}
	if m.Source != monitoring.SourceAdmin {
		return monitoring.ErrConfigOwned
	}
	if !p.canChange(m.Group) {
		return errForbidden
	}
	if err := apply(); err != nil {
		return err
	}
	s.audit(ctx, p, action, name, "")
	return nil
}

func (s *Server) pauseService(c echo.Context) error  { return s.setServiceEnabled(c, false) }
func (s *Server) resumeService(c echo.Context) error { return s.setServiceEnabled(c, true) }

func (s *Server) setServiceEnabled(c echo.Context, enabled bool) error {
	ctx, name := c.Request().Context(), c.Param("name")
	action, notice := "service.pause", "paused"
	if enabled {
		action, notice = "service.resume", "resumed"
	}
	err := s.changeService(ctx, currentPrincipal(c), name, action, func() error {
		return s.store.ServiceSetEnabled(ctx, name, enabled)
	})
	if err != nil {
		return adminError(err)
	}
	return c.Redirect(http.StatusSeeOther, noticeURL(notice, name))
}

func (s *Server) showDeleteServicePage(c echo.Context) error {
	p := currentPrincipal(c)
	m, err := s.store.ManagedServiceByName(c.Request().Context(), c.Param("name"))
	if err != nil {
		return adminError(err)
	}
	if m.Source != monitoring.SourceAdmin {
		return adminError(monitoring.ErrConfigOwned)
	}
	if !p.canChange(m.Group) {
		return errForbidden
	}
	return s.page(c, http.StatusOK, templates.Page{Title: "Delete " + m.Name, Section: "admin", Form: true},
		templates.DeleteService(templates.DeleteServiceView{Name: m.Name, CSRF: p.csrf}))
}

func (s *Server) deleteService(c echo.Context) error {
	ctx, name := c.Request().Context(), c.Param("name")
	keep, err := historyChoice(c.FormValue("history"))
	if err != nil {
		return err
	}
	err = s.changeService(ctx, currentPrincipal(c), name, deleteAction(keep), func() error {
		return s.store.ServiceDelete(ctx, name, keep)
	})
	if err != nil {
		return adminError(err)
	}
	return c.Redirect(http.StatusSeeOther, noticeURL("deleted", name))
}

func historyChoice(v string) (keep bool, err error) {
	switch v {
	case "", "keep":
		return true, nil
	case "delete":
		return false, nil
	}
	return false, echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("history %q: use keep or delete", v))
}

func deleteAction(keep bool) string {
	if keep {
		return "service.delete_keep_history"
	}
	return "service.delete_with_history"
}

func (s *Server) createGroup(c echo.Context) error {
	p := currentPrincipal(c)
	name := c.FormValue("name")
	problem, err := s.saveGroup(c.Request().Context(), p, name)
	if err != nil {
		return adminError(err)
	}
	if problem != "" {
		return s.renderAdmin(c, http.StatusUnprocessableEntity, templates.AdminView{GroupError: problem, GroupName: name})
	}
	return c.Redirect(http.StatusSeeOther, noticeURL("group-created", name))
}

// saveGroup checks a group name by the config file's rules and creates it.
// Groups are admin-only: they decide what editors may change.
func (s *Server) saveGroup(ctx context.Context, p *principal, name string) (string, error) {
	if !p.isAdmin() {
		return "", errForbidden
	}
	cfg := config.Default()
	cfg.Groups = []config.Group{{Name: name}}
	if invalid, ok := cfg.Validate().(*config.ValidationError); ok && invalid != nil {
		return invalid.Problems[0].Message, nil
	}
	if err := s.store.GroupCreate(ctx, name); errors.Is(err, monitoring.ErrExists) {
		return fmt.Sprintf("group %q exists already", name), nil
	} else if err != nil {
		return "", err
	}
	s.audit(ctx, p, "group.create", name, "")
	return "", nil
}

func (s *Server) deleteGroup(c echo.Context) error {
	p := currentPrincipal(c)
	ctx, name := c.Request().Context(), c.Param("name")
	if !p.isAdmin() {
		return errForbidden
	}
	if err := s.store.GroupDelete(ctx, name); err != nil {
		return adminError(err)
	}
	s.audit(ctx, p, "group.delete", name, "")
	return c.Redirect(http.StatusSeeOther, noticeURL("group-deleted", name))
}

// requeueJob gives a FAILED job a fresh attempt budget, for an admin or an
// editor of the job's service's group.
func (s *Server) requeueJob(ctx context.Context, p *principal, raw string) error {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("job id %q is not a positive number", raw))
	}
	service, group, err := s.store.JobOwner(ctx, id)
	if err != nil {
		return err
	}
	if !p.canChange(group) {
		return errForbidden
	}
	if err := s.store.JobRequeue(ctx, id); err != nil {
		return err
	}
	s.audit(ctx, p, "job.requeue", strconv.FormatInt(id, 10), "service="+service)
	return nil
}

// cancelJob ends a READY job before any replica claims it.
func (s *Server) cancelJob(ctx context.Context, p *principal, raw string) error {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("job id %q is not a positive number", raw))
	}
	service, group, err := s.store.JobOwner(ctx, id)
	if err != nil {
		return err
	}
	if !p.canChange(group) {
		return errForbidden
	}
	if err := s.store.JobCancel(ctx, id, "cancelled by "+p.actor()); err != nil {
		return err
	}
	s.audit(ctx, p, "job.cancel", strconv.FormatInt(id, 10), "service="+service)
	return nil
}

func (s *Server) requeueJobForm(c echo.Context) error {
	if err := s.requeueJob(c.Request().Context(), currentPrincipal(c), c.Param("id")); err != nil {
		return adminError(err)
	}
	return c.Redirect(http.StatusSeeOther, noticeURL("requeued", c.Param("id")))
}

// adminError turns the store's refusals into HTTP answers with their reason.
func adminError(err error) error {
	switch {
	case errors.Is(err, monitoring.ErrConfigOwned):
		return echo.NewHTTPError(http.StatusConflict, monitoring.ErrConfigOwned.Error())
	case errors.Is(err, monitoring.ErrNotFound):
		return echo.NewHTTPError(http.StatusNotFound, strings.TrimSuffix(err.Error(), ": not found")+" does not exist")
	case errors.Is(err, monitoring.ErrInUse):
		return echo.NewHTTPError(http.StatusConflict, strings.TrimSuffix(err.Error(), ": still in use"))
	case errors.Is(err, monitoring.ErrNotFailed), errors.Is(err, monitoring.ErrNotReady):
		return echo.NewHTTPError(http.StatusConflict, err.Error())
	}
	return err
}

// tokenRoles are the roles a user's new token may carry: its own or lower.
func tokenRoles(role string) []string {
	var out []string
	for _, r := range []string{auth.RoleViewer, auth.RoleEditor, auth.RoleAdmin} {
		if auth.RoleRank(r) <= auth.RoleRank(role) {
			out = append(out, r)
		}
	}
	return out
}

// noticeURL sends the browser back to the management page with what was
// done; the page words the notice itself, so a link cannot put arbitrary text
// on it.
func noticeURL(kind, subject string) string {
	return "/admin?done=" + url.QueryEscape(kind) + "&subject=" + url.QueryEscape(subject)
}

func noticeText(kind, subject string) string {
	format, ok := map[string]string{
		"created":       "Service %q added; it is checked from the next slot on every replica.",
		"saved":         "Service %q saved; the next slot uses the new values.",
		"paused":        "Service %q paused: no new jobs.",
		"resumed":       "Service %q resumed; it is checked from the next slot.",
		"deleted":       "Service %q deleted.",
		"group-created": "Group %q added.",
		"group-deleted": "Group %q deleted.",
		"requeued":      "Job %s requeued with a fresh attempt budget.",
	}[kind]
	if !ok {
		return ""
	}
	return fmt.Sprintf(format, subject)
}
