package demotarget

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// FuzzCheckRouteParams feeds /slow and /flap arbitrary query strings: the
// target never panics, always answers JSON with a code its index promises,
// never waits longer than its cap, and names the parameter it rejects. Plain
// `go test` runs only the seeds; fuzz locally with
//
//	go test -run '^$' -fuzz FuzzCheckRouteParams -fuzztime 30s ./internal/demotarget
func FuzzCheckRouteParams(f *testing.F) {
	for _, seed := range []struct {
		slow  bool
		query string
	}{
		{true, ""}, {true, "ms=1500"}, {true, "ms=0"}, {true, "ms=-1"}, {true, "ms=1.5"}, {true, "ms=99999999999999999999"},
		{true, "ms=%zz"}, {true, "ms=1&ms=2"}, {true, "ms=+5"}, {true, "ms=0x10"}, {true, "ms=9223372036854775807"},
		{false, ""}, {false, "period=7"}, {false, "period=0"}, {false, "period=86400"}, {false, "period=86401"},
		{false, "period=9223372036854775807"}, {false, "period=-3"}, {false, "period=\xff"}, {false, ";period=3"},
	} {
		f.Add(seed.slow, seed.query, int64(1500))
	}
	f.Fuzz(func(t *testing.T, slow bool, rawQuery string, clockMS int64) {
		tt := &testTarget{now: epoch.Add(time.Duration(clockMS%(48*3600*1000)) * time.Millisecond)}
		route := "/flap"
		if slow {
			route = "/slow"
		}
		req := httptest.NewRequest(http.MethodGet, route, nil)
		req.URL.RawQuery = rawQuery
		rec := httptest.NewRecorder()
		tt.handler().ServeHTTP(rec, req)

		var body response
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("GET %s?%q: body %q is not JSON: %v", route, rawQuery, rec.Body, err)
		}
		if body.Route != route {
			t.Fatalf("GET %s?%q: route %q", route, rawQuery, body.Route)
		}
		switch {
		case rec.Code == http.StatusBadRequest:
			param := "period="
			if slow {
				param = "ms="
			}
			if !strings.Contains(body.Error, param) || len(tt.waited) != 0 {
				t.Fatalf("GET %s?%q: 400 must name %s and not wait; error %q, waited %v", route, rawQuery, param, body.Error, tt.waited)
			}
		case slow && rec.Code == http.StatusOK:
			if len(tt.waited) != 1 || tt.waited[0] < 0 || tt.waited[0] > maxSlow {
				t.Fatalf("GET /slow?%q: waited %v, want one wait within 0..%s", rawQuery, tt.waited, maxSlow)
			}
			if body.SleptMS == nil || *body.SleptMS != tt.waited[0].Milliseconds() || body.Status != "UP" {
				t.Fatalf("GET /slow?%q: body %+v does not match the wait %v", rawQuery, body, tt.waited)
			}
		case !slow && (rec.Code == http.StatusOK || rec.Code == http.StatusServiceUnavailable):
			if body.PeriodSeconds < 1 || time.Duration(body.PeriodSeconds)*time.Second > maxFlapPeriod {
				t.Fatalf("GET /flap?%q: period %d out of range", rawQuery, body.PeriodSeconds)
			}
			next, err := time.Parse(time.RFC3339, body.NextChangeAt)
			if err != nil || !next.After(tt.now.Add(-time.Second)) || next.Sub(tt.now) > time.Duration(body.PeriodSeconds)*time.Second {
				t.Fatalf("GET /flap?%q: next_change_at %q not within one period after %s", rawQuery, body.NextChangeAt, tt.now)
			}
			if want := map[int]string{200: "UP", 503: "DOWN"}[rec.Code]; body.Status != want {
				t.Fatalf("GET /flap?%q: code %d with status %q", rawQuery, rec.Code, body.Status)
			}
		default:
			t.Fatalf("GET %s?%q: unexpected code %d; body %s", route, rawQuery, rec.Code, rec.Body)
		}
	})
}
