package demotarget

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// epoch is a Unix time divisible by every period used below, so window
// arithmetic in the tests is easy to follow: it starts an UP window.
var epoch = time.Unix(1_800_000_000-1_800_000_000%7200, 0)

// testTarget returns a target on a settable clock whose waits return at once
// and are recorded.
type testTarget struct {
	now    time.Time
	waited []time.Duration
}

func (tt *testTarget) handler() http.Handler {
	return target{
		now: func() time.Time { return tt.now },
		wait: func(ctx context.Context, d time.Duration) error {
			tt.waited = append(tt.waited, d)
			return nil
		},
	}.handler()
}

func get(t *testing.T, h http.Handler, path string) (*httptest.ResponseRecorder, response) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var body response
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("GET %s: body %q is not JSON: %v", path, rec.Body.String(), err)
		}
	}
	return rec, body
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		path       string
		wantCode   int
		wantStatus string
		wantRoute  string
	}{
		{"/ok", 200, "UP", "/ok"},
		{"/fail", 500, "DOWN", "/fail"},
		{"/slow?ms=10", 200, "UP", "/slow"},
		{"/flap", 200, "UP", "/flap"},
		{"/nope", 404, "", "/nope"},
	}
	for _, sc := range scenarios {
		t.Run(sc.path, func(t *testing.T) {
			t.Parallel()
			tt := &testTarget{now: epoch.Add(1500 * time.Millisecond)}
			rec, body := get(t, tt.handler(), sc.path)
			if rec.Code != sc.wantCode {
				t.Fatalf("GET %s: code %d, want %d; body %s", sc.path, rec.Code, sc.wantCode, rec.Body)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Fatalf("GET %s: Content-Type %q, want application/json", sc.path, got)
			}
			if body.Status != sc.wantStatus || body.Route != sc.wantRoute {
				t.Fatalf("GET %s: status %q route %q, want %q %q", sc.path, body.Status, body.Route, sc.wantStatus, sc.wantRoute)
			}
			if want := tt.now.UTC().Format(time.RFC3339Nano); body.Time != want {
				t.Fatalf("GET %s: time %q, want the clock's %s", sc.path, body.Time, want)
			}
		})
	}
}

func TestIndexListsRoutes(t *testing.T) {
	t.Parallel()
	tt := &testTarget{now: epoch}
	rec, _ := get(t, tt.handler(), "/")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /: code %d, want 200", rec.Code)
	}
	if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/plain") {
		t.Fatalf("GET /: Content-Type %q, want text/plain", got)
	}
	for _, want := range []string{"/ok", "/fail", "/slow", "/flap", "route: /", epoch.UTC().Format(time.RFC3339Nano)} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET /: index lacks %q:\n%s", want, rec.Body)
		}
	}
}

func TestOtherMethodsAreRejected(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/ok", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /ok: code %d, want 405", rec.Code)
	}
}

func TestSlowWaitsForMS(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		query    string
		wantCode int
		wantWait []time.Duration
	}{
		{"", 200, []time.Duration{2 * time.Second}},
		{"?ms=0", 200, []time.Duration{0}},
		{"?ms=1500", 200, []time.Duration{1500 * time.Millisecond}},
		{"?ms=60000", 200, []time.Duration{time.Minute}},
		{"?ms=999999999", 200, []time.Duration{time.Minute}},
		{"?ms=-1", 400, nil},
		{"?ms=1.5", 400, nil},
		{"?ms=soon", 400, nil},
	}
	for _, sc := range scenarios {
		t.Run(sc.query, func(t *testing.T) {
			t.Parallel()
			tt := &testTarget{now: epoch}
			rec, body := get(t, tt.handler(), "/slow"+sc.query)
			if rec.Code != sc.wantCode {
				t.Fatalf("GET /slow%s: code %d, want %d; body %s", sc.query, rec.Code, sc.wantCode, rec.Body)
			}
			if len(tt.waited) != len(sc.wantWait) || (len(sc.wantWait) == 1 && tt.waited[0] != sc.wantWait[0]) {
				t.Fatalf("GET /slow%s: waited %v, want %v", sc.query, tt.waited, sc.wantWait)
			}
			if sc.wantCode == 200 && (body.SleptMS == nil || *body.SleptMS != sc.wantWait[0].Milliseconds()) {
				t.Fatalf("GET /slow%s: slept_ms %v, want %d", sc.query, body.SleptMS, sc.wantWait[0].Milliseconds())
			}
			if sc.wantCode == 400 && !strings.Contains(body.Error, "ms=") {
				t.Fatalf("GET /slow%s: error %q should name the ms parameter", sc.query, body.Error)
			}
		})
	}
}

