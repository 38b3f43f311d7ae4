package monitoring_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
)

func probe(t *testing.T, p *monitoring.HTTPProber, target string, spec monitoring.ProbeSpec) monitoring.ProbeResult {
	t.Helper()
	return p.ProbeTarget(context.Background(), monitoring.ProbeRequest{Target: target, Timeout: 2 * time.Second, Spec: spec})
}

func TestHTTPProbeOptions(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, auth, key, body string
		user, pass              string
		basic                   bool
	}
	got := make(chan seen, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		user, pass, basic := r.BasicAuth()
		got <- seen{method: r.Method, auth: r.Header.Get("Authorization"), key: r.Header.Get("X-Api-Key"), body: string(b),
			user: user, pass: pass, basic: basic}
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "UP", "checks": []any{map[string]any{"ok": true}, map[string]any{"ok": false}}})
	})
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) { time.Sleep(60 * time.Millisecond) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/health", http.StatusFound) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p := monitoring.NewHTTPProber(time.Second).WithEnv([]string{"API_TOKEN=tok-123", "KEY=k-456", "PASS=pw-789"})

	t.Run("POST with headers, body and bearer from the environment", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/echo", monitoring.ProbeSpec{Method: "POST", Headers: map[string]string{"X-Api-Key": "${KEY}"},
			Body: `{"token":"${API_TOKEN}"}`, BearerToken: "${API_TOKEN}", ExpectedStatus: []int{202}})
		assert.Equal(t, "UP", res.Status, res.Error)
		s := <-got
		assert.Equal(t, seen{method: "POST", auth: "Bearer tok-123", key: "k-456", body: `{"token":"tok-123"}`}, s)
	})
	t.Run("basic auth", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/echo", monitoring.ProbeSpec{BasicUser: "monitor", BasicPassword: "${PASS}", ExpectedStatus: []int{202}})
		assert.Equal(t, "UP", res.Status, res.Error)
		s := <-got
		assert.True(t, s.basic)
		assert.Equal(t, "monitor", s.user)
		assert.Equal(t, "pw-789", s.pass)
	})
	t.Run("HEAD", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/echo", monitoring.ProbeSpec{Method: "HEAD", ExpectedStatus: []int{202}})
		assert.Equal(t, "UP", res.Status, res.Error)
		assert.Equal(t, "HEAD", (<-got).method)
	})
	t.Run("unexpected status", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/echo", monitoring.ProbeSpec{ExpectedStatus: []int{200}})
		<-got
		assert.Equal(t, "DOWN", res.Status)
		assert.Equal(t, "HTTP 202 Accepted (expected 200)", res.Error)
	})
	t.Run("missing variable is DOWN naming the variable", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/health", monitoring.ProbeSpec{BearerToken: "${MISSING}"})
		assert.Equal(t, "DOWN", res.Status)
		assert.Equal(t, "bearer auth: environment variable MISSING is not set on this replica", res.Error)
	})
	t.Run("JSON conditions hold", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/health", monitoring.ProbeSpec{Conditions: []string{
			"[STATUS] == 200", "[BODY].status == UP", "[BODY].checks[0].ok == true", "[BODY] == pat(*UP*)", "[CONNECTED] == true", "[RESPONSE_TIME] < 2000"}})
		assert.Equal(t, "UP", res.Status, res.Error)
		assert.Empty(t, res.FailedCondition)
	})
	t.Run("failing condition is the DOWN reason with the observed value", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/health", monitoring.ProbeSpec{Conditions: []string{"[STATUS] == 200", "[BODY].checks[1].ok == true"}})
		assert.Equal(t, "DOWN", res.Status)
		assert.Equal(t, 200, res.HTTPStatus)
		assert.Equal(t, "[BODY].checks[1].ok == true", res.FailedCondition)
		assert.Equal(t, `condition [BODY].checks[1].ok == true failed: observed "false"`, res.Error)
	})
	t.Run("a status condition replaces the 2xx rule", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/teapot", monitoring.ProbeSpec{Conditions: []string{"[STATUS] == 418"}})
		assert.Equal(t, "UP", res.Status, res.Error)
		res = probe(t, p, srv.URL+"/teapot", monitoring.ProbeSpec{Conditions: []string{"[STATUS] < 300"}})
		assert.Equal(t, "DOWN", res.Status)
		assert.Equal(t, "condition [STATUS] < 300 failed: observed 418", res.Error)
	})
	t.Run("degraded", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/slow", monitoring.ProbeSpec{DegradedAboveMS: 20})
		assert.Equal(t, "UP", res.Status)
		assert.True(t, res.Degraded)
		res = probe(t, p, srv.URL+"/slow", monitoring.ProbeSpec{DegradedAboveMS: 1500})
		assert.False(t, res.Degraded)
	})
	t.Run("redirects are followed only when asked", func(t *testing.T) {
		res := probe(t, p, srv.URL+"/moved", monitoring.ProbeSpec{})
		assert.Equal(t, "DOWN", res.Status)
		assert.Contains(t, res.Error, "redirects are not followed")
		res = probe(t, p, srv.URL+"/moved", monitoring.ProbeSpec{FollowRedirects: true, Conditions: []string{"[BODY].status == UP"}})
		assert.Equal(t, "UP", res.Status, res.Error)
	})
}

