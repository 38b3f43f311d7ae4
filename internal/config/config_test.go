package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rejectScenarios are files Parse must reject, each with the one problem it must report.
// FuzzParse uses them as seeds.
var rejectScenarios = []struct {
	name    string
	yaml    string
	field   string   // Problem.Field
	service string   // Problem.Service
	want    []string // parts of Problem.Message: what is wrong, where, and the fix
}{
	{
		name: "unknown key in a service",
		yaml: `
services:
  - name: inventory
    url: http://127.0.0.1:8081/health
    tiemout: 3s
`,
		field: "services[0].tiemout", service: "inventory",
		want: []string{`unknown field "tiemout"`, `in service "inventory" (line 5)`, `did you mean "timeout"?`,
			"the known fields are name, group, url, interval, timeout, enabled"},
	},
	{
		name:  "unknown top-level key",
		yaml:  "service:\n  - name: inventory\n",
		field: "service",
		want:  []string{`unknown field "service" (line 1)`, `did you mean "services"?`, "scheduler, groups, services, alerts"},
	},
	{
		name:  "unknown scheduler key in camel case",
		yaml:  "scheduler: {lease: 30s, maxAttempts: 3}\n",
		field: "scheduler.maxAttempts",
		want:  []string{`unknown field "maxAttempts" (line 1)`, `did you mean "max_attempts"?`},
	},
	{
		name:  "unknown webhook key",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://127.0.0.1:9000/hook\n      secret: x\n",
		field: "alerts.webhooks[0].secret",
		want:  []string{`unknown field "secret" in webhook "ops" (line 5)`, "the known fields are name, url"},
	},
	{
		name:  "unknown group key",
		yaml:  "groups:\n  - name: core\n    title: Core\n",
		field: "groups[0].title",
		want:  []string{`unknown field "title" in group "core" (line 3)`, "the known fields are name"},
	},
	{
		name:  "key given twice",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    timeout: 3s\n    timeout: 4s\n",
		field: "services[0].timeout", service: "inventory",
		want: []string{`"timeout" is set more than once in service "inventory" (line 5)`, "keep only one"},
	},
	{
		name:  "interval without a unit",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    interval: 30\n",
		field: "services[0].interval", service: "inventory",
		want: []string{`interval "30" is not a duration in service "inventory" (line 4)`, "write 30s"},
	},
	{
		name:  "interval that is not a duration",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    interval: soon\n",
		field: "services[0].interval", service: "inventory",
		want: []string{`interval "soon" is not a duration in service "inventory" (line 4)`, "such as 30s"},
	},
	{
		name:  "interval with no value",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    interval:\n",
		field: "services[0].interval", service: "inventory",
		want: []string{`interval has no value in service "inventory" (line 4)`, "write e.g. interval: 30s, or delete the line"},
	},
	{
		name:  "lease without a unit",
		yaml:  "scheduler: {lease: 30}\n",
		field: "scheduler.lease",
		want:  []string{`lease "30" is not a duration (line 1)`, "write 30s"},
	},
	{
		name:  "workers not a whole number",
		yaml:  "scheduler: {workers: 8.5}\n",
		field: "scheduler.workers",
		want:  []string{`workers "8.5" is not a whole number (line 1)`, "workers: 3"},
	},
	{
		name:  "enabled with no value",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    enabled:\n",
		field: "services[0].enabled", service: "inventory",
		want: []string{`enabled has no value in service "inventory" (line 4)`, "enabled: true"},
	},
	{
		name:  "interval as a list",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    interval: [30s]\n",
		field: "services[0].interval", service: "inventory",
		want: []string{`interval is a list, not a single value in service "inventory" (line 4)`, "write it as interval: 30s"},
	},
	{
		name:  "enabled not a boolean",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    enabled: maybe\n",
		field: "services[0].enabled", service: "inventory",
		want: []string{`enabled "maybe" is not true or false in service "inventory" (line 4)`, "enabled: true or enabled: false"},
	},
	{
		name:  "ftp url",
		yaml:  "services:\n  - name: inventory\n    url: ftp://127.0.0.1/health\n",
		field: "services[0].url", service: "inventory",
		want: []string{`uses the scheme "ftp" in service "inventory" (line 3)`, "only http and https", "http://"},
	},
	{
		name:  "file url",
		yaml:  "services:\n  - name: inventory\n    url: file:///etc/passwd\n",
		field: "services[0].url", service: "inventory",
		want: []string{`url "file:///etc/passwd" uses the scheme "file" in service "inventory"`, "only http and https"},
	},
	{
		name:  "url without scheme",
		yaml:  "services:\n  - name: inventory\n    url: localhost:80\n",
		field: "services[0].url", service: "inventory",
		want: []string{`url "localhost:80" does not start with http:// or https:// in service "inventory" (line 3)`,
			`write it as "http://localhost:80"`},
	},
	{
		name:  "url without host",
		yaml:  "services:\n  - name: inventory\n    url: http:///health\n",
		field: "services[0].url", service: "inventory",
		want: []string{`url "http:///health" has no host in service "inventory" (line 3)`, "e.g. http://127.0.0.1:8081/health"},
	},
	{
		name:  "url missing",
		yaml:  "services:\n  - name: inventory\n",
		field: "services[0].url", service: "inventory",
		want: []string{`url is missing in service "inventory" (line 2)`, "add url:"},
	},
	{
		name:  "webhook url not http",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: mailto:ops@example.com\n",
		field: "alerts.webhooks[0].url",
		want:  []string{`url "mailto:ops@example.com" uses the scheme "mailto" in webhook "ops" (line 4)`, "only http and https"},
	},
	{
		name:  "address without scheme",
		yaml:  "services:\n  - name: inventory\n    url: 127.0.0.1:8081/health\n",
		field: "services[0].url", service: "inventory",
		want: []string{`url "127.0.0.1:8081/health" does not start with http:// or https://`, `write it as "http://127.0.0.1:8081/health"`},
	},
	{
		name:  "relative url",
		yaml:  "services:\n  - name: inventory\n    url: /health\n",
		field: "services[0].url", service: "inventory",
		want: []string{`url "/health" is not a full URL in service "inventory" (line 3)`, "e.g. http://127.0.0.1:8081/health"},
	},
	{
		name:  "url with a space in the host",
		yaml:  "services:\n  - name: inventory\n    url: http://exa mple.com/\n",
		field: "services[0].url", service: "inventory",
		want: []string{`url "http://exa mple.com/" is not a valid URL (invalid character " " in host name)`},
	},
	{
		name:  "service name missing",
		yaml:  "services:\n  - name: a\n    url: http://a/\n  - url: http://b/\n",
		field: "services[1].name",
		want:  []string{"name is missing in services[1] (line 4)", "add name:"},
	},
	{
		name:  "service name empty",
		yaml:  "services:\n  - name: \"\"\n    url: http://a/\n",
		field: "services[0].name",
		want:  []string{"name is missing in services[0] (line 2)"},
	},
	{
		name:  "service name with a control character",
		yaml:  "services:\n  - name: \"in\\tventory\"\n    url: http://a/\n",
		field: "services[0].name", service: "in\tventory",
		want: []string{`name contains a control character (tab, newline or similar) in service "in\tventory" (line 2)`, "remove it"},
	},
	{
		name:  "service name too long",
		yaml:  "services:\n  - name: " + strings.Repeat("x", 201) + "\n    url: http://a/\n",
		field: "services[0].name", service: strings.Repeat("x", 201),
		want: []string{"name is 201 characters long", "at most 200 characters"},
	},
	{
		name:  "service name dot dot",
		yaml:  "services:\n  - name: ..\n    url: http://a/\n",
		field: "services[0].name", service: "..",
		want: []string{`name ".." cannot appear in a URL path`},
	},
	{
		name:  "duplicate service names",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n  - name: inventory\n    url: http://b/\n",
		field: "services[1].name", service: "inventory",
		want: []string{`duplicate service name "inventory" in services[1] (line 4)`, "services[0] (line 2) already uses it", "unique name"},
	},
	{
		name:  "duplicate group names",
		yaml:  "groups:\n  - name: core\n  - name: core\n",
		field: "groups[1].name",
		want:  []string{`duplicate group name "core" in groups[1] (line 3)`, "groups[0] (line 2) already uses it"},
	},
	{
		name:  "duplicate webhook names",
		yaml:  "alerts:\n  webhooks:\n    - {name: ops, url: http://a/}\n    - {name: ops, url: http://b/}\n",
		field: "alerts.webhooks[1].name",
		want:  []string{`duplicate webhook name "ops" in alerts.webhooks[1] (line 4)`, "alerts.webhooks[0] (line 3) already uses it"},
	},
	{
		name:  "group name missing",
		yaml:  "groups:\n  - name:\n",
		field: "groups[0].name",
		want:  []string{"name is missing in groups[0] (line 2)"},
	},
	{
		name:  "timeout equal to the default lease",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    timeout: 30s\n",
		field: "services[0].timeout", service: "inventory",
		want: []string{`timeout 30s is not shorter than scheduler.lease 30s in service "inventory" (line 4)`,
			"set timeout below 30s, or raise scheduler.lease"},
	},
	{
		name:  "timeout longer than a short lease",
		yaml:  "scheduler: {lease: 4s}\nservices:\n  - name: inventory\n    url: http://a/\n    timeout: 5s\n",
		field: "services[0].timeout", service: "inventory",
		want: []string{"timeout 5s is not shorter than scheduler.lease 4s", "set timeout below 4s"},
	},
	{
		name:  "timeout zero",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    timeout: 0s\n",
		field: "services[0].timeout", service: "inventory",
		want: []string{`timeout 0s is not more than 0 in service "inventory" (line 4)`, "e.g. 3s"},
	},
	{
		name:  "timeout negative",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    timeout: -1s\n",
		field: "services[0].timeout", service: "inventory",
		want: []string{"timeout -1s is not more than 0"},
	},
	{
		name:  "interval below one second",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    interval: 500ms\n",
		field: "services[0].interval", service: "inventory",
		want: []string{`interval 500ms is shorter than 1s in service "inventory" (line 4)`, "set interval to 1s or more"},
	},
	{
		name:  "interval not whole seconds",
		yaml:  "services:\n  - name: inventory\n    url: http://a/\n    interval: 1500ms\n",
		field: "services[0].interval", service: "inventory",
		want: []string{"interval 1.5s is not a whole number of seconds", "use 1s or 2s"},
	},
	{
		name:  "undefined group",
		yaml:  "groups:\n  - name: core\n  - name: edge\nservices:\n  - name: inventory\n    group: cor\n    url: http://a/\n",
		field: "services[0].group", service: "inventory",
		want: []string{`group "cor" is not defined in service "inventory" (line 6)`, `did you mean "core"?`,
			"use one of the defined groups (core, edge)", `add "- name: cor" under groups:`},
	},
	{
		name:  "group used but none defined",
		yaml:  "services:\n  - name: inventory\n    group: core\n    url: http://a/\n",
		field: "services[0].group", service: "inventory",
		want: []string{`group "core" is not defined`, "no groups are defined", "delete group:"},
	},
	{
		name:  "lease too short",
		yaml:  "scheduler: {lease: 500ms}\nservices:\n  - {name: inventory, url: http://a/}\n",
		field: "scheduler.lease",
		want:  []string{"lease 500ms is shorter than 1s (line 1)", "set scheduler.lease to 1s or more"},
	},
	{
		name:  "max_attempts zero",
		yaml:  "scheduler: {max_attempts: 0}\n",
		field: "scheduler.max_attempts",
		want:  []string{"max_attempts 0 is outside 1..20", "between 1 and 20"},
	},
	{
		name:  "max_attempts too many",
		yaml:  "scheduler: {max_attempts: 21}\n",
		field: "scheduler.max_attempts",
		want:  []string{"max_attempts 21 is outside 1..20"},
	},
	{
		name:  "workers zero",
		yaml:  "scheduler: {workers: 0}\n",
		field: "scheduler.workers",
		want:  []string{"workers 0 is outside 1..10000", "between 1 and 10000"},
	},
	{
		name:  "poll too fast",
		yaml:  "scheduler: {poll: 5ms}\n",
		field: "scheduler.poll",
		want:  []string{"poll 5ms is shorter than 10ms", "10ms or more"},
	},
	{
		name:  "negative spread",
		yaml:  "scheduler: {spread: -1s}\n",
		field: "scheduler.spread",
		want:  []string{"spread -1s is outside 0s..1h", "between 0s"},
	},
	{
		name:  "retry_base zero",
		yaml:  "scheduler: {retry_base: 0s}\n",
		field: "scheduler.retry_base",
		want:  []string{"retry_base 0s is not more than 0", "such as 5s"},
	},
	{
		name:  "retry_cap below a raised retry_base",
		yaml:  "scheduler: {retry_base: 90s}\n",
		field: "scheduler.retry_cap",
		want:  []string{"retry_cap 1m is shorter than retry_base 1m30s (line 1)", "set scheduler.retry_cap to 1m30s or more"},
	},
	{
		name:  "failure_threshold zero",
		yaml:  "alerts:\n  failure_threshold: 0\n",
		field: "alerts.failure_threshold",
		want:  []string{"failure_threshold 0 is less than 1 (line 2)", "1 or more"},
	},
	{
		name:  "services as a mapping",
		yaml:  "services:\n  inventory:\n    url: http://a/\n",
		field: "services",
		want:  []string{"services is a mapping, not a list (line 2)", `"- name: inventory"`},
	},
	{
		name:  "service as a bare name",
		yaml:  "services:\n  - inventory\n",
		field: "services[0]",
		want:  []string{"services[0] is a single value, not a mapping (line 2)", `"- name: inventory"`},
	},
	{
		name:  "scheduler as a list",
		yaml:  "scheduler:\n  - lease: 30s\n",
		field: "scheduler",
		want:  []string{"scheduler is a list, not a mapping (line 2)", "scheduler: {lease: 30s"},
	},
	{
		name:  "file is not a mapping",
		yaml:  "- inventory\n",
		want:  []string{"the file is a list, not a mapping of sections (line 1)", "scheduler:, groups:, services: and alerts:"},
		field: "",
	},
	{
		name: "YAML syntax error reports the line of the problem",
		yaml: "services:\n  - name: inventory\n    url: http://a/\n   timeout: 3s\n",
		want: []string{"the file is not valid YAML", "(line 4)", "check the indentation"},
	},
	{
		name: "tab indentation",
		yaml: "services:\n  - name: inventory\n\turl: http://a/\n",
		want: []string{"the file is not valid YAML", "tab", "(line 3)", "spaces, not tabs"},
	},
	{
		name: "second document",
		yaml: "services: []\n---\nservices:\n  - name: inventory\n",
		want: []string{"a second YAML document starts here (line 2)", "remove the --- separator"},
	},
	{
		name:  "merge key with a scalar",
		yaml:  "services:\n  - <<: x\n    name: inventory\n    url: http://a/\n",
		field: "services[0].<<", service: "inventory",
		want: []string{"the merge key << is given a single value", "<<: *service_defaults"},
	},
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for _, scenario := range rejectScenarios {
		t.Run(scenario.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(scenario.yaml))
			require.Error(t, err)
			assert.Nil(t, cfg)
			var invalid *ValidationError
			require.ErrorAs(t, err, &invalid)
			// Exactly one problem: a single mistake must not drag follow-on complaints along.
			require.Len(t, invalid.Problems, 1, "problems:\n%s", err)
			p := invalid.Problems[0]
			assert.Equal(t, scenario.field, p.Field)
			assert.Equal(t, scenario.service, p.Service)
			for _, want := range scenario.want {
				assert.Contains(t, p.Message, want)
			}
			assert.NotZero(t, p.Line, "a problem found in a file points at a line")
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
scheduler: {lease: 10s}
services:
  - name: inventory
    url: ftp://a/
    interval: 30
    tiemout: 3s
  - name: billing
    url: http://b/
    timeout: 10s
`))
	require.Nil(t, cfg)
	var invalid *ValidationError
	require.ErrorAs(t, err, &invalid)

	var fields []string
	for _, p := range invalid.Problems {
		fields = append(fields, p.Field)
	}
	// In file order, whichever layer found them.
	assert.Equal(t, []string{"services[0].url", "services[0].interval", "services[0].tiemout", "services[1].timeout"}, fields)
	assert.Equal(t, "billing", invalid.Problems[3].Service)

	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 4, "one line per problem")
	assert.Equal(t, `services[0].url: url "ftp://a/" uses the scheme "ftp" in service "inventory" (line 5); `+
		`Vigil speaks only http and https: write the address to probe, e.g. http://127.0.0.1:8081/health`, lines[0])
}

func TestParseAcceptsEmpty(t *testing.T) {
	t.Parallel()
	for name, yaml := range map[string]string{
		"empty file":         "",
		"only comments":      "# nothing to watch yet\n",
		"document marker":    "---\n",
		"empty services":     "services: []\n",
		"services left bare": "services:\n  # - name: inventory\n",
		"empty sections":     "scheduler:\ngroups:\nservices:\nalerts:\n",
		"empty alerts":       "alerts: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(yaml))
			require.NoError(t, err)
			assert.Equal(t, Default(), cfg)
		})
	}
}

