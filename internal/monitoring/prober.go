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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vigilhq/vigil/internal/conditions"
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
	// Degraded marks an UP result slower than the service's degraded_above.
	Degraded bool
	// FailedCondition is the condition that made the result DOWN, as written in the config;
	// Error then holds what was observed.
	FailedCondition string
}

// Prober checks one target. The scheduler calls it outside any transaction.
type Prober interface {
	Probe(ctx context.Context, target string, timeout time.Duration) ProbeResult
}

// ProbeRequest is one check with its full definition.
type ProbeRequest struct {
	Target  string
	Timeout time.Duration
	Spec    ProbeSpec
}

// TargetProber is a Prober that understands a job's ProbeSpec (probe type, HTTP options,
// conditions). The scheduler prefers it when the prober implements it.
type TargetProber interface {
	ProbeTarget(ctx context.Context, req ProbeRequest) ProbeResult
}

// HTTPProber performs the checks: http (the default), tcp, tls and dns.
type HTTPProber struct {
	client    *http.Client // verifies certificates
	insecure  *http.Client // tls_verify: false
	dialer    *net.Dialer
	agent     string
	lookupEnv func(string) (string, bool)
}

type followRedirectsKey struct{}

// NewHTTPProber builds a prober whose connections time out after connectTimeout
// and which by default never follows redirects: a 3xx from a health endpoint usually means
// a login page or a moved service, which the operator should see as DOWN. Every dial checks
// the resolved address against target_guard.go. ${NAME} templates are resolved from the
// process environment.
func NewHTTPProber(connectTimeout time.Duration) *HTTPProber {
	dialer := guardedDialer(connectTimeout)
	transport := func(skipVerify bool) *http.Transport {
		return &http.Transport{
			Proxy:                 nil, // targets are probed directly, never through an env proxy
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   connectTimeout,
			TLSClientConfig:       &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: skipVerify}, //nolint:gosec // only with tls_verify: false
			MaxIdleConns:          256,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			ResponseHeaderTimeout: 0, // bounded by the request context instead
		}
	}
	checkRedirect := func(req *http.Request, via []*http.Request) error {
		if follow, _ := req.Context().Value(followRedirectsKey{}).(bool); !follow {
			return http.ErrUseLastResponse
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &HTTPProber{
		client:    &http.Client{Transport: transport(false), CheckRedirect: checkRedirect},
		insecure:  &http.Client{Transport: transport(true), CheckRedirect: checkRedirect},
		dialer:    dialer,
		agent:     "Vigil/" + version.String() + " (+https://github.com/vigilhq/vigil)",
		lookupEnv: os.LookupEnv,
	}
}

// WithEnv makes the prober resolve ${NAME} templates from KEY=VALUE lines instead of the
// process environment.
func (p *HTTPProber) WithEnv(env []string) *HTTPProber {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	p.lookupEnv = func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	return p
}

// CloseIdleConnections closes the kept-alive connections of both HTTP clients.
func (p *HTTPProber) CloseIdleConnections() {
	p.client.CloseIdleConnections()
	p.insecure.CloseIdleConnections()
}

// Probe GETs target within timeout and reads at most 1 MiB of the body; 2xx is UP.
func (p *HTTPProber) Probe(ctx context.Context, target string, timeout time.Duration) ProbeResult {
	return p.ProbeTarget(ctx, ProbeRequest{Target: target, Timeout: timeout})
}

// ProbeTarget runs the check req.Spec describes within req.Timeout.
func (p *HTTPProber) ProbeTarget(ctx context.Context, req ProbeRequest) ProbeResult {
	ctx, cancel := context.WithTimeout(withLinkLocal(ctx, req.Spec.AllowLinkLocal), req.Timeout)
	defer cancel()
	conds, err := conditions.ParseAll(req.Spec.Conditions)
	if err != nil { // validated at config load; only a hand-edited row gets here
		return ProbeResult{Status: "DOWN", Error: "invalid probe definition: " + err.Error()}
	}
	var res ProbeResult
	var obs conditions.Observation
	switch req.Spec.ProbeType() {
	case ProbeHTTP:
		res, obs = p.probeHTTP(ctx, req, conds)
	case ProbeTCP:
		res, obs = p.probeTCP(ctx, req)
	case ProbeTLS:
		res, obs = p.probeTLS(ctx, req)
	case ProbeDNS:
		res, obs = p.probeDNS(ctx, req)
	default:
		return ProbeResult{Status: "DOWN", Error: fmt.Sprintf("unknown probe type %q", req.Spec.Type)}
	}
	if res.Status != "UP" {
		return res
	}
	obs.ResponseTime = res.Latency
	if f := conditions.Evaluate(conds, obs); f != nil {
		res.Status, res.FailedCondition = "DOWN", f.Condition
		res.Error = fmt.Sprintf("condition %s failed: observed %s", f.Condition, f.Observed)
		return res
	}
	if d := req.Spec.DegradedAbove(); d > 0 && res.Latency > d {
		res.Degraded = true
	}
	return res
}

func (p *HTTPProber) probeHTTP(ctx context.Context, pr ProbeRequest, conds []conditions.Condition) (ProbeResult, conditions.Observation) {
	spec, timeout := pr.Spec, pr.Timeout
	var obs conditions.Observation
	start := time.Now()
	down := func(code int, reason string) (ProbeResult, conditions.Observation) {
		return ProbeResult{Status: "DOWN", Latency: time.Since(start), HTTPStatus: code, Error: reason}, obs
	}
	method := spec.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if spec.Body != "" {
		b, err := expandEnv(spec.Body, p.lookupEnv)
		if err != nil {
			return down(0, "request body: "+err.Error())
		}
		body = strings.NewReader(b)
	}
	ctx = context.WithValue(ctx, followRedirectsKey{}, spec.FollowRedirects)
	req, err := http.NewRequestWithContext(ctx, method, pr.Target, body)
	if err != nil {
		return down(0, "invalid request: "+err.Error())
	}
	req.Header.Set("User-Agent", p.agent)
	req.Header.Set("Accept", "application/json, text/plain;q=0.9, */*;q=0.1")
	for name, tmpl := range spec.Headers {
		v, err := expandEnv(tmpl, p.lookupEnv)
		if err != nil {
			return down(0, fmt.Sprintf("header %s: %v", name, err))
		}
		req.Header.Set(name, v)
	}
	if spec.BasicUser != "" || spec.BasicPassword != "" {
		user, err := expandEnv(spec.BasicUser, p.lookupEnv)
		if err != nil {
			return down(0, "basic auth: "+err.Error())
		}
		pass, err := expandEnv(spec.BasicPassword, p.lookupEnv)
		if err != nil {
			return down(0, "basic auth: "+err.Error())
		}
		req.SetBasicAuth(user, pass)
	}
	if spec.BearerToken != "" {
		tok, err := expandEnv(spec.BearerToken, p.lookupEnv)
		if err != nil {
			return down(0, "bearer auth: "+err.Error())
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	// A connection allowed to reach a link-local address must not be reused by a service
	// that is not.
	req.Close = spec.AllowLinkLocal
	client := p.client
	if spec.TLSSkipVerify {
		client = p.insecure
	}
	resp, err := client.Do(req)
	if err != nil {
		return down(0, describeProbeError(err, timeout))
	}
	defer resp.Body.Close()
	obs.Connected, obs.StatusCode = true, resp.StatusCode
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		obs.HasCertificate = true
		obs.CertificateValid = time.Until(resp.TLS.PeerCertificates[0].NotAfter)
	}
	needBody := false
	statusCondition := len(spec.ExpectedStatus) > 0
	for _, c := range conds {
		needBody = needBody || c.NeedsBody()
		statusCondition = statusCondition || c.Placeholder() == conditions.Status
	}
	limited := io.LimitReader(resp.Body, maxBodyBytes)
	if needBody {
		obs.Body, err = io.ReadAll(limited)
	} else {
		_, err = io.Copy(io.Discard, limited)
	}
	latency := time.Since(start)
	res := ProbeResult{Status: "DOWN", Latency: latency, HTTPStatus: resp.StatusCode}
	switch {
	case err != nil:
		res.Error = "reading body: " + describeProbeError(err, timeout)
	case len(spec.ExpectedStatus) > 0 && !slices.Contains(spec.ExpectedStatus, resp.StatusCode):
		res.Error = fmt.Sprintf("HTTP %d %s (expected %s)", resp.StatusCode, http.StatusText(resp.StatusCode), joinInts(spec.ExpectedStatus))
	case statusCondition:
		res.Status = "UP" // the operator's status rule decides
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.Error = fmt.Sprintf("HTTP %d redirect to %q (redirects are not followed)", resp.StatusCode, resp.Header.Get("Location"))
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		res.Error = fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	default:
		res.Status = "UP"
	}
	return res, obs
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
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
