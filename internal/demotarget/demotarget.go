// Package demotarget is a small local HTTP target to try Vigil against: one
// route that is always up, one always down, one slow and one that flaps.
// It is what `server demo-target` runs and what compose.yaml points the
// replicas at.
package demotarget

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	defaultSlow = 2000 * time.Millisecond
	maxSlow     = 60000 * time.Millisecond

	defaultFlapPeriod = 60 * time.Second
	maxFlapPeriod     = 24 * time.Hour
)

// routes is the index page's content, in the order it lists them.
var routes = []struct{ path, about string }{
	{"/ok", "200 {\"status\":\"UP\"}"},
	{"/fail", "500 {\"status\":\"DOWN\"}"},
	{"/slow?ms=N", "waits N ms (default 2000, at most 60000), then 200 UP"},
	{"/flap?period=N", "UP for N seconds (default 60), then 503 DOWN for N seconds, aligned to the wall clock"},
}

// target holds the clock and the wait so tests can drive /flap and /slow
// without sleeping.
type target struct {
	now  func() time.Time
	wait func(ctx context.Context, d time.Duration) error
}

// Handler returns the demo target's routes:
//
//	/ok    200 {"status":"UP"}
//	/fail  500 {"status":"DOWN"}
//	/slow  sleeps ?ms=N (default 2000, capped at 60000, honouring the request context) then 200
//	/flap  UP and DOWN in turns by wall-clock windows: ?period=N seconds (default 60):
//	       UP for one period, DOWN (503) for the next
//	/      a small plain-text index listing the routes
//
// Every response says which route and the time; the check routes answer in JSON.
func Handler() http.Handler {
	return target{now: time.Now, wait: sleep}.handler()
}

func (t target) handler() http.Handler {
	mux := http.NewServeMux()
	// GET patterns also answer HEAD, which some probes use.
	mux.HandleFunc("GET /ok", t.ok)
	mux.HandleFunc("GET /fail", t.fail)
	mux.HandleFunc("GET /slow", t.slow)
	mux.HandleFunc("GET /flap", t.flap)
	mux.HandleFunc("GET /{$}", t.index)
	mux.HandleFunc("GET /", t.notFound)
	return mux
}

// response is the JSON body of every check route.
type response struct {
	Route  string `json:"route"`
	Status string `json:"status,omitempty"`
	Time   string `json:"time"`
	Error  string `json:"error,omitempty"`

	SleptMS       *int64 `json:"slept_ms,omitempty"`
	PeriodSeconds int64  `json:"period_seconds,omitempty"`
	NextChangeAt  string `json:"next_change_at,omitempty"`
}

func (t target) ok(w http.ResponseWriter, r *http.Request) {
	t.write(w, http.StatusOK, response{Route: "/ok", Status: "UP"})
}

func (t target) fail(w http.ResponseWriter, r *http.Request) {
	t.write(w, http.StatusInternalServerError, response{Route: "/fail", Status: "DOWN"})
}

func (t target) slow(w http.ResponseWriter, r *http.Request) {
	d := defaultSlow
	if v := r.URL.Query().Get("ms"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 0 {
			t.write(w, http.StatusBadRequest, response{Route: "/slow",
				Error: fmt.Sprintf("ms=%q: want a whole number of milliseconds, 0 to %d", v, maxSlow.Milliseconds())})
			return
		}
		// Compared before converting: a huge ms would overflow the Duration.
		d = maxSlow
		if ms < maxSlow.Milliseconds() {
			d = time.Duration(ms) * time.Millisecond
		}
	}
	start := t.now()
	if err := t.wait(r.Context(), d); err != nil {
		// The client gave up or the server is shutting down: say so rather than
		// let the server send an empty 200 that looks like success.
		slept := t.now().Sub(start).Milliseconds()
		t.write(w, http.StatusServiceUnavailable, response{Route: "/slow", Status: "DOWN",
			SleptMS: &slept, Error: fmt.Sprintf("stopped after %d of %d ms: %v", slept, d.Milliseconds(), err)})
		return
	}
	slept := d.Milliseconds()
	t.write(w, http.StatusOK, response{Route: "/slow", Status: "UP", SleptMS: &slept})
}

func (t target) flap(w http.ResponseWriter, r *http.Request) {
	period := defaultFlapPeriod
	if v := r.URL.Query().Get("period"); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		// Compared in seconds: a huge period would overflow the Duration
		// and could even come out as zero, a division by zero below.
		if err != nil || s < 1 || s > int64(maxFlapPeriod/time.Second) {
			t.write(w, http.StatusBadRequest, response{Route: "/flap",
				Error: fmt.Sprintf("period=%q: want a whole number of seconds, 1 to %d", v, int64(maxFlapPeriod.Seconds()))})
			return
		}
		period = time.Duration(s) * time.Second
	}
	// Windows are counted from the Unix epoch so that, with the default period,
	// every replica and the target agree: even minutes UP, odd minutes DOWN.
	secs := int64(period.Seconds())
	now := t.now()
	window := now.Unix() / secs
	next := time.Unix((window+1)*secs, 0)
	resp := response{Route: "/flap", PeriodSeconds: secs, NextChangeAt: next.UTC().Format(time.RFC3339)}
	if window%2 == 0 {
		resp.Status = "UP"
		t.write(w, http.StatusOK, resp)
		return
	}
	resp.Status = "DOWN"
	t.write(w, http.StatusServiceUnavailable, resp)
}

func (t target) index(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	fmt.Fprintf(&b, "Vigil demo target\nroute: /\ntime: %s\n\n", t.now().UTC().Format(time.RFC3339Nano))
	for _, rt := range routes {
		fmt.Fprintf(&b, "  %-16s %s\n", rt.path, rt.about)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(b.String()))
}

func (t target) notFound(w http.ResponseWriter, r *http.Request) {
	t.write(w, http.StatusNotFound, response{Route: r.URL.Path,
		Error: "no such route; try /ok, /fail, /slow, /flap or / for the list"})
}

func (t target) write(w http.ResponseWriter, code int, resp response) {
	resp.Time = t.now().UTC().Format(time.RFC3339Nano)
	body, err := json.Marshal(resp)
	if err != nil {
		// response holds only strings and integers; this cannot happen.
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}

// sleep waits for d or until ctx is done, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
