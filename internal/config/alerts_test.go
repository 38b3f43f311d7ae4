package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testEnv is the environment the alert scenarios are parsed with.
var testEnv = []string{"OPS_TOKEN=s3cret-token", "SLACK_URL=https://hooks.slack.example/T0/B0/XyZ", "EMPTY=", "BAD_URL=not a url s3cret"}

const twoServices = `
groups:
  - name: core
services:
  - {name: inventory, group: core, url: "http://127.0.0.1:8081/"}
  - {name: billing, url: "http://127.0.0.1:8082/"}
`

// alertRejectScenarios are files with one mistake in the alerts or maintenance_windows
// sections, each with the one problem it must report.
var alertRejectScenarios = []struct {
	name    string
	yaml    string
	field   string
	want    []string
	notWant []string // text that must not appear: secrets
}{
	{
		name:  "success_threshold zero",
		yaml:  "alerts:\n  success_threshold: 0\n",
		field: "alerts.success_threshold",
		want:  []string{"success_threshold 0 is less than 1 (line 2)", "set alerts.success_threshold to 1 or more"},
	},
	{
		name:  "alert_before_first_up not a boolean",
		yaml:  "alerts:\n  alert_before_first_up: sometimes\n",
		field: "alerts.alert_before_first_up",
		want:  []string{`alert_before_first_up "sometimes" is not true or false (line 2)`},
	},
	{
		name:  "base_url without scheme",
		yaml:  "alerts:\n  base_url: vigil.example.com\n",
		field: "alerts.base_url",
		want:  []string{`base_url "vigil.example.com" does not start with http:// or https:// (line 2)`, `write it as "http://vigil.example.com"`},
	},
	{
		name:  "delivery retry_cap below retry_base",
		yaml:  "alerts:\n  retry_base: 1m\n  retry_cap: 30s\n",
		field: "alerts.retry_cap",
		want:  []string{"retry_cap 30s is shorter than retry_base 1m (line 3)", "set alerts.retry_cap to 1m or more"},
	},
	{
		name:    "header from an unset variable",
		yaml:    "alerts:\n  webhooks:\n    - name: ops\n      url: http://127.0.0.1:9000/hook\n      headers:\n        Authorization: \"Bearer ${NOPE_TOKEN}\"\n",
		field:   "alerts.webhooks[0].headers.Authorization",
		want:    []string{`header "Authorization" uses ${NOPE_TOKEN}, which is not set in webhook "ops" (line 6)`, "set NOPE_TOKEN in the environment of every replica"},
		notWant: []string{"s3cret"},
	},
	{
		name:  "header from an empty variable",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://127.0.0.1:9000/hook\n      headers: {X-Key: \"${EMPTY}\"}\n",
		field: "alerts.webhooks[0].headers.X-Key",
		want:  []string{`header "X-Key" uses ${EMPTY}, which is empty in webhook "ops" (line 5)`},
	},
	{
		name:  "broken variable reference",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://127.0.0.1:9000/hook\n      headers: {X-Key: \"${OPS_TOKEN\"}\n",
		field: "alerts.webhooks[0].headers.X-Key",
		want:  []string{`header "X-Key" has a ${ that does not start a variable reference`, "$${ for a literal"},
	},
	{
		name:  "url from an unset variable",
		yaml:  "alerts:\n  webhooks:\n    - name: chat\n      url: ${NOPE_URL}\n      format: slack\n",
		field: "alerts.webhooks[0].url",
		want:  []string{`url uses ${NOPE_URL}, which is not set in webhook "chat" (line 4)`},
	},
	{
		name:    "url variable that is not a URL is not printed",
		yaml:    "alerts:\n  webhooks:\n    - name: chat\n      url: ${BAD_URL}\n",
		field:   "alerts.webhooks[0].url",
		want:    []string{`url "${BAD_URL}" does not resolve to an http or https URL with a host in webhook "chat" (line 4)`},
		notWant: []string{"s3cret"},
	},
	{
		name:  "header set twice in different case",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      headers:\n        X-Key: a\n        x-key: b\n",
		field: "alerts.webhooks[0].headers.x-key",
		want:  []string{`header "x-key" is set more than once (also as "X-Key") in webhook "ops" (line 7)`},
	},
	{
		name:  "reserved header",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      headers: {Idempotency-Key: x}\n",
		field: "alerts.webhooks[0].headers.Idempotency-Key",
		want:  []string{`header "Idempotency-Key" is set by Vigil itself in webhook "ops" (line 5)`},
	},
	{
		name:  "header name with a space",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      headers: {\"X Key\": x}\n",
		field: "alerts.webhooks[0].headers.X Key",
		want:  []string{`header name "X Key" is not a valid HTTP header name`},
	},
	{
		name:    "header value with a newline from the environment",
		yaml:    "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      headers: {X-Key: \"${MULTILINE}\"}\n",
		field:   "alerts.webhooks[0].headers.X-Key",
		want:    []string{`the value of header "X-Key" contains a control character`},
		notWant: []string{"line-two"},
	},
	{
		name:  "headers as a list",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      headers: [Authorization]\n",
		field: "alerts.webhooks[0].headers",
		want:  []string{`headers is a list, not a mapping in webhook "ops" (line 5)`},
	},
	{
		name:  "unknown event",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      events: [dwon]\n",
		field: "alerts.webhooks[0].events",
		want:  []string{`event "dwon" is not down or up in webhook "ops" (line 5)`, `did you mean "down"?`},
	},
	{
		name:  "events empty",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      events: []\n",
		field: "alerts.webhooks[0].events",
		want:  []string{`events is empty in webhook "ops" (line 5)`, "delete the line to send both"},
	},
	{
		name:  "events as a single value",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      events: down\n",
		field: "alerts.webhooks[0].events",
		want:  []string{`events is a single value, not a list in webhook "ops" (line 5)`, "events: [down, up]"},
	},
	{
		name:  "unknown format",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      format: slak\n",
		field: "alerts.webhooks[0].format",
		want:  []string{`format "slak" is not one of json, slack, discord in webhook "ops" (line 5)`, `did you mean "slack"?`},
	},
	{
		name:  "webhook timeout too long",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      timeout: 2m\n",
		field: "alerts.webhooks[0].timeout",
		want:  []string{`timeout 2m is outside (0, 1m] in webhook "ops" (line 5)`},
	},
	{
		name:  "webhook max_attempts zero",
		yaml:  "alerts:\n  webhooks:\n    - name: ops\n      url: http://a/\n      max_attempts: 0\n",
		field: "alerts.webhooks[0].max_attempts",
		want:  []string{`max_attempts 0 is outside 1..50 in webhook "ops" (line 5)`},
	},
	{
		name:  "window for an unknown service",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    services: [inventry]\n    start: 2026-05-01T02:00:00Z\n    end: 2026-05-01T03:00:00Z\n",
		field: "maintenance_windows[0].services",
		want:  []string{`service "inventry" is not defined in maintenance window "deploy" (line 9)`, `did you mean "inventory"?`},
	},
	{
		name:  "window for an unknown group",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [edge]\n    start: 2026-05-01T02:00:00Z\n    end: 2026-05-01T03:00:00Z\n",
		field: "maintenance_windows[0].groups",
		want:  []string{`group "edge" is not defined in maintenance window "deploy" (line 9)`, "use a defined group (core)"},
	},
	{
		name:  "window without targets",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    start: 2026-05-01T02:00:00Z\n    end: 2026-05-01T03:00:00Z\n",
		field: "maintenance_windows[0]",
		want:  []string{`the window names no services or groups in maintenance window "deploy" (line 8)`, "groups: [core]"},
	},
	{
		name:  "window without a time",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n",
		field: "maintenance_windows[0]",
		want:  []string{`the window has no time in maintenance window "deploy" (line 8)`, "cron: and duration:"},
	},
	{
		name:  "window end before start",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n    start: 2026-05-01T03:00:00Z\n    end: 2026-05-01T02:00:00Z\n",
		field: "maintenance_windows[0].end",
		want:  []string{"end 2026-05-01T02:00:00Z is not after start 2026-05-01T03:00:00Z", "(line 11)"},
	},
	{
		name:  "window start without a zone",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n    start: 2026-05-01 02:00\n    end: 2026-05-01T02:00:00Z\n",
		field: "maintenance_windows[0].start",
		want:  []string{`start "2026-05-01 02:00" is not an RFC 3339 time`, "2026-05-01T02:00:00Z"},
	},
	{
		name:  "window end missing",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n    start: 2026-05-01T02:00:00Z\n",
		field: "maintenance_windows[0].end",
		want:  []string{`end is missing in maintenance window "deploy" (line 8)`},
	},
	{
		name:  "window both one-off and recurring",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n    start: 2026-05-01T02:00:00Z\n    end: 2026-05-01T03:00:00Z\n    cron: \"0 2 * * *\"\n    duration: 1h\n",
		field: "maintenance_windows[0].cron",
		want:  []string{"the window has both start/end and cron/duration", "keep one pair"},
	},
	{
		name:  "bad cron",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n    cron: \"0 25 * * *\"\n    duration: 1h\n",
		field: "maintenance_windows[0].cron",
		want:  []string{`cron "0 25 * * *" is not a cron expression: hour 25 is outside 0-23`, "(line 10)", `"0 2 * * sun"`},
	},
	{
		name:  "cron without duration",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n    cron: \"0 2 * * *\"\n",
		field: "maintenance_windows[0].duration",
		want:  []string{"duration 0s is not more than 0", "e.g. 2h"},
	},
	{
		name:  "recurring window longer than a week",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n    cron: \"0 2 * * *\"\n    duration: 200h\n",
		field: "maintenance_windows[0].duration",
		want:  []string{"duration 200h is longer than a week"},
	},
	{
		name:  "unknown time zone",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n    cron: \"0 2 * * *\"\n    duration: 1h\n    timezone: Mars/Olympus\n",
		field: "maintenance_windows[0].timezone",
		want:  []string{`timezone "Mars/Olympus" is not a known time zone`, "(line 12)"},
	},
	{
		name:  "time zone on a one-off window",
		yaml:  twoServices + "maintenance_windows:\n  - name: deploy\n    groups: [core]\n    start: 2026-05-01T02:00:00Z\n    end: 2026-05-01T03:00:00Z\n    timezone: UTC\n",
		field: "maintenance_windows[0].timezone",
		want:  []string{"timezone applies to cron windows only"},
	},
	{
		name:  "duplicate window names",
		yaml:  twoServices + "maintenance_windows:\n  - {name: deploy, groups: [core], cron: '0 2 * * *', duration: 1h}\n  - {name: deploy, groups: [core], cron: '0 3 * * *', duration: 1h}\n",
		field: "maintenance_windows[1].name",
		want:  []string{`duplicate maintenance window name "deploy" in maintenance_windows[1] (line 9)`, "maintenance_windows[0] (line 8) already uses it"},
	},
	{
		name:  "unknown window key",
		yaml:  twoServices + "maintenance_windows:\n  - {name: deploy, groups: [core], cron: '0 2 * * *', duration: 1h, every: day}\n",
		field: "maintenance_windows[0].every",
		want:  []string{`unknown field "every" in maintenance window "deploy" (line 8)`, "name, services, groups, start, end, cron, duration, timezone"},
	},
}

func TestParseRejectsAlertSettings(t *testing.T) {
	t.Parallel()
	env := slices.Concat(testEnv, []string{"MULTILINE=line-one\nline-two"})
	for _, scenario := range alertRejectScenarios {
		t.Run(scenario.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := ParseEnv([]byte(scenario.yaml), env)
			require.Error(t, err)
			assert.Nil(t, cfg)
			var invalid *ValidationError
			require.ErrorAs(t, err, &invalid)
			require.Len(t, invalid.Problems, 1, "problems:\n%s", err)
			p := invalid.Problems[0]
			assert.Equal(t, scenario.field, p.Field)
			for _, want := range scenario.want {
				assert.Contains(t, p.Message, want)
			}
			for _, secret := range scenario.notWant {
				assert.NotContains(t, err.Error(), secret, "a secret leaked into the message")
			}
			assert.NotZero(t, p.Line)
		})
	}
}