// selfSigned makes a certificate for 127.0.0.1 that expires after validFor.
func selfSigned(t *testing.T, validFor time.Duration) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vigil test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validFor),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestTLSProbe(t *testing.T) {
	t.Parallel()
	cert, _ := selfSigned(t, 48*time.Hour)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); c.Close() }()
		}
	}()
	target := "tls://" + ln.Addr().String()
	p := monitoring.NewHTTPProber(time.Second)

	res := probe(t, p, target, monitoring.ProbeSpec{Type: "tls"})
	assert.Equal(t, "DOWN", res.Status, "a self-signed certificate fails verification by default")
	assert.Contains(t, res.Error, "certificate")

	res = probe(t, p, target, monitoring.ProbeSpec{Type: "tls", TLSSkipVerify: true, Conditions: []string{"[CERTIFICATE_EXPIRATION] > 24h", "[CONNECTED] == true"}})
	assert.Equal(t, "UP", res.Status, res.Error)

	res = probe(t, p, target, monitoring.ProbeSpec{Type: "tls", TLSSkipVerify: true, Conditions: []string{"[CERTIFICATE_EXPIRATION] > 72h"}})
	assert.Equal(t, "DOWN", res.Status)
	assert.Equal(t, "[CERTIFICATE_EXPIRATION] > 72h", res.FailedCondition)
	assert.Regexp(t, `observed 4[78]h`, res.Error)
}

func TestHTTPSCertificateCondition(t *testing.T) {
	t.Parallel()
	cert, _ := selfSigned(t, 48*time.Hour)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the verifying probe's rejected handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p := monitoring.NewHTTPProber(time.Second)
	res := probe(t, p, srv.URL, monitoring.ProbeSpec{})
	assert.Equal(t, "DOWN", res.Status, "tls_verify is on by default")
	res = probe(t, p, srv.URL, monitoring.ProbeSpec{TLSSkipVerify: true, Conditions: []string{"[CERTIFICATE_EXPIRATION] > 72h"}})
	assert.Equal(t, "DOWN", res.Status)
	assert.Equal(t, "[CERTIFICATE_EXPIRATION] > 72h", res.FailedCondition)
}

func TestTCPProbe(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	p := monitoring.NewHTTPProber(time.Second)
	target := "tcp://" + ln.Addr().String()
	res := probe(t, p, target, monitoring.ProbeSpec{Type: "tcp", Conditions: []string{"[CONNECTED] == true", "[RESPONSE_TIME] < 1000"}})
	assert.Equal(t, "UP", res.Status, res.Error)
	ln.Close()
	res = probe(t, p, target, monitoring.ProbeSpec{Type: "tcp"})
	assert.Equal(t, "DOWN", res.Status)
	assert.Equal(t, "connection refused", res.Error)
}

