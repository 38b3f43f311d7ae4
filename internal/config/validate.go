package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Validate checks a Config built in code (by tests, or from flags) against the same rules
// Parse applies. It sets no defaults: start from Default() for those. The returned error
// is a *ValidationError without line numbers.
func (c *Config) Validate() error {
	if invalid := newValidationError(c.validate(nil, nil)); invalid != nil {
		return invalid
	}
	return nil
}

func (c *Config) validate(lines map[string]int, quiet map[string]bool) []Problem {
	v := &validator{lines: lines, quiet: quiet}
	v.scheduler(c.Scheduler)
	groups := v.groups(c.Groups)
	v.services(c.Services, c.Scheduler, groups)
	v.alerts(c.Alerts)                                             // alerts.go
	v.maintenanceWindows(c.MaintenanceWindows, c.Services, groups) // maintenance.go
	v.retention(c.Retention)                                       // retention.go
	return v.problems
}

type validator struct {
	lines    map[string]int  // field path -> line; nil for a Config built in code
	quiet    map[string]bool // paths the decoder already reported on
	problems []Problem
}

func (v *validator) report(sc scope, key, what, fix string) {
	field := sc.field(key)
	if v.quiet[field] || v.quiet[sc.path] {
		return
	}
	line, ok := v.lines[field]
	if !ok {
		line = v.lines[sc.path] // a defaulted field: point at its item
	}
	v.problems = append(v.problems, newProblem(sc, key, line, what, fix))
}

// at names an item for a message, with its line when known.
func (v *validator) at(path string) string {
	if line := v.lines[path]; line > 0 {
		return fmt.Sprintf("%s (line %d)", path, line)
	}
	return path
}

func (v *validator) scheduler(s Scheduler) {
	sc := scope{path: "scheduler"}
	if s.Lease < minLease {
		v.report(sc, "lease", "lease "+formatDuration(s.Lease)+" is shorter than 1s",
			"set scheduler.lease to 1s or more (default 30s)")
	}
	if s.MaxAttempts < 1 || s.MaxAttempts > maxMaxAttempts {
		v.report(sc, "max_attempts", fmt.Sprintf("max_attempts %d is outside 1..%d", s.MaxAttempts, maxMaxAttempts),
			fmt.Sprintf("set scheduler.max_attempts between 1 and %d (default %d)", maxMaxAttempts, DefaultMaxAttempts))
	}
	if s.RetryBase <= 0 {
		v.report(sc, "retry_base", "retry_base "+formatDuration(s.RetryBase)+" is not more than 0",
			"set scheduler.retry_base to a positive duration such as 5s (the default)")
	} else if s.RetryCap < s.RetryBase {
		v.report(sc, "retry_cap",
			fmt.Sprintf("retry_cap %s is shorter than retry_base %s", formatDuration(s.RetryCap), formatDuration(s.RetryBase)),
			fmt.Sprintf("set scheduler.retry_cap to %s or more, or lower scheduler.retry_base", formatDuration(s.RetryBase)))
	}
	if s.Workers < 1 || s.Workers > maxWorkers {
		v.report(sc, "workers", fmt.Sprintf("workers %d is outside 1..%d", s.Workers, maxWorkers),
			fmt.Sprintf("set scheduler.workers between 1 and %d (default %d)", maxWorkers, DefaultWorkers))
	}
	if s.Poll < minPoll {
		v.report(sc, "poll", "poll "+formatDuration(s.Poll)+" is shorter than 10ms",
			"set scheduler.poll to 10ms or more (default 1s); polling faster only loads the database")
	}
	if s.Spread < 0 || s.Spread > maxSpread {
		v.report(sc, "spread", "spread "+formatDuration(s.Spread)+" is outside 0s..1h",
			"set scheduler.spread between 0s (every check at its slot's start) and 1h (default 1m)")
	}
}

// groups checks the groups and returns every defined name in file order, valid or not, so
// a service in a group whose name is reported is not reported as well.
func (v *validator) groups(groups []Group) []string {
	var defined []string
	first := map[string]string{}
	seen := map[string]bool{}
	for i, g := range groups {
		path := fmt.Sprintf("groups[%d]", i)
		if !seen[g.Name] {
			seen[g.Name] = true
			defined = append(defined, g.Name)
		}
		if !v.name(itemScope("group", path, g.Name), "group", g.Name) {
			continue
		}
		if prev, dup := first[g.Name]; dup {
			v.report(scope{path: path, owner: path}, "name", "duplicate group name "+quote(g.Name),
				v.at(prev)+" already uses it; remove one of them")
			continue
		}
		first[g.Name] = path
	}
	return defined
}

