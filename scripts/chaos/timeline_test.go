package main

import (
	"math/rand/v2"
	"slices"
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

func TestTimelineGraceAfterNetworkFault(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1_800_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tl := newTimeline()
	tl.up("a", at(0))
	tl.down("a", at(10)) // a network fault begins
	i := tl.netFaultFrom("a", at(10))
	tl.netFaultTo("a", i, at(14))
	tl.up("a", at(17))   // works again after the grace
	tl.down("a", at(16)) // killed before the grace ended: the pending span goes
	tl.up("a", at(20))
	tl.closeAll(at(30))
	c := tl.coverage(500*time.Millisecond, 2*time.Second)
	want := []span{{at(0), at(10)}, {at(20), at(30)}}
	if got := c.working["a"]; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("working spans = %v, want %v", got, want)
	}
	if c.expects(at(14), at(18)) {
		t.Error("a slot inside the fault and its grace is expected")
	}
	if n := c.faultsDuring("a", at(0), at(30)); n != 1 {
		t.Errorf("faultsDuring(a) = %d, want 1", n)
	}
	if n := c.faultsDuring("b", at(0), at(30)); n != 0 {
		t.Errorf("faultsDuring(b) = %d: a's network fault is not b's", n)
	}
}

func TestClusterPickerOneOutageInEveryBlock(t *testing.T) {
	t.Parallel()
	seq := func(seed uint64) []string {
		rng := rand.New(rand.NewPCG(seed, 100))
		var p clusterPicker
		var out []string
		for range 10 * outageEvery {
			out = append(out, p.next(rng, clusterKinds))
		}
		return out
	}
	a := seq(7)
	for b := 0; b < len(a); b += outageEvery {
		outages := 0
		for _, k := range a[b : b+outageEvery] {
			if k == kindOutage {
				outages++
			}
		}
		if outages != 1 {
			t.Fatalf("block %d has %d outages: %v", b/outageEvery, outages, a)
		}
	}
	if b := seq(7); !slices.Equal(a, b) {
		t.Errorf("same seed, different sequence:\n%v\n%v", a, b)
	}
	var p clusterPicker
	if k := p.next(rand.New(rand.NewPCG(1, 1)), []string{kindOutage}); k != kindOutage {
		t.Errorf("only pg-outage enabled: picked %s", k)
	}
}

func TestTooFewFaults(t *testing.T) {
	t.Parallel()
	f := &faultLog{}
	for _, k := range allKinds() {
		n := 30
		switch k {
		case kindCut:
			n = 29
		case kindOutage:
			n = 12
		}
		for range n {
			f.add(k, time.Second)
		}
	}
	o := options{Duration: 10 * time.Minute, MinFaults: 30, FaultKinds: "all"}
	if got := tooFewFaults(o, f); !slices.Equal(got, []string{"net-cut 29"}) {
		t.Errorf("10m run: %v, want [net-cut 29]", got)
	}
	o.Duration = 2 * time.Minute
	if got := tooFewFaults(o, f); got != nil {
		t.Errorf("2m run: %v, want no bar", got)
	}
	o.Duration, o.FaultKinds = 10*time.Minute, "kill-9,pg-outage"
	if got := tooFewFaults(o, f); got != nil {
		t.Errorf("only kill-9 and pg-outage: %v", got)
	}
	o.FaultKinds, o.MinFaults = "all", 0
	if got := tooFewFaults(o, f); got != nil {
		t.Errorf("-min-faults 0: %v", got)
	}
}
