package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

func TestParseProbes(t *testing.T) {
	t.Parallel()
	const file = `
scheduler: {lease: 30s}
services:
  - name: api
    url: https://api.example.com/health
    method: POST
    headers:
      Authorization: "Bearer ${API_TOKEN}"
      X-Env: prod
    body: '{"probe": "${API_TOKEN}"}'
    expected_status: [200, 204]
    tls_verify: false
    follow_redirects: true
    degraded_above: 800ms
    timeout: 3s
    conditions:
      - "[STATUS] == 200"
      - "[BODY].status == UP"
      - "[CERTIFICATE_EXPIRATION] > 72h"
  - name: basic
    url: http://127.0.0.1:8081/health
    basic_user: monitor
    basic_password: ${BASIC_PASS}
  - name: postgres
    url: tcp://db.internal:5432
    conditions: ["[CONNECTED] == true", "[RESPONSE_TIME] < 500"]
  - name: cert
    type: tls
    url: tls://example.com:443
    conditions: ["[CERTIFICATE_EXPIRATION] > 168h"]
  - name: resolver
    url: dns://127.0.0.1:53
    dns_name: example.com
    dns_type: aaaa
    dns_expect: 2001:db8::1
  - name: metadata
    url: http://169.254.169.254/latest
    allow_link_local: true
`
	cfg, err := ParseEnv([]byte(file), []string{"API_TOKEN=s3cret-token", "BASIC_PASS=hunter2"})
	require.NoError(t, err)
	require.Len(t, cfg.Services, 6)

	api := cfg.Services[0]
	assert.Equal(t, monitoring.ProbeSpec{
		Method:          "POST",
		Headers:         map[string]string{"Authorization": "Bearer ${API_TOKEN}", "X-Env": "prod"},
		Body:            `{"probe": "${API_TOKEN}"}`,
		ExpectedStatus:  []int{200, 204},
		TLSSkipVerify:   true,
		FollowRedirects: true,
		DegradedAboveMS: 800,
		Conditions:      []string{"[STATUS] == 200", "[BODY].status == UP", "[CERTIFICATE_EXPIRATION] > 72h"},
	}, api.Probe, "templates are kept unresolved: the secret must never reach the database")
	assert.Equal(t, 800*time.Millisecond, api.DegradedAbove)
	assert.Equal(t, "${BASIC_PASS}", cfg.Services[1].Probe.BasicPassword)
	assert.Equal(t, monitoring.ProbeTCP, cfg.Services[2].Probe.Type, "tcp:// implies type tcp")
	assert.Equal(t, monitoring.ProbeTLS, cfg.Services[3].Probe.Type)
	assert.Equal(t, monitoring.ProbeSpec{Type: "dns", DNSName: "example.com", DNSType: "AAAA", DNSExpect: "2001:db8::1"}, cfg.Services[4].Probe)
	assert.True(t, cfg.Services[5].Probe.AllowLinkLocal)
	assert.Empty(t, cfg.Services[1].Probe.Type, "http stays the zero value, so plain services are unchanged")
}

func TestParseSchedulerAllowLinkLocal(t *testing.T) {
	t.Parallel()
	cfg, err := ParseEnv([]byte("scheduler: {allow_link_local: true}\nservices:\n  - name: m\n    url: http://[fe80::1]/\n"), nil)
	require.NoError(t, err)
	assert.True(t, cfg.Services[0].Probe.AllowLinkLocal)
}

