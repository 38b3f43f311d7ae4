package web

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vigilhq/vigil/internal/config"
	"github.com/vigilhq/vigil/internal/monitoring"
)

// serviceInput is a service as typed into the form or sent to the API:
// durations are written as in the config file (30s, 1m).
type serviceInput struct {
	Name     string `json:"name"`
	Group    string `json:"group"`
	URL      string `json:"url"`
	Interval string `json:"interval"`
	Timeout  string `json:"timeout"`
	Enabled  *bool  `json:"enabled"` // nil: true
}

// checkService validates input by the config file's rules (the same messages
// an operator sees for vigil.yaml) against the groups in the database.
func (s *Server) checkService(ctx context.Context, in serviceInput) (monitoring.ServiceSpec, map[string]string, error) {
	groups, err := s.store.Groups(ctx)
	if err != nil {
		return monitoring.ServiceSpec{}, nil, err
	}
	spec, problems := checkServiceInput(in, groups, s.lease, s.allowLinkLocal)
	return spec, problems, nil
}

// checkServiceInput returns the spec, or the problems by field name (name,
// group, url, interval, timeout; "" for the rest). lease 0 means the config
// file's default.
func checkServiceInput(in serviceInput, groups []string, lease time.Duration, allowLinkLocal bool) (monitoring.ServiceSpec, map[string]string) {
	problems := map[string]string{}
	cfg := config.Default()
	if lease > 0 {
		cfg.Scheduler.Lease = lease
	}
	svc := config.Service{Name: in.Name, Group: in.Group, URL: strings.TrimSpace(in.URL),
		Interval: config.DefaultInterval, Timeout: cfg.Scheduler.DefaultTimeout(), Enabled: in.Enabled == nil || *in.Enabled}
	parse := func(field, raw string, into *time.Duration) {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return // the config file's default
		}
		d, err := time.ParseDuration(raw)
		if err != nil {
			problems[field] = fmt.Sprintf("%s %q is not a duration; write it like 30s, 1m or 1m30s", field, raw)
			return
		}
		*into = d
	}
	parse("interval", in.Interval, &svc.Interval)
	parse("timeout", in.Timeout, &svc.Timeout)
	for _, g := range groups {
		cfg.Groups = append(cfg.Groups, config.Group{Name: g})
	}
	cfg.Services = []config.Service{svc}
	if invalid, ok := cfg.Validate().(*config.ValidationError); ok && invalid != nil {
		for _, p := range invalid.Problems {
			field, found := strings.CutPrefix(p.Field, "services[0].")
			if !found {
				field = ""
			}
			if _, seen := problems[field]; !seen {
				problems[field] = p.Message
			}
		}
	}
	if _, bad := problems["url"]; !bad {
		if err := monitoring.CheckTargetURL(svc.URL, allowLinkLocal); err != nil {
			problems["url"] = "url " + err.Error()
		}
	}
	spec := monitoring.ServiceSpec{Name: svc.Name, Group: svc.Group, URL: svc.URL,
		Interval: svc.Interval, Timeout: svc.Timeout, Enabled: svc.Enabled}
	if len(problems) > 0 {
		return spec, problems
	}
	return spec, nil
}

// formatDuration prints 1m rather than 1m0s, as the config file's messages do.
func formatDuration(d time.Duration) string {
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}
