// Package config reads Vigil's services file: the scheduler's tuning, the service groups,
// the services to probe and where to send alerts.
//
// The file is YAML and is read strictly. An unknown key, a number where a duration belongs or
// a URL Vigil cannot probe is rejected, because in a monitor a typo that is silently ignored
// is a check that never runs. Every problem names the field, the service (or group, or
// webhook) by name, the line, and the fix, and Parse reports all of them at once so an
// operator can repair the file in one pass.
//
// Anchors, aliases and merge keys (<<: *defaults) work inside the known sections; a key that
// arrives through a merge is checked like one written in place.
package config

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// Defaults and limits. The limits keep a typo (workers: 80000, poll: 1ms) from turning into
// a load test of the database.
const (
	DefaultLease       = 30 * time.Second
	DefaultMaxAttempts = 3
	DefaultRetryBase   = 5 * time.Second
	DefaultRetryCap    = 60 * time.Second
	DefaultWorkers     = 8
	DefaultPoll        = time.Second
	DefaultSpread      = time.Minute

	DefaultInterval         = 30 * time.Second
	DefaultTimeout          = 5 * time.Second
	DefaultFailureThreshold = 1

	minLease       = time.Second
	maxMaxAttempts = 20
	maxWorkers     = 10000
	minPoll        = 10 * time.Millisecond
	maxSpread      = time.Hour
	minInterval    = time.Second
	maxNameLength  = 200 // characters, not bytes
)

// Config is the whole services file after defaults are applied.
type Config struct {
	Scheduler Scheduler
	Groups    []Group
	Services  []Service
	Alerts    Alerts
	// MaintenanceWindows hold alerts back while services are worked on (maintenance.go).
	MaintenanceWindows []MaintenanceWindow
	Retention          Retention // retention.go
}

// Scheduler tunes how replicas share the job table.
type Scheduler struct {
	Lease       time.Duration // how long a claim is held; default 30s, at least 1s
	MaxAttempts int           // tries before a job is FAILED; default 3, 1..20
	RetryBase   time.Duration // first retry backoff; default 5s, more than 0
	RetryCap    time.Duration // backoff ceiling; default 60s, at least RetryBase
	Workers     int           // concurrent probes per replica; default 8, 1..10000
	Poll        time.Duration // how often an idle worker looks for jobs; default 1s, at least 10ms
	// Spread places each service's check at a fixed point within its slot, at most
	// min(Spread, 80% of the interval) after the slot starts, so a slot does not begin
	// with every check at once; default 1m, 0s to check every service at the slot's start.
	Spread time.Duration
	// AllowLinkLocal lets every service probe link-local and cloud metadata addresses
	// (169.254.0.0/16, fe80::/10, fd00:ec2::254), which are refused by default.
	AllowLinkLocal bool
}

// DefaultTimeout is the probe timeout of a service that sets none: 5s, or half the lease
// when the lease is 5s or shorter, because a probe must end before its lease does or another
// replica would claim the job and probe again.
func (s Scheduler) DefaultTimeout() time.Duration {
	if s.Lease <= DefaultTimeout {
		return s.Lease / 2
	}
	return DefaultTimeout
}

// Group is a heading on the dashboard that services can be filed under.
type Group struct {
	Name string
}

// Service is one endpoint to probe: http (the default), tcp, tls or dns (probe.go).
//
// Name is free text (spaces and any printable character are allowed) because the web layer
// path-escapes it in /services/{name}. It must be non-empty, at most 200 characters, without
// control characters or surrounding spaces, and not "." or "..", which no URL path keeps.
// Names are compared exactly, so "Inventory" and "inventory" are two services.
type Service struct {
	Name     string
	Group    string        // "" for ungrouped; otherwise must name an entry of Config.Groups
	URL      string        // http or https, with a host
	Interval time.Duration // slot length; default 30s, at least 1s, whole seconds
	Timeout  time.Duration // probe timeout; more than 0 and shorter than Scheduler.Lease
	Enabled  bool          // default true; a disabled service keeps its history but gets no jobs
	// Probe is the probe type, HTTP options, conditions and degraded threshold, stored as is
	// in the database: header, body and auth values keep their ${NAME} references.
	Probe monitoring.ProbeSpec
	// DegradedAbove marks an UP result slower than this as degraded; 0 for never.
	// Probe.DegradedAboveMS holds the same value for the prober.
	DegradedAbove time.Duration
}

// Default returns the configuration of an empty file: default scheduler and alert settings,
// no groups, services or webhooks.
func Default() *Config {
	return &Config{
		Scheduler: Scheduler{
			Lease:       DefaultLease,
			MaxAttempts: DefaultMaxAttempts,
			RetryBase:   DefaultRetryBase,
			RetryCap:    DefaultRetryCap,
			Workers:     DefaultWorkers,
			Poll:        DefaultPoll,
			Spread:      DefaultSpread,
		},
		Alerts:    defaultAlerts(),    // alerts.go
		Retention: DefaultRetention(), // retention.go
	}
}

// Load reads the services file at path and parses it with Parse. A *ValidationError it
// returns has File set, so every line of its message starts with the path.
func Load(path string) (*Config, error) {
	return LoadEnv(path, os.Environ())
}

// LoadEnv is Load with the environment (for ${NAME} in webhooks) given as KEY=VALUE lines.
func LoadEnv(path string, env []string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err) // *fs.PathError already names the path
	}
	cfg, err := ParseEnv(data, env)
	if err != nil {
		var invalid *ValidationError
		if errors.As(err, &invalid) {
			invalid.File = path
			return nil, invalid
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}