func TestParseAppliesDefaults(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name        string
		scheduler   string
		wantTimeout time.Duration
	}{
		{name: "default lease", wantTimeout: 5 * time.Second},
		{name: "long lease", scheduler: "scheduler: {lease: 2m}\n", wantTimeout: 5 * time.Second},
		{name: "lease just over 5s", scheduler: "scheduler: {lease: 6s}\n", wantTimeout: 5 * time.Second},
		{name: "lease of 5s", scheduler: "scheduler: {lease: 5s}\n", wantTimeout: 2500 * time.Millisecond},
		{name: "lease of 1s", scheduler: "scheduler: {lease: 1s}\n", wantTimeout: 500 * time.Millisecond},
	}
	for _, scenario := range scenarios {
		t.Run(scenario.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(scenario.scheduler + "services:\n  - name: inventory\n    url: http://127.0.0.1:8081/\n"))
			require.NoError(t, err)
			require.Len(t, cfg.Services, 1)
			assert.Equal(t, Service{
				Name:     "inventory",
				URL:      "http://127.0.0.1:8081/",
				Interval: 30 * time.Second,
				Timeout:  scenario.wantTimeout,
				Enabled:  true,
			}, cfg.Services[0])
			assert.Less(t, cfg.Services[0].Timeout, cfg.Scheduler.Lease)
		})
	}

	t.Run("scheduler and alerts", func(t *testing.T) {
		t.Parallel()
		cfg, err := Parse([]byte("scheduler: {workers: 2}\nalerts: {webhooks: [{name: ops, url: 'http://a/'}]}\n"))
		require.NoError(t, err)
		want := Default()
		want.Scheduler.Workers = 2
		want.Alerts.Webhooks = []Webhook{DefaultWebhook("ops", "http://a/")}
		assert.Equal(t, want, cfg)
	})
}

