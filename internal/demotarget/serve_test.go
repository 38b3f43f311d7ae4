package demotarget

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// addrHandler is a slog handler that passes on the "addr" of the first
// record that carries one, so the test learns the port Serve picked.
type addrHandler struct{ addrs chan string }

func (h addrHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h addrHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h addrHandler) WithGroup(string) slog.Handler            { return h }
func (h addrHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "addr" {
			select {
			case h.addrs <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}

func TestServeAnswersThenShutsDown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addrs := make(chan string, 1)
	served := make(chan error, 1)
	// slowArrived is closed once the /slow request below is being served:
	// the shutdown must find it in flight.
	slowArrived := make(chan struct{})
	target := Handler()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(slowArrived)
		}
		target.ServeHTTP(w, r)
	})
	go func() { served <- serve(ctx, "127.0.0.1:0", slog.New(addrHandler{addrs}), handler) }()

	var addr string
	select {
	case addr = <-addrs:
	case err := <-served:
		t.Fatalf("Serve returned before listening: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not log its address within 5s")
	}

	resp, err := http.Get("http://" + addr + "/ok")
	if err != nil {
		t.Fatalf("GET /ok: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /ok: code %d, want 200", resp.StatusCode)
	}

	// A long /slow in flight must not hold the shutdown for its full minute.
	slow := make(chan int, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow?ms=60000")
		if err != nil {
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	select {
	case <-slowArrived:
	case code := <-slow:
		t.Fatalf("GET /slow ended (code %d) before it reached the handler", code)
	case <-time.After(5 * time.Second):
		t.Fatal("GET /slow did not reach the handler within 5s")
	}

	start := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve after cancel: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of cancel")
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("shutdown took %s with a /slow in flight, want it cut short", elapsed)
	}
	if code := <-slow; code != http.StatusServiceUnavailable {
		t.Errorf("in-flight /slow during shutdown: code %d, want 503", code)
	}
	if _, err := http.Get("http://" + addr + "/ok"); err == nil {
		t.Error("GET /ok after shutdown succeeded, want a refused connection")
	}
}

func TestServeReportsBadAddress(t *testing.T) {
	t.Parallel()
	err := Serve(t.Context(), "127.0.0.1:notaport", slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("Serve on a bad address returned nil")
	}
}