func TestParseResolvesWebhookVariables(t *testing.T) {
	t.Parallel()
	cfg, err := ParseEnv([]byte(`
alerts:
  webhooks:
    - name: chat
      url: ${SLACK_URL}
      format: discord
      headers:
        Authorization: "Bearer ${OPS_TOKEN}"
        X-Price: "$$5, not ${OPS_TOKEN}s"
      events: [Down]
`), testEnv)
	require.NoError(t, err)
	require.Len(t, cfg.Alerts.Webhooks, 1)
	w := cfg.Alerts.Webhooks[0]
	assert.Equal(t, "https://hooks.slack.example/T0/B0/XyZ", w.URL)
	assert.Equal(t, map[string]string{"Authorization": "Bearer s3cret-token", "X-Price": "$5, not s3cret-tokens"}, w.Headers)
	assert.Equal(t, []string{"down"}, w.Events)
	assert.True(t, w.Sends("DOWN"))
	assert.False(t, w.Sends("UP"))
	assert.Equal(t, "discord", w.Format)
	assert.Equal(t, DefaultWebhookTimeout, w.Timeout)
	assert.Equal(t, DefaultWebhookMaxAttempts, w.MaxAttempts)
}

func TestParseReadsMaintenanceWindows(t *testing.T) {
	t.Parallel()
	cfg, err := ParseEnv([]byte(twoServices+`
maintenance_windows:
  - name: sunday patching
    groups: [core]
    services: [billing]
    cron: "0 2 * * sun"
    duration: 90m
`), nil)
	require.NoError(t, err)
	assert.Equal(t, []MaintenanceWindow{{
		Name: "sunday patching", Services: []string{"billing"}, Groups: []string{"core"},
		Cron: "0 2 * * sun", Duration: 90 * time.Minute, Timezone: "UTC",
	}}, cfg.MaintenanceWindows)
	assert.True(t, cfg.MaintenanceWindows[0].Recurring())
}

func TestAlertDefaults(t *testing.T) {
	t.Parallel()
	a := Default().Alerts
	assert.Equal(t, 1, a.FailureThreshold)
	assert.Equal(t, 1, a.SuccessThreshold)
	assert.False(t, a.AlertBeforeFirstUp, "a service never seen UP raises no alert unless asked")
	assert.Equal(t, "http://localhost:8080", a.BaseURL)
	assert.Less(t, a.RetryBase, a.RetryCap)
	require.NoError(t, Default().Validate())

	// A Config built in code is checked by the same rules.
	cfg := Default()
	cfg.Alerts.Webhooks = []Webhook{{Name: "ops", URL: "http://a/"}}
	err := cfg.Validate()
	require.Error(t, err)
	for _, field := range []string{"events", "format", "timeout", "max_attempts"} {
		assert.Contains(t, err.Error(), "alerts.webhooks[0]."+field)
	}
	assert.False(t, strings.Contains(err.Error(), "(line "), "no line numbers for a Config built in code")
}
