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

// probeDNS asks the server in dns://server[:port] for the spec's name. An answer with at
// least one address (and the expected one, when dns_expect is set) is UP; the addresses are
// the body that [BODY] conditions see.
func (p *HTTPProber) probeDNS(ctx context.Context, req ProbeRequest) (ProbeResult, conditions.Observation) {
	var obs conditions.Observation
	start := time.Now()
	server, err := hostPort(req.Target, "53")
	if err != nil {
		return ProbeResult{Status: "DOWN", Error: err.Error()}, obs
	}
	resolver := &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return p.dialer.DialContext(ctx, network, server)
		},
	}
	network := "ip4"
	if strings.EqualFold(req.Spec.DNSType, "AAAA") {
		network = "ip6"
	}
	addrs, err := resolver.LookupNetIP(ctx, network, req.Spec.DNSName)
	latency := time.Since(start)
	if err != nil {
		return ProbeResult{Status: "DOWN", Latency: latency, Error: describeProbeError(err, req.Timeout)}, obs
	}
	obs.Connected = true
	text := make([]string, len(addrs))
	for i, a := range addrs {
		text[i] = a.Unmap().String()
	}
	obs.Body = []byte(strings.Join(text, ","))
	if req.Spec.DNSExpect != "" {
		want, err := netip.ParseAddr(req.Spec.DNSExpect)
		if err != nil || !slices.ContainsFunc(addrs, func(a netip.Addr) bool { return a.Unmap() == want.Unmap() }) {
			return ProbeResult{Status: "DOWN", Latency: latency,
				Error: fmt.Sprintf("%s resolved to %s, not %s", req.Spec.DNSName, strings.Join(text, ", "), req.Spec.DNSExpect)}, obs
		}
	}
	return ProbeResult{Status: "UP", Latency: latency}, obs
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