func TestParseFullExample(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "vigil.yaml"))
	require.NoError(t, err)

	cfg, err := Parse(data)
	require.NoError(t, err)
	assert.Equal(t, &Config{
		Scheduler: Scheduler{
			Lease:       45 * time.Second,
			MaxAttempts: 5,
			RetryBase:   2 * time.Second,
			RetryCap:    90 * time.Second,
			Workers:     16,
			Poll:        250 * time.Millisecond,
			Spread:      20 * time.Second,
		},
		Groups: []Group{{Name: "core"}, {Name: "edge"}},
		Services: []Service{
			{Name: "inventory", Group: "core", URL: "http://127.0.0.1:8081/api/v1/health", Interval: 30 * time.Second, Timeout: 3 * time.Second, Enabled: true},
			// Merged from the first service's anchor; the keys written in place win.
			{Name: "billing api", Group: "core", URL: "https://billing.internal:8443/healthz", Interval: time.Minute, Timeout: 3 * time.Second, Enabled: true},
			{Name: "cdn", Group: "edge", URL: "http://cdn.example.com/", Interval: 10 * time.Second, Timeout: 5 * time.Second, Enabled: false},
			{Name: "ungrouped", URL: "http://[::1]:9090/ready", Interval: 30 * time.Second, Timeout: 5 * time.Second, Enabled: true},
		},
		Alerts: Alerts{
			FailureThreshold:   3,
			SuccessThreshold:   2,
			AlertBeforeFirstUp: true,
			BaseURL:            "https://vigil.example.com/",
			RetryBase:          30 * time.Second,
			RetryCap:           15 * time.Minute,
			Webhooks: []Webhook{
				DefaultWebhook("ops", "http://127.0.0.1:9000/hook"),
				{Name: "chat", URL: "https://hooks.example.com/T000/B000", Headers: map[string]string{"X-Team": "sre"},
					Events: []string{"down"}, Format: "slack", Timeout: 5 * time.Second, MaxAttempts: 12},
			},
		},
		MaintenanceWindows: []MaintenanceWindow{
			{Name: "nightly deploys", Groups: []string{"core"}, Cron: "0 2 * * mon-fri", Duration: 30 * time.Minute, Timezone: "Europe/Berlin"},
			{Name: "cdn migration", Services: []string{"cdn", "ungrouped"},
				Start: time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC), End: time.Date(2026, 5, 1, 6, 0, 0, 0, time.FixedZone("", 2*60*60))},
		},
		Retention: Retention{Raw: 72 * time.Hour, Rollups: 400 * 24 * time.Hour, FailedJobs: 720 * time.Hour, BatchSize: 2000},
	}, cfg)
	require.NoError(t, cfg.Validate())
}

