package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/vigilhq/vigil/internal/conditions"
	"github.com/vigilhq/vigil/internal/monitoring"
)

// probeFields are the service keys that describe the check beyond url and timeout.
var probeFields = []string{"type", "method", "headers", "body", "basic_user", "basic_password", "bearer_token",
	"expected_status", "tls_verify", "follow_redirects", "degraded_above", "conditions",
	"dns_name", "dns_type", "dns_expect", "allow_link_local"}

// httpOnlyFields make sense for http services only.
var httpOnlyFields = []string{"method", "headers", "body", "basic_user", "basic_password", "bearer_token",
	"expected_status", "follow_redirects"}

// ProbeTypes are the values of a service's type.
var ProbeTypes = []string{monitoring.ProbeHTTP, monitoring.ProbeTCP, monitoring.ProbeTLS, monitoring.ProbeDNS}

// probe reads a service's probe fields into s.Probe. Header, body and auth values keep their
// ${NAME} references: the probing replica resolves them, so secrets never reach the
// database. They are still checked here, so a variable missing on this replica stops it.
func (d *decoder) probe(f *mappingFields, sc scope, s *Service, allowLinkLocal bool) {
	p := &s.Probe
	d.text(f, sc, "type", &p.Type)
	d.text(f, sc, "method", &p.Method)
	p.Method = strings.ToUpper(p.Method)
	p.Headers = d.headerMap(f, sc, false)
	for _, t := range []struct {
		key string
		dst *string
	}{{"body", &p.Body}, {"basic_user", &p.BasicUser}, {"basic_password", &p.BasicPassword}, {"bearer_token", &p.BearerToken}} {
		key, dst := t.key, t.dst
		d.text(f, sc, key, dst)
		if *dst != "" {
			if _, ok := d.expand(f, sc, key, key, *dst); !ok {
				*dst = ""
			}
		}
	}
	if n, ok := f.values["expected_status"]; ok {
		example := "expected_status: [200, 204]"
		items := []*yaml.Node{n}
		if n.Kind == yaml.SequenceNode {
			items = n.Content
		}
		for _, item := range items {
			var code int
			if item = resolve(item); item.Kind != yaml.ScalarNode || item.ShortTag() != "!!int" || item.Decode(&code) != nil {
				d.fail(sc, "expected_status", item, "expected_status "+quote(item.Value)+" is not a status code", "write "+example)
				p.ExpectedStatus = nil
				break
			}
			p.ExpectedStatus = append(p.ExpectedStatus, code)
		}
	}
	verify := true
	d.boolean(f, sc, "tls_verify", &verify)
	p.TLSSkipVerify = !verify
	d.boolean(f, sc, "follow_redirects", &p.FollowRedirects)
	var degraded time.Duration
	d.duration(f, sc, "degraded_above", &degraded)
	s.DegradedAbove = degraded
	p.DegradedAboveMS = degraded.Milliseconds()
	if n, ok := f.values["conditions"]; ok && n.Kind == yaml.SequenceNode {
		for j, item := range n.Content {
			d.lines[sc.field(fmt.Sprintf("conditions[%d]", j))] = resolve(item).Line
		}
	}
	if list, ok := d.textList(f, sc, "conditions", `conditions: ["[STATUS] == 200", "[BODY].status == UP"]`); ok {
		p.Conditions = list
	}
	d.text(f, sc, "dns_name", &p.DNSName)
	d.text(f, sc, "dns_type", &p.DNSType)
	p.DNSType = strings.ToUpper(p.DNSType)
	d.text(f, sc, "dns_expect", &p.DNSExpect)
	d.boolean(f, sc, "allow_link_local", &p.AllowLinkLocal)
	p.AllowLinkLocal = p.AllowLinkLocal || allowLinkLocal
	if _, set := f.values["type"]; !set && schemeType(s.URL) != monitoring.ProbeHTTP {
		p.Type = schemeType(s.URL) // tcp://, tls:// and dns:// say what they are
	}
}

