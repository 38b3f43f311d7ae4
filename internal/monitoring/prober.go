package monitoring

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"time"

	"github.com/vigilhq/vigil/internal/version"
)

// maxBodyBytes caps what a probe reads of a response: enough for any health
// document, small enough that a misbehaving target cannot exhaust memory.
const maxBodyBytes = 1 << 20

// ProbeResult is what one check observed. DOWN is a result, not an error:
// a timeout, a refused connection or a 500 completes the job like an UP does.
type ProbeResult struct {
	Status     string // UP or DOWN
	Latency    time.Duration
	HTTPStatus int    // 0 when no response arrived
	Error      string // the reason for DOWN, empty for UP
}

// Prober checks one target. The scheduler calls it outside any transaction.
type Prober interface {
	Probe(ctx context.Context, target string, timeout time.Duration) ProbeResult
}

// HTTPProber performs an HTTP GET and judges 2xx as UP.
type HTTPProber struct {
	client *http.Client
	agent  string
}

// NewHTTPProber builds a prober whose connections time out after connectTimeout
// and which never follows redirects: a 3xx from a health endpoint usually means
// a login page or a moved service, which the operator should see as DOWN.
func NewHTTPProber(connectTimeout time.Duration) *HTTPProber {
	dialer := &net.Dialer{Timeout: connectTimeout}
	transport := &http.Transport{
		Proxy:                 nil, // targets are probed directly, never through an env proxy
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   connectTimeout,
		TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12},
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // bounded by the request context instead
	}
	return &HTTPProber{
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		agent: "Vigil/" + version.String() + " (+https://github.com/vigilhq/vigil)",
	}
}

// Probe GETs target within timeout and reads at most 1 MiB of the body.
func (p *HTTPProber) Probe(ctx context.Context, target string, timeout time.Duration) ProbeResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	down := func(code int, reason string) ProbeResult {
		return ProbeResult{Status: "DOWN", Latency: time.Since(start), HTTPStatus: code, Error: reason}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return down(0, "invalid request: "+err.Error())
	}
	req.Header.Set("User-Agent", p.agent)
	req.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.1")
	resp, err := p.client.Do(req)
	if err != nil {
		return down(0, describeProbeError(err, timeout))
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyBytes))
	latency := time.Since(start)
	switch {
	case err != nil:
		return ProbeResult{Status: "DOWN", Latency: latency, HTTPStatus: resp.StatusCode,
			Error: "reading body: " + describeProbeError(err, timeout)}
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return ProbeResult{Status: "DOWN", Latency: latency, HTTPStatus: resp.StatusCode,
			Error: fmt.Sprintf("HTTP %d redirect to %q (redirects are not followed)", resp.StatusCode, resp.Header.Get("Location"))}
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		return ProbeResult{Status: "DOWN", Latency: latency, HTTPStatus: resp.StatusCode,
			Error: fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
	}
	return ProbeResult{Status: "UP", Latency: latency, HTTPStatus: resp.StatusCode}
}

// describeProbeError turns transport errors into the short reasons an operator
// reads on the dashboard.
func describeProbeError(err error, timeout time.Duration) string {
	var dnsErr *net.DNSError
	var urlErr *url.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("timeout after %s", timeout)
	case errors.Is(err, context.Canceled):
		return "probe cancelled"
	case errors.As(err, &dnsErr):
		return "DNS lookup failed: " + dnsErr.Error()
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by peer"
	case errors.As(err, &urlErr):
		if urlErr.Timeout() {
			return fmt.Sprintf("timeout after %s", timeout)
		}
		return urlErr.Err.Error()
	}
	return err.Error()
}