func TestSlowReallySleeps(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	start := time.Now()
	resp, err := http.Get(srv.URL + "/slow?ms=150")
	if err != nil {
		t.Fatalf("GET /slow?ms=150: %v", err)
	}
	defer resp.Body.Close()
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Fatalf("GET /slow?ms=150 answered after %s, want at least 150ms", elapsed)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /slow?ms=150: code %d, want 200", resp.StatusCode)
	}
}

func TestSlowStopsWhenRequestIsCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/slow?ms=60000", nil)
	rec := httptest.NewRecorder()

	start := time.Now()
	Handler().ServeHTTP(rec, req)
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Fatalf("GET /slow?ms=60000 with a 50ms context returned after %s", elapsed)
	}
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("cancelled /slow: code %d, want 503 (not an empty 200)", rec.Code)
	}
}

func TestFlapAlternatesByPeriod(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name     string
		query    string
		offset   time.Duration
		wantCode int
		wantNext time.Duration // from epoch
	}{
		{"default period, first minute", "", 0, 200, time.Minute},
		{"default period, end of first minute", "", 59 * time.Second, 200, time.Minute},
		{"default period, second minute", "", 60 * time.Second, 503, 2 * time.Minute},
		{"default period, third minute", "", 120 * time.Second, 200, 3 * time.Minute},
		{"10s period, first window", "?period=10", 9 * time.Second, 200, 10 * time.Second},
		{"10s period, second window", "?period=10", 10 * time.Second, 503, 20 * time.Second},
		{"10s period, third window", "?period=10", 25 * time.Second, 200, 30 * time.Second},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			tt := &testTarget{now: epoch.Add(sc.offset)}
			rec, body := get(t, tt.handler(), "/flap"+sc.query)
			if rec.Code != sc.wantCode {
				t.Fatalf("GET /flap%s at +%s: code %d, want %d", sc.query, sc.offset, rec.Code, sc.wantCode)
			}
			wantStatus := map[int]string{200: "UP", 503: "DOWN"}[sc.wantCode]
			if body.Status != wantStatus {
				t.Fatalf("GET /flap%s at +%s: status %q, want %q", sc.query, sc.offset, body.Status, wantStatus)
			}
			if want := epoch.Add(sc.wantNext).UTC().Format(time.RFC3339); body.NextChangeAt != want {
				t.Fatalf("GET /flap%s at +%s: next_change_at %q, want %q", sc.query, sc.offset, body.NextChangeAt, want)
			}
		})
	}
}

func TestFlapFlipsAsTheClockMoves(t *testing.T) {
	t.Parallel()
	tt := &testTarget{now: epoch}
	h := tt.handler()
	var codes []int
	for range 4 {
		rec, _ := get(t, h, "/flap?period=30")
		codes = append(codes, rec.Code)
		tt.now = tt.now.Add(30 * time.Second)
	}
	want := []int{200, 503, 200, 503}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("GET /flap?period=30 every 30s: codes %v, want %v", codes, want)
		}
	}
}

func TestFlapRejectsBadPeriod(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"0", "-5", "1.5", "often", "86401"} {
		tt := &testTarget{now: epoch}
		rec, body := get(t, tt.handler(), "/flap?period="+q)
		if rec.Code != http.StatusBadRequest || !strings.Contains(body.Error, "period=") {
			t.Errorf("GET /flap?period=%s: code %d error %q, want 400 naming period", q, rec.Code, body.Error)
		}
	}
}