func TestParseMergedUnknownKey(t *testing.T) {
	t.Parallel()
	// A typo in shared defaults is reported for the service that uses them, at the anchor's line.
	_, err := Parse([]byte(`
services:
  - &defaults
    name: inventory
    url: http://a/
    intervall: 10s
  - <<: *defaults
    name: billing
`))
	var invalid *ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Len(t, invalid.Problems, 2)
	for i, service := range []string{"inventory", "billing"} {
		assert.Equal(t, service, invalid.Problems[i].Service)
		assert.Equal(t, 6, invalid.Problems[i].Line)
		assert.Contains(t, invalid.Problems[i].Message, `unknown field "intervall" in service "`+service+`"`)
	}
}

func TestParseLeaseProblemIsReportedOnce(t *testing.T) {
	t.Parallel()
	// The default timeout derives from the lease; a bad lease must not also fail every service.
	_, err := Parse([]byte("scheduler: {lease: soon}\nservices:\n  - {name: a, url: http://a/, timeout: 40s}\n  - {name: b, url: http://b/}\n"))
	var invalid *ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Len(t, invalid.Problems, 1, "problems:\n%s", err)
	assert.Equal(t, "scheduler.lease", invalid.Problems[0].Field)
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	t.Run("valid file", func(t *testing.T) {
		t.Parallel()
		cfg, err := Load(filepath.Join("testdata", "vigil.yaml"))
		require.NoError(t, err)
		assert.Len(t, cfg.Services, 4)
	})

	t.Run("missing file names the path", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(dir, "missing.yaml")
		_, err := Load(path)
		require.Error(t, err)
		assert.Contains(t, err.Error(), path)
		assert.True(t, errors.Is(err, os.ErrNotExist))
	})

	t.Run("every problem line starts with the path", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(dir, "bad.yaml")
		require.NoError(t, os.WriteFile(path, []byte("services:\n  - name: a\n    url: ftp://a/\n  - name: a\n    url: http://a/\n"), 0o600))
		_, err := Load(path)
		var invalid *ValidationError
		require.ErrorAs(t, err, &invalid)
		assert.Equal(t, path, invalid.File)
		lines := strings.Split(err.Error(), "\n")
		require.Len(t, lines, 2)
		for _, line := range lines {
			assert.True(t, strings.HasPrefix(line, path+": services["), line)
		}
	})
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Default().Validate())

	cfg := Default()
	cfg.Services = []Service{{Name: "inventory", URL: "http://a/", Interval: time.Minute, Timeout: time.Minute, Enabled: true}}
	err := cfg.Validate()
	var invalid *ValidationError
	require.ErrorAs(t, err, &invalid)
	require.Len(t, invalid.Problems, 1)
	assert.Equal(t, Problem{
		Field:   "services[0].timeout",
		Service: "inventory",
		Message: `timeout 1m is not shorter than scheduler.lease 30s in service "inventory"; ` +
			"set timeout below 30s, or raise scheduler.lease above 1m so the probe ends before its lease does",
	}, invalid.Problems[0])
}