// schemeType is the probe type a url implies: tcp://, tls:// and dns:// name theirs,
// anything else is http.
func schemeType(raw string) string {
	scheme, _, _ := strings.Cut(raw, "://")
	switch strings.ToLower(scheme) {
	case monitoring.ProbeTCP, monitoring.ProbeTLS, monitoring.ProbeDNS:
		return strings.ToLower(scheme)
	}
	return monitoring.ProbeHTTP
}

// probe checks a service's url and probe definition together.
func (v *validator) probe(sc scope, svc Service) {
	p := svc.Probe
	typ := p.ProbeType()
	if !slices.Contains(ProbeTypes, typ) {
		fix := "write type: http (the default), tcp, tls or dns"
		if s := suggest(typ, ProbeTypes); s != "" {
			fix = fmt.Sprintf("did you mean %q? ", s) + fix
		}
		v.report(sc, "type", "type "+quote(p.Type)+" is not one of http, tcp, tls, dns", fix)
		return
	}
	before := len(v.problems)
	if typ == monitoring.ProbeHTTP {
		v.url(sc, "url", svc.URL, "the address to probe, e.g. http://127.0.0.1:8081/health")
	} else if svc.URL == "" {
		v.report(sc, "url", "url is missing", fmt.Sprintf("add url: %s://host:port", typ))
	} else if got := schemeType(svc.URL); got != typ || !strings.Contains(svc.URL, "://") {
		v.report(sc, "url", fmt.Sprintf("url %s does not match type %s", quote(svc.URL), typ),
			fmt.Sprintf("write the url as %s://host:port for a %s check", typ, typ))
	}
	if len(v.problems) == before {
		if err := monitoring.CheckTargetURL(svc.URL, p.AllowLinkLocal); err != nil {
			fix := "use the service's own address"
			if strings.Contains(err.Error(), "allow_link_local") {
				fix = "probe another address, or set allow_link_local: true on the service (or under scheduler:) if you mean it"
			}
			v.report(sc, "url", "url "+quote(svc.URL)+": "+err.Error(), fix)
		}
	}

	// Judged by value, not by presence in the file, so a service built in code (the admin
	// pages) is checked the same way.
	set := map[string]bool{
		"method": p.Method != "", "headers": len(p.Headers) > 0, "body": p.Body != "",
		"basic_user": p.BasicUser != "", "basic_password": p.BasicPassword != "", "bearer_token": p.BearerToken != "",
		"expected_status": len(p.ExpectedStatus) > 0, "follow_redirects": p.FollowRedirects,
		"tls_verify": p.TLSSkipVerify, "dns_name": p.DNSName != "", "dns_type": p.DNSType != "", "dns_expect": p.DNSExpect != "",
	}
	if typ != monitoring.ProbeHTTP {
		for _, key := range httpOnlyFields {
			if set[key] {
				v.report(sc, key, key+" applies to http services only", "remove it, or make the service type: http")
			}
		}
	}
	if typ != monitoring.ProbeHTTP && typ != monitoring.ProbeTLS && set["tls_verify"] {
		v.report(sc, "tls_verify", "tls_verify applies to http and tls services only", "remove it")
	}
	if typ != monitoring.ProbeDNS {
		for _, key := range []string{"dns_name", "dns_type", "dns_expect"} {
			if set[key] {
				v.report(sc, key, key+" applies to dns services only", "remove it, or make the service type: dns")
			}
		}
	}

	switch p.Method {
	case "", "GET", "HEAD", "POST":
	default:
		v.report(sc, "method", "method "+quote(p.Method)+" is not GET, HEAD or POST", "write method: GET (the default), HEAD or POST")
	}
	if p.Body != "" && p.Method != "POST" {
		v.report(sc, "body", "body is set but method is not POST", "add method: POST, or remove body")
	}
	if p.BearerToken != "" && (p.BasicUser != "" || p.BasicPassword != "") {
		v.report(sc, "bearer_token", "bearer_token and basic_user/basic_password are both set", "keep one kind of authentication")
	}
	headerNames := make([]string, 0, len(p.Headers))
	for name := range p.Headers {
		headerNames = append(headerNames, name)
	}
	slices.Sort(headerNames)
	for _, name := range headerNames {
		value := p.Headers[name]
		field := "headers." + name
		switch {
		case name == "" || strings.ContainsFunc(name, func(r rune) bool { return !isTokenChar(r) }):
			v.report(sc, field, "header name "+quote(name)+" is not a valid HTTP header name",
				"use letters, digits and - only, e.g. Authorization or X-Api-Key")
		case strings.ContainsFunc(value, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }):
			v.report(sc, field, "the value of header "+quote(name)+" contains a control character (a newline or similar)",
				"remove it from the value")
		}
	}
	for _, code := range p.ExpectedStatus {
		if code < 100 || code > 599 {
			v.report(sc, "expected_status", fmt.Sprintf("expected_status %d is not an HTTP status code", code),
				"list codes between 100 and 599, e.g. expected_status: [200, 204]")
		}
	}
	if svc.DegradedAbove < 0 || (svc.DegradedAbove > 0 && svc.DegradedAbove >= svc.Timeout) {
		v.report(sc, "degraded_above", "degraded_above "+formatDuration(svc.DegradedAbove)+" is not between 0 and the timeout "+formatDuration(svc.Timeout),
			"set it below the timeout, e.g. degraded_above: 800ms, or remove it")
	}

	for j, raw := range p.Conditions {
		key := fmt.Sprintf("conditions[%d]", j)
		c, err := conditions.Parse(raw)
		if err != nil {
			v.report(sc, key, "condition "+quote(raw)+": "+err.Error(),
				"write conditions as [PLACEHOLDER] OPERATOR VALUE, e.g. \"[STATUS] == 200\" or \"[BODY].status == UP\"")
			continue
		}
		allowed := map[string][]string{
			conditions.Status:                {monitoring.ProbeHTTP},
			conditions.Body:                  {monitoring.ProbeHTTP, monitoring.ProbeDNS},
			conditions.CertificateExpiration: {monitoring.ProbeHTTP, monitoring.ProbeTLS},
		}[c.Placeholder()]
		if allowed != nil && !slices.Contains(allowed, typ) {
			v.report(sc, key, fmt.Sprintf("condition %s uses %s, which a %s check does not observe", quote(raw), c.Placeholder(), typ),
				fmt.Sprintf("use it on %s services only", strings.Join(allowed, " or ")))
		}
	}

	if typ == monitoring.ProbeDNS {
		if p.DNSName == "" {
			v.report(sc, "dns_name", "dns_name is missing", "add dns_name: with the name to resolve, e.g. dns_name: example.com")
		}
		if p.DNSType != "" && !slices.Contains(monitoring.DNSTypes, p.DNSType) {
			v.report(sc, "dns_type", "dns_type "+quote(p.DNSType)+" is not one of "+strings.Join(monitoring.DNSTypes, ", "),
				"write dns_type: A (the default), AAAA, CNAME, MX, NS or TXT")
		}
		if p.DNSExpect != "" && (p.DNSType == "" || p.DNSType == "A" || p.DNSType == "AAAA") {
			if _, err := netip.ParseAddr(p.DNSExpect); err != nil {
				v.report(sc, "dns_expect", "dns_expect "+quote(p.DNSExpect)+" is not an IP address", "write the address the name must resolve to, e.g. 192.0.2.10")
			}
		}
		if u, err := url.Parse(svc.URL); err == nil && u.Path != "" && u.Path != "/" {
			v.report(sc, "url", "url "+quote(svc.URL)+" has a path", "write the DNS server as dns://host[:port] and the name in dns_name:")
		}
	}
}
