package monitoring

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrLinkLocalTarget is returned for a target whose address is link-local, which includes
// the cloud metadata services (169.254.169.254, fd00:ec2::254) that hand out credentials.
// A monitor is a convenient way to reach them from inside a network, so they are refused
// unless the config says allow_link_local: true.
var ErrLinkLocalTarget = errors.New("link-local and cloud metadata addresses are not probed")

var metadataIPv6 = netip.MustParseAddr("fd00:ec2::254")

// IsLinkLocalTarget reports whether ip is an address Vigil refuses by default:
// 169.254.0.0/16, fe80::/10 (and their IPv4-mapped forms) and fd00:ec2::254.
func IsLinkLocalTarget(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip == metadataIPv6
}

// TargetSchemes are the URL schemes a service's url may have; the scheme picks the probe
// type unless the service sets type: explicitly.
var TargetSchemes = []string{"http", "https", "tcp", "tls", "dns"}

// CheckTargetURL validates a target as text: a known scheme, a host, and, when the host is
// an IP literal, not a refused address. Names are checked again after resolution, at dial
// time (guardedDialer), because a name can resolve to anything. The error is meant for the
// person who typed the URL.
func CheckTargetURL(raw string, allowLinkLocal bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL", raw)
	}
	scheme := strings.ToLower(u.Scheme)
	known := false
	for _, s := range TargetSchemes {
		known = known || s == scheme
	}
	if !known {
		return fmt.Errorf("scheme %q is not probed; use http://, https://, tcp://, tls:// or dns://", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	if scheme != "http" && scheme != "https" && u.Port() == "" && scheme != "dns" {
		return fmt.Errorf("%s:// needs a port, e.g. %s://%s:443", scheme, scheme, host)
	}
	if allowLinkLocal {
		return nil
	}
	if ip, err := netip.ParseAddr(strings.Split(host, "%")[0]); err == nil && IsLinkLocalTarget(ip) {
		return fmt.Errorf("%s: %w (set allow_link_local: true to probe it anyway)", host, ErrLinkLocalTarget)
	}
	return nil
}

type allowLinkLocalKey struct{}

// withLinkLocal lets one probe's dials reach link-local addresses.
func withLinkLocal(ctx context.Context, allow bool) context.Context {
	if !allow {
		return ctx
	}
	return context.WithValue(ctx, allowLinkLocalKey{}, true)
}

// guardControl runs after a name is resolved and before the socket connects, so it sees the
// address that will actually be dialled (also after a redirect or a DNS rebinding).
func guardControl(ctx context.Context, _, address string, _ syscall.RawConn) error {
	if allowed, _ := ctx.Value(allowLinkLocalKey{}).(bool); allowed {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: %w", address, err)
	}
	if IsLinkLocalTarget(ap.Addr()) {
		return fmt.Errorf("dial %s: %w (set allow_link_local: true to probe it anyway)", address, ErrLinkLocalTarget)
	}
	return nil
}

// guardedDialer is a net.Dialer that refuses link-local addresses unless the context allows them.
func guardedDialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, ControlContext: guardControl}
}