func (v *validator) services(services []Service, s Scheduler, groupNames []string) {
	defined := make(map[string]bool, len(groupNames))
	for _, name := range groupNames {
		defined[name] = true
	}
	leaseOK := s.Lease >= minLease && !v.quiet["scheduler.lease"]

	first := map[string]string{}
	for i, svc := range services {
		path := fmt.Sprintf("services[%d]", i)
		sc := itemScope("service", path, svc.Name)
		if v.name(sc, "service", svc.Name) {
			if prev, dup := first[svc.Name]; dup {
				v.report(scope{path: path, owner: path, service: svc.Name}, "name", "duplicate service name "+quote(svc.Name),
					v.at(prev)+" already uses it; give each service a unique name")
			} else {
				first[svc.Name] = path
			}
		}

		if svc.Group != "" && !defined[svc.Group] {
			fix := fmt.Sprintf(`no groups are defined yet: add "- name: %s" under groups:, or delete group: to leave the service ungrouped`, svc.Group)
			if len(groupNames) > 0 {
				fix = fmt.Sprintf(`use one of the defined groups (%s), or add "- name: %s" under groups:`, listNames(groupNames), svc.Group)
				if guess := suggest(svc.Group, groupNames); guess != "" {
					fix = fmt.Sprintf("did you mean %q? ", guess) + fix
				}
			}
			v.report(sc, "group", "group "+quote(svc.Group)+" is not defined", fix)
		}

		v.probe(sc, svc) // probe.go: the url, the probe type and its options

		switch {
		case svc.Interval < minInterval:
			v.report(sc, "interval", "interval "+formatDuration(svc.Interval)+" is shorter than 1s",
				"set interval to 1s or more (default 30s)")
		case svc.Interval%time.Second != 0:
			// Slots are stored as epoch seconds floored to the interval.
			v.report(sc, "interval", "interval "+formatDuration(svc.Interval)+" is not a whole number of seconds",
				fmt.Sprintf("slots are counted in whole seconds: use %s or %s",
					formatDuration(svc.Interval.Truncate(time.Second)), formatDuration(svc.Interval.Truncate(time.Second)+time.Second)))
		}

		switch {
		case svc.Timeout <= 0:
			v.report(sc, "timeout", "timeout "+formatDuration(svc.Timeout)+" is not more than 0",
				fmt.Sprintf("set timeout to a positive duration shorter than scheduler.lease (%s), e.g. 3s", formatDuration(s.Lease)))
		case leaseOK && svc.Timeout >= s.Lease:
			// A probe that outlives its lease lets another replica claim the job and probe again.
			v.report(sc, "timeout",
				fmt.Sprintf("timeout %s is not shorter than scheduler.lease %s", formatDuration(svc.Timeout), formatDuration(s.Lease)),
				fmt.Sprintf("set timeout below %s, or raise scheduler.lease above %s so the probe ends before its lease does",
					formatDuration(s.Lease), formatDuration(svc.Timeout)))
		}
	}
}

// name checks a service, group or webhook name and reports whether it is usable.
func (v *validator) name(sc scope, kind, name string) bool {
	bad := func(what, fix string) bool {
		v.report(sc, "name", what, fix)
		return false
	}
	switch {
	case name == "":
		return bad("name is missing", "add name: with a name no other "+kind+" uses")
	case !utf8.ValidString(name):
		return bad("name is not valid UTF-8", "save the file as UTF-8")
	case strings.ContainsFunc(name, unicode.IsControl):
		return bad("name contains a control character (tab, newline or similar)", "remove it (spaces are fine)")
	case utf8.RuneCountInString(name) > maxNameLength:
		return bad(fmt.Sprintf("name is %d characters long", utf8.RuneCountInString(name)), "shorten it to at most 200 characters")
	case strings.TrimSpace(name) != name:
		return bad("name starts or ends with a space", "remove the surrounding spaces")
	case name == "." || name == "..":
		// Routers clean /services/.. away before any handler sees it.
		return bad("name "+quote(name)+" cannot appear in a URL path", "choose a name with other characters")
	}
	return true
}

// url checks that the field key holds something Vigil can send an HTTP request to.
func (v *validator) url(sc scope, key, raw, purpose string) {
	if raw == "" {
		v.report(sc, key, key+" is missing", "add "+key+": with "+purpose)
		return
	}
	u, err := url.Parse(raw)
	switch {
	case missingScheme(raw):
		v.report(sc, key, key+" "+quote(raw)+" does not start with http:// or https://", "write it as "+quote("http://"+raw))
	case err != nil:
		reason := err.Error()
		if urlErr, ok := err.(*url.Error); ok {
			reason = urlErr.Err.Error()
		}
		v.report(sc, key, key+" "+quote(raw)+" is not a valid URL ("+reason+")", "write "+purpose)
	case u.Scheme == "":
		v.report(sc, key, key+" "+quote(raw)+" is not a full URL", "write "+purpose)
	case u.Scheme != "http" && u.Scheme != "https":
		v.report(sc, key, key+" "+quote(raw)+" uses the scheme "+quote(u.Scheme),
			"Vigil speaks only http and https: write "+purpose)
	case u.Hostname() == "":
		v.report(sc, key, key+" "+quote(raw)+" has no host", "write "+purpose)
	}
}

// missingScheme reports whether raw is a host with an optional port and path, such as
// localhost:8080/health, that becomes a good URL with http:// in front. Go's URL parser
// reads "localhost" there as a scheme, which would make a confusing message.
func missingScheme(raw string) bool {
	if strings.Contains(raw, "://") {
		return false
	}
	if _, rest, found := strings.Cut(raw, ":"); found && (rest == "" || rest[0] < '0' || rest[0] > '9') {
		return false // a scheme of its own, as in mailto:ops@example.com
	}
	u, err := url.Parse("http://" + raw)
	return err == nil && u.Hostname() != ""
}

// formatDuration prints 1m instead of time.Duration's 1m0s; both parse back the same.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
