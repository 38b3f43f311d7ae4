package main

import (
	"testing"
	"time"
)

func TestCoverageExpects(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	sp := func(a, b float64) span { return span{from: at(a), to: at(b)} }
	scenarios := []struct {
		name    string
		working map[string][]span
		faults  []span
		from    float64
		to      float64
		want    bool
	}{
		{"worked through the slot", map[string][]span{"a": {sp(-10, 20)}}, nil, 0, 5, true},
		{"nobody worked", map[string][]span{}, nil, 0, 5, false},
		{"started late but long enough", map[string][]span{"a": {sp(2, 20)}}, nil, 0, 5, true},
		{"started too late", map[string][]span{"a": {sp(3.5, 20)}}, nil, 0, 5, false},
		{"killed early in the slot", map[string][]span{"a": {sp(-10, 1)}}, nil, 0, 5, false},
		{"two short stretches do not add up", map[string][]span{"a": {sp(-10, 1.5)}, "b": {sp(2, 20)}}, nil, 0, 4, false},
		{"a second replica covers", map[string][]span{"a": {sp(-10, 1)}, "b": {sp(-3, 20)}}, nil, 0, 5, true},
		{"database fault over the whole slot", map[string][]span{"a": {sp(-10, 20)}}, []span{sp(-1, 6)}, 0, 5, false},
		{"database fault leaves a long enough stretch", map[string][]span{"a": {sp(-10, 20)}}, []span{sp(-5, 0.5)}, 0, 5, true},
		{"database fault in the middle of a 4s slot", map[string][]span{"a": {sp(-10, 20)}}, []span{sp(1.5, 2)}, 0, 4, false},
		{"open fault", map[string][]span{"a": {sp(-10, 20)}}, []span{{from: at(1)}}, 0, 5, false},
		{"open working span is ignored", map[string][]span{"a": {{from: at(-10)}}}, nil, 0, 5, false},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			c := coverage{working: sc.working, dbFault: sc.faults, margin: 500 * time.Millisecond, need: 2 * time.Second}
			if got := c.expects(at(sc.from), at(sc.to)); got != sc.want {
				t.Fatalf("expects(%v, %v) = %t, want %t", sc.from, sc.to, got, sc.want)
			}
		})
	}
}

func TestContainsToken(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		s, k string
		want bool
	}{
		{"job-12-UP", "job-12-UP", true},
		{`{"event_key":"job-12-UP"}`, "job-12-UP", true},
		{"job-123-UP", "job-12-UP", false},
		{"xjob-12-UP", "job-12-UP", false},
		{"job-12-UP:ops", "job-12-UP", true},
		{"job-12-UPx job-12-UP", "job-12-UP", true},
	}
	for _, sc := range scenarios {
		if got := containsToken(sc.s, sc.k); got != sc.want {
			t.Errorf("containsToken(%q, %q) = %t, want %t", sc.s, sc.k, got, sc.want)
		}
	}
}