// dnsServer answers A queries (for addresses) and TXT queries for the names in zone, and
// NXDOMAIN for the rest.
func dnsServer(t *testing.T, zone map[string]string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		name := q.Question[0].Name
		addr, ok := zone[strings.TrimSuffix(name, ".")]
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case q.Question[0].Qtype == dns.TypeA && net.ParseIP(addr) != nil:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(addr)})
		case q.Question[0].Qtype == dns.TypeTXT:
			m.Answer = append(m.Answer, &dns.TXT{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, Txt: []string{addr}})
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestDNSProbe(t *testing.T) {
	t.Parallel()
	addr := dnsServer(t, map[string]string{"api.vigil.test": "192.0.2.10", "txt.vigil.test": "v=vigil1"})
	p := monitoring.NewHTTPProber(time.Second)
	target := "dns://" + addr

	res := probe(t, p, target, monitoring.ProbeSpec{Type: "dns", DNSName: "api.vigil.test", DNSExpect: "192.0.2.10",
		Conditions: []string{"[BODY] == 192.0.2.10", "[CONNECTED] == true"}})
	assert.Equal(t, "UP", res.Status, res.Error)

	res = probe(t, p, target, monitoring.ProbeSpec{Type: "dns", DNSName: "api.vigil.test", DNSExpect: "192.0.2.99"})
	assert.Equal(t, "DOWN", res.Status)
	assert.Equal(t, "api.vigil.test resolved to 192.0.2.10, not 192.0.2.99", res.Error)

	res = probe(t, p, target, monitoring.ProbeSpec{Type: "dns", DNSName: "missing.vigil.test"})
	assert.Equal(t, "DOWN", res.Status)
	assert.Equal(t, "DNS answer NXDOMAIN for missing.vigil.test", res.Error)

	// The server is asked, not /etc/hosts.
	res = probe(t, p, target, monitoring.ProbeSpec{Type: "dns", DNSName: "localhost"})
	assert.Equal(t, "DOWN", res.Status)

	res = probe(t, p, target, monitoring.ProbeSpec{Type: "dns", DNSName: "txt.vigil.test", DNSType: "TXT", DNSExpect: "v=vigil1"})
	assert.Equal(t, "UP", res.Status, res.Error)
	res = probe(t, p, target, monitoring.ProbeSpec{Type: "dns", DNSName: "txt.vigil.test", DNSType: "A"})
	assert.Equal(t, "DOWN", res.Status)
	assert.Equal(t, "no A record for txt.vigil.test", res.Error)

	// Nothing listens: a timeout, reported as one.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	res = p.ProbeTarget(context.Background(), monitoring.ProbeRequest{Target: "dns://" + pc.LocalAddr().String(), Timeout: 200 * time.Millisecond,
		Spec: monitoring.ProbeSpec{Type: "dns", DNSName: "api.vigil.test"}})
	assert.Equal(t, "DOWN", res.Status)
	assert.Equal(t, "DNS query failed: timeout after 200ms", res.Error)
}

func TestTargetGuard(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"http://127.0.0.1:8081/health":     true,
		"https://example.com/":             true,
		"tcp://db:5432":                    true,
		"dns://127.0.0.1":                  true,
		"tcp://db":                         false,
		"ftp://example.com/":               false,
		"http://169.254.169.254/latest":    false,
		"http://[fd00:ec2::254]/":          false,
		"http://[fe80::1%25eth0]/":         false,
		"tls://[::ffff:169.254.1.1]:443":   false,
		"http://169.255.0.1/":              true,
		"http:///no-host":                  false,
		"dns://169.254.169.253:53":         false,
		"http://metadata.example.internal": true, // a name: checked again at dial time
	} {
		err := monitoring.CheckTargetURL(raw, false)
		assert.Equal(t, ok, err == nil, "%s: %v", raw, err)
	}
	require.NoError(t, monitoring.CheckTargetURL("http://169.254.169.254/", true))
	require.ErrorIs(t, monitoring.CheckTargetURL("http://169.254.169.254/", false), monitoring.ErrLinkLocalTarget)
}

func TestLinkLocalRefusedAtDialTime(t *testing.T) {
	t.Parallel()
	// The URL text is harmless; the redirect it answers with is not. The guard sees the
	// address that is about to be dialled.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	p := monitoring.NewHTTPProber(time.Second)
	res := probe(t, p, srv.URL, monitoring.ProbeSpec{FollowRedirects: true})
	assert.Equal(t, "DOWN", res.Status)
	assert.Contains(t, res.Error, "link-local and cloud metadata addresses are not probed")

	for _, spec := range []monitoring.ProbeSpec{{Type: "tcp"}, {Type: "tls"}} {
		res = probe(t, p, spec.Type+"://169.254.169.254:80", spec)
		assert.Equal(t, "DOWN", res.Status)
		assert.Contains(t, res.Error, "link-local", spec.Type)
	}
	res = probe(t, p, "dns://169.254.169.253", monitoring.ProbeSpec{Type: "dns", DNSName: "example.com"})
	assert.Equal(t, "DOWN", res.Status)
	assert.Contains(t, res.Error, "link-local")
}