func TestParseRejectsProbes(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name  string
		yaml  string
		field string
		want  []string
	}{
		{"bad condition", `  - name: api
    url: http://127.0.0.1/
    conditions:
      - "[STATUS] == 200"
      - "[STAUTS] == 200"
`, "services[0].conditions[1]", []string{`condition "[STAUTS] == 200": unknown placeholder`, `in service "api" (line 6)`, "e.g."}},
		{"condition type mismatch", "  - name: db\n    url: tcp://127.0.0.1:5432\n    conditions: [\"[STATUS] == 200\"]\n",
			"services[0].conditions[0]", []string{"which a tcp check does not observe", `in service "db"`}},
		{"metadata address", "  - name: meta\n    url: http://169.254.169.254/latest/meta-data\n",
			"services[0].url", []string{"link-local", "allow_link_local: true", `in service "meta" (line 3)`}},
		{"ipv6 metadata address", "  - name: meta\n    url: http://[fd00:ec2::254]/\n",
			"services[0].url", []string{"link-local"}},
		{"unknown type", "  - name: x\n    type: icmp\n    url: http://127.0.0.1/\n",
			"services[0].type", []string{`type "icmp" is not one of http, tcp, tls, dns`}},
		{"type and scheme disagree", "  - name: x\n    type: tcp\n    url: http://127.0.0.1/\n",
			"services[0].url", []string{"does not match type tcp", "tcp://host:port"}},
		{"tcp without port", "  - name: x\n    url: tcp://127.0.0.1\n",
			"services[0].url", []string{"needs a port"}},
		{"http option on tcp", "  - name: x\n    url: tcp://127.0.0.1:22\n    method: POST\n",
			"services[0].method", []string{"method applies to http services only"}},
		{"bad method", "  - name: x\n    url: http://127.0.0.1/\n    method: DELETE\n",
			"services[0].method", []string{`method "DELETE" is not GET, HEAD or POST`}},
		{"body without post", "  - name: x\n    url: http://127.0.0.1/\n    body: hi\n",
			"services[0].body", []string{"body is set but method is not POST"}},
		{"unset secret", "  - name: x\n    url: http://127.0.0.1/\n    bearer_token: ${NOPE}\n",
			"services[0].bearer_token", []string{"${NOPE}, which is not set", "set NOPE in the environment"}},
		{"header with unset secret", "  - name: x\n    url: http://127.0.0.1/\n    headers: {X-Key: \"${NOPE}\"}\n",
			"services[0].headers.X-Key", []string{"${NOPE}, which is not set"}},
		{"bad expected status", "  - name: x\n    url: http://127.0.0.1/\n    expected_status: [700]\n",
			"services[0].expected_status", []string{"700 is not an HTTP status code"}},
		{"degraded above timeout", "  - name: x\n    url: http://127.0.0.1/\n    timeout: 1s\n    degraded_above: 2s\n",
			"services[0].degraded_above", []string{"degraded_above 2s is not between 0 and the timeout 1s"}},
		{"dns bad type", "  - name: x\n    url: dns://127.0.0.1\n    dns_name: a.example\n    dns_type: SRV\n",
			"services[0].dns_type", []string{`dns_type "SRV" is not one of A, AAAA, CNAME, MX, NS, TXT`}},
		{"dns without name", "  - name: x\n    url: dns://127.0.0.1:53\n",
			"services[0].dns_name", []string{"dns_name is missing"}},
		{"dns bad expect", "  - name: x\n    url: dns://127.0.0.1\n    dns_name: a.example\n    dns_expect: nope\n",
			"services[0].dns_expect", []string{`"nope" is not an IP address`}},
		{"unknown probe key", "  - name: x\n    url: http://127.0.0.1/\n    follow_redirect: true\n",
			"services[0].follow_redirect", []string{`did you mean "follow_redirects"?`}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseEnv([]byte("services:\n"+sc.yaml), []string{"SET=1"})
			var invalid *ValidationError
			require.ErrorAs(t, err, &invalid)
			require.Len(t, invalid.Problems, 1, "problems:\n%s", err)
			p := invalid.Problems[0]
			assert.Equal(t, sc.field, p.Field)
			for _, want := range sc.want {
				assert.Contains(t, p.Message, want)
			}
			assert.NotZero(t, p.Line)
		})
	}
}

func TestValidateProbeBuiltInCode(t *testing.T) {
	t.Parallel()
	cfg := Default()
	cfg.Services = []Service{{Name: "x", URL: "tcp://127.0.0.1:22", Interval: time.Minute, Timeout: time.Second, Enabled: true,
		Probe: monitoring.ProbeSpec{Type: "tcp", Headers: map[string]string{"A": "b"}}}}
	err := cfg.Validate()
	require.ErrorContains(t, err, "headers applies to http services only")
}

// The README's probe example must stay valid.
func TestReadmeProbeExampleParses(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	text := string(readme)
	start := strings.Index(text, "```yaml\nservices:\n  - name: api\n")
	require.NotEqual(t, -1, start, "README probe example missing")
	block := text[start+len("```yaml\n"):]
	block = block[:strings.Index(block, "```")]
	cfg, err := ParseEnv([]byte(block), []string{"API_KEY=k", "API_TOKEN=t"})
	require.NoError(t, err)
	require.Len(t, cfg.Services, 4)
	types := []string{}
	for _, s := range cfg.Services {
		types = append(types, s.Probe.ProbeType())
	}
	require.Equal(t, []string{"http", "tcp", "tls", "dns"}, types)
	require.Len(t, cfg.Services[0].Probe.Conditions, 5)
}
