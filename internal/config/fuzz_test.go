package config

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, that every rejection is a *ValidationError with
// something to say, and that every accepted config keeps the invariants the scheduler relies
// on. Plain `go test` runs only the seeds; fuzz locally with
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 30s ./internal/config
func FuzzParse(f *testing.F) {
	full, err := os.ReadFile(filepath.Join("testdata", "vigil.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte(""))
	f.Add([]byte("services: []\n"))
	f.Add([]byte("services:\n  - &d {name: a, url: 'http://a/', interval: 2s}\n  - {<<: [*d, *d], name: b}\n"))
	f.Add([]byte("services: &s\n  - *s\n"))
	f.Add([]byte("a: &a\n  b: *a\n"))
	for _, scenario := range rejectScenarios {
		f.Add([]byte(scenario.yaml))
	}
	for _, scenario := range alertRejectScenarios {
		f.Add([]byte(scenario.yaml))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			var invalid *ValidationError
			if !errors.As(err, &invalid) || len(invalid.Problems) == 0 {
				t.Fatalf("rejection is not a ValidationError with problems: %#v", err)
			}
			for _, p := range invalid.Problems {
				if p.Message == "" {
					t.Fatalf("problem without a message: %#v", p)
				}
			}
			return
		}
		checkInvariants(t, cfg)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Parse accepted what Validate rejects: %v", err)
		}
	})
}

// checkInvariants restates the rules independently of validate, so a bug there cannot hide.
func checkInvariants(t *testing.T, cfg *Config) {
	t.Helper()
	s := cfg.Scheduler
	if s.Lease < minLease || s.MaxAttempts < 1 || s.MaxAttempts > 20 || s.RetryBase <= 0 ||
		s.RetryCap < s.RetryBase || s.Workers < 1 || s.Workers > 10000 || s.Poll < minPoll {
		t.Fatalf("scheduler out of range: %+v", s)
	}
	if cfg.Alerts.FailureThreshold < 1 {
		t.Fatalf("failure_threshold %d", cfg.Alerts.FailureThreshold)
	}
	groups := map[string]bool{}
	for _, g := range cfg.Groups {
		if g.Name == "" || groups[g.Name] {
			t.Fatalf("group name empty or repeated: %q", g.Name)
		}
		groups[g.Name] = true
	}
	services := map[string]bool{}
	for _, svc := range cfg.Services {
		if svc.Name == "" || services[svc.Name] {
			t.Fatalf("service name empty or repeated: %q", svc.Name)
		}
		services[svc.Name] = true
		if svc.Group != "" && !groups[svc.Group] {
			t.Fatalf("service %q in undefined group %q", svc.Name, svc.Group)
		}
		if svc.Interval < minInterval {
			t.Fatalf("service %q interval %v", svc.Name, svc.Interval)
		}
		if svc.Timeout <= 0 || svc.Timeout >= s.Lease {
			t.Fatalf("service %q timeout %v with lease %v", svc.Name, svc.Timeout, s.Lease)
		}
		checkURL(t, svc.URL)
	}
	webhooks := map[string]bool{}
	for _, w := range cfg.Alerts.Webhooks {
		if w.Name == "" || webhooks[w.Name] {
			t.Fatalf("webhook name empty or repeated: %q", w.Name)
		}
		webhooks[w.Name] = true
		checkURL(t, w.URL)
	}
}

func checkURL(t *testing.T, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		t.Fatalf("accepted url %q", raw)
	}
}
