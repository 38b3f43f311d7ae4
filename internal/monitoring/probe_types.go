package monitoring

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/vigilhq/vigil/internal/conditions"
)

// probeTCP connects to tcp://host:port; an established connection is UP.
func (p *HTTPProber) probeTCP(ctx context.Context, req ProbeRequest) (ProbeResult, conditions.Observation) {
	var obs conditions.Observation
	start := time.Now()
	addr, err := hostPort(req.Target, "")
	if err != nil {
		return ProbeResult{Status: "DOWN", Error: err.Error()}, obs
	}
	conn, err := p.dialer.DialContext(ctx, "tcp", addr)
	latency := time.Since(start)
	if err != nil {
		return ProbeResult{Status: "DOWN", Latency: latency, Error: describeProbeError(err, req.Timeout)}, obs
	}
	_ = conn.Close()
	obs.Connected = true
	return ProbeResult{Status: "UP", Latency: latency}, obs
}

// probeTLS connects to tls://host:port and completes a handshake. The certificate is
// verified unless tls_verify is false; its expiry feeds [CERTIFICATE_EXPIRATION].
func (p *HTTPProber) probeTLS(ctx context.Context, req ProbeRequest) (ProbeResult, conditions.Observation) {
	var obs conditions.Observation
	start := time.Now()
	addr, err := hostPort(req.Target, "")
	if err != nil {
		return ProbeResult{Status: "DOWN", Error: err.Error()}, obs
	}
	host, _, _ := net.SplitHostPort(addr)
	d := &tls.Dialer{NetDialer: p.dialer, Config: &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         host,
		InsecureSkipVerify: req.Spec.TLSSkipVerify, //nolint:gosec // only with tls_verify: false
	}}
	conn, err := d.DialContext(ctx, "tcp", addr)
	latency := time.Since(start)
	if err != nil {
		return ProbeResult{Status: "DOWN", Latency: latency, Error: "TLS: " + describeProbeError(err, req.Timeout)}, obs
	}
	defer conn.Close()
	obs.Connected = true
	state := conn.(*tls.Conn).ConnectionState()
	if len(state.PeerCertificates) > 0 {
		obs.HasCertificate = true
		obs.CertificateValid = time.Until(state.PeerCertificates[0].NotAfter)
	}
	return ProbeResult{Status: "UP", Latency: latency}, obs
}

// DNSTypes are the record types a dns probe can ask for; A is the default.
var DNSTypes = []string{"A", "AAAA", "CNAME", "MX", "NS", "TXT"}

// probeDNS asks the server in dns://server[:port] for the spec's name and record type. An
// answer with at least one such record (and the expected one, when dns_expect is set) is UP;
// the records are the body that [BODY] conditions see. The query goes to that server only,
// never through /etc/hosts or the replica's resolver.
func (p *HTTPProber) probeDNS(ctx context.Context, req ProbeRequest) (ProbeResult, conditions.Observation) {
	var obs conditions.Observation
	start := time.Now()
	server, err := hostPort(req.Target, "53")
	if err != nil {
		return ProbeResult{Status: "DOWN", Error: err.Error()}, obs
	}
	typeName := strings.ToUpper(req.Spec.DNSType)
	if typeName == "" {
		typeName = "A"
	}
	qtype, ok := dns.StringToType[typeName]
	if !ok || !slices.Contains(DNSTypes, typeName) {
		return ProbeResult{Status: "DOWN", Error: fmt.Sprintf("unsupported DNS record type %q", req.Spec.DNSType)}, obs
	}
	msg := new(dns.Msg)
	msg.SetQuestion(dns.Fqdn(req.Spec.DNSName), qtype)
	client := &dns.Client{Net: "udp", Dialer: p.dialer, Timeout: req.Timeout}
	answer, _, err := client.ExchangeContext(ctx, msg, server)
	if err == nil && answer.Truncated {
		client.Net = "tcp"
		answer, _, err = client.ExchangeContext(ctx, msg, server)
	}
	latency := time.Since(start)
	down := func(reason string) (ProbeResult, conditions.Observation) {
		return ProbeResult{Status: "DOWN", Latency: latency, Error: reason}, obs
	}
	if err != nil {
		return down("DNS query failed: " + describeProbeError(err, req.Timeout))
	}
	obs.Connected = true
	if answer.Rcode != dns.RcodeSuccess {
		return down(fmt.Sprintf("DNS answer %s for %s", dns.RcodeToString[answer.Rcode], req.Spec.DNSName))
	}
	var records []string
	for _, rr := range answer.Answer {
		if rr.Header().Rrtype != qtype {
			continue // the CNAME chain in front of an A answer
		}
		switch r := rr.(type) {
		case *dns.A:
			records = append(records, r.A.String())
		case *dns.AAAA:
			records = append(records, r.AAAA.String())
		case *dns.CNAME:
			records = append(records, strings.TrimSuffix(r.Target, "."))
		case *dns.MX:
			records = append(records, strings.TrimSuffix(r.Mx, "."))
		case *dns.NS:
			records = append(records, strings.TrimSuffix(r.Ns, "."))
		case *dns.TXT:
			records = append(records, strings.Join(r.Txt, ""))
		}
	}
	if len(records) == 0 {
		return down(fmt.Sprintf("no %s record for %s", typeName, req.Spec.DNSName))
	}
	obs.Body = []byte(strings.Join(records, ","))
	if want := req.Spec.DNSExpect; want != "" && !slices.ContainsFunc(records, func(r string) bool { return sameRecord(r, want) }) {
		return down(fmt.Sprintf("%s resolved to %s, not %s", req.Spec.DNSName, strings.Join(records, ", "), want))
	}
	return ProbeResult{Status: "UP", Latency: latency}, obs
}

// sameRecord compares addresses as addresses and names without case or the final dot.
func sameRecord(got, want string) bool {
	if a, err := netip.ParseAddr(got); err == nil {
		b, err := netip.ParseAddr(want)
		return err == nil && a.Unmap() == b.Unmap()
	}
	return strings.EqualFold(strings.TrimSuffix(got, "."), strings.TrimSuffix(want, "."))
}

// hostPort reads host:port from a scheme://host:port target, with defaultPort when the
// target has none ("" for required).
func hostPort(target, defaultPort string) (string, error) {
	u, err := url.Parse(target)
	if err != nil || u.Hostname() == "" {
		return "", fmt.Errorf("invalid target %q: want scheme://host:port", target)
	}
	port := u.Port()
	if port == "" {
		if defaultPort == "" {
			return "", fmt.Errorf("invalid target %q: no port", target)
		}
		port = defaultPort
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
