package monitoring

import (
	"fmt"
	"strings"
	"time"
)

// Probe types. The zero value of ProbeSpec.Type means http.
const (
	ProbeHTTP = "http"
	ProbeTCP  = "tcp"
	ProbeTLS  = "tls"
	ProbeDNS  = "dns"
)

// ProbeSpec is everything about a check beyond its target and timeout. It is stored as
// jsonb on monitored_service and copied into each job when the job is enqueued, like
// target_url, so a config change affects the next slot only.
//
// Header values, the body and the auth fields are templates: ${NAME} is resolved from the
// probing replica's environment at probe time. The database, the API and the dashboard only
// ever hold the template ("Bearer ${TOKEN}"), never the secret.
type ProbeSpec struct {
	Type            string            `json:"type,omitempty"`   // http (default), tcp, tls, dns
	Method          string            `json:"method,omitempty"` // GET (default), HEAD, POST
	Headers         map[string]string `json:"headers,omitempty"`
	Body            string            `json:"body,omitempty"`
	BasicUser       string            `json:"basic_user,omitempty"`
	BasicPassword   string            `json:"basic_password,omitempty"`
	BearerToken     string            `json:"bearer_token,omitempty"`
	ExpectedStatus  []int             `json:"expected_status,omitempty"` // empty: any 2xx
	TLSSkipVerify   bool              `json:"tls_skip_verify,omitempty"` // tls_verify: false
	FollowRedirects bool              `json:"follow_redirects,omitempty"`
	DegradedAboveMS int64             `json:"degraded_above_ms,omitempty"` // 0: never degraded
	Conditions      []string          `json:"conditions,omitempty"`        // validated at config load
	DNSName         string            `json:"dns_name,omitempty"`          // the name a dns probe resolves
	DNSType         string            `json:"dns_type,omitempty"`          // A (default), AAAA, CNAME, MX, NS or TXT
	DNSExpect       string            `json:"dns_expect,omitempty"`        // a record the answer must contain
	AllowLinkLocal  bool              `json:"allow_link_local,omitempty"`
}

// ProbeType is the spec's type with the default applied.
func (s ProbeSpec) ProbeType() string {
	if s.Type == "" {
		return ProbeHTTP
	}
	return s.Type
}

// DegradedAbove is the latency above which an UP result is marked slow; 0 for never.
func (s ProbeSpec) DegradedAbove() time.Duration {
	return time.Duration(s.DegradedAboveMS) * time.Millisecond
}

// EnvReferences lists the ${NAME} references of the spec's templates, so config loading can
// say which variables a replica needs.
func (s ProbeSpec) EnvReferences() []string {
	var names []string
	add := func(t string) {
		for {
			start := strings.Index(t, "${")
			if start < 0 {
				return
			}
			end := strings.IndexByte(t[start:], '}')
			if end < 0 {
				return
			}
			names = append(names, t[start+2:start+end])
			t = t[start+end+1:]
		}
	}
	for _, v := range s.Headers {
		add(v)
	}
	add(s.Body)
	add(s.BasicUser)
	add(s.BasicPassword)
	add(s.BearerToken)
	return names
}

// expandEnv resolves ${NAME} in template from lookup. A missing variable is an error that
// names the variable and never a value.
func expandEnv(template string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(template, "${") {
		return template, nil
	}
	var b strings.Builder
	rest := template
	for {
		start := strings.Index(rest, "${")
		if start < 0 {
			b.WriteString(rest)
			return b.String(), nil
		}
		end := strings.IndexByte(rest[start:], '}')
		if end < 0 {
			return "", fmt.Errorf("unclosed ${ in a template")
		}
		name := rest[start+2 : start+end]
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set on this replica", name)
		}
		b.WriteString(rest[:start])
		b.WriteString(v)
		rest = rest[start+end+1:]
	}
}
