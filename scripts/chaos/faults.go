package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/internal/localpg"
)

// Fault kinds. The first three hit one replica; the others the database or
// the network in front of it, one at a time.
const (
	kindKill    = "kill-9"
	kindStop    = "sigstop"
	kindTerm    = "sigterm"
	kindRestart = "pg-restart"
	kindOutage  = "pg-outage"
	kindSlow    = "net-slow"
	kindCut     = "net-cut"
)

var (
	replicaKinds = []string{kindKill, kindStop, kindTerm}
	dbKinds      = []string{kindRestart, kindOutage, kindSlow, kindCut}
)

func allKindNames() string { return strings.Join(append(slices.Clone(replicaKinds), dbKinds...), ",") }

func parseKinds(s string) (map[string]bool, error) {
	all := append(slices.Clone(replicaKinds), dbKinds...)
	out := map[string]bool{}
	if s == "all" || s == "" {
		for _, k := range all {
			out[k] = true
		}
		return out, nil
	}
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(all, k) {
			return nil, fmt.Errorf("-faults: unknown kind %q; known: %s", k, allKindNames())
		}
		out[k] = true
	}
	return out, nil
}

// dbRecoveryGrace is how long after the database side is healthy again the
// audit still treats slots as disturbed: pools notice dead connections and
// reconnect on their next use.
const dbRecoveryGrace = 3 * time.Second

// faultLog counts what was injected.
type faultLog struct {
	mu     sync.Mutex
	counts map[string]int
	total  map[string]time.Duration // how long the fault lasted, summed
}

func (f *faultLog) add(kind string, lasted time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counts == nil {
		f.counts, f.total = map[string]int{}, map[string]time.Duration{}
	}
	f.counts[kind]++
	f.total[kind] += lasted
}

func (f *faultLog) count(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[kind]
}

// pick chooses, at random, one of the enabled kinds injected least so far,
// so that every kind gets its share however long the run.
func (f *faultLog) pick(rng *rand.Rand, kinds []string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	least := -1
	var candidates []string
	for _, k := range kinds {
		switch n := f.counts[k]; {
		case least < 0 || n < least:
			least, candidates = n, []string{k}
		case n == least:
			candidates = append(candidates, k)
		}
	}
	return candidates[rng.IntN(len(candidates))]
}

// survivalLog records the checks made on live replicas while the database
// was away and after it came back.
type survivalLog struct {
	mu     sync.Mutex
	checks map[string]*checkCount
}

type checkCount struct {
	ok, failed int
	examples   []string
}

func (s *survivalLog) record(name string, ok bool, format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.checks == nil {
		s.checks = map[string]*checkCount{}
	}
	c := s.checks[name]
	if c == nil {
		c = &checkCount{}
		s.checks[name] = c
	}
	if ok {
		c.ok++
		return
	}
	c.failed++
	if len(c.examples) < 3 {
		c.examples = append(c.examples, fmt.Sprintf(format, args...))
	}
}

// injectFaults runs one lane per replica and one for the database side until
// ctx ends; every lane undoes its current fault before returning.
func (h *harness) injectFaults(ctx context.Context) {
	kinds, _ := parseKinds(h.o.FaultKinds)
	var rk, dk []string
	for _, k := range replicaKinds {
		if kinds[k] {
			rk = append(rk, k)
		}
	}
	for _, k := range dbKinds {
		if kinds[k] {
			dk = append(dk, k)
		}
	}
	var wg sync.WaitGroup
	if len(rk) > 0 {
		for i, r := range h.replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.replicaLane(ctx, rand.New(rand.NewPCG(h.o.Seed, uint64(i+1))), r, rk)
			}()
		}
	}
	if len(dk) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.databaseLane(ctx, rand.New(rand.NewPCG(h.o.Seed, 100)), dk)
		}()
	}
	wg.Wait()
}

func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// pause waits d or until ctx ends; it reports whether the full time passed.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (h *harness) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * h.o.PauseFactor)
}

func (h *harness) replicaLane(ctx context.Context, rng *rand.Rand, r *replica, kinds []string) {
	for pause(ctx, h.scaled(uniform(rng, 2*time.Second, 6*time.Second))) {
		kind := h.faults.pick(rng, kinds)
		began := time.Now()
		switch kind {
		case kindKill:
			if err := r.killHard(); err != nil {
				h.logf("%s: kill: %v", r.name, err)
				continue
			}
			pause(ctx, uniform(rng, 500*time.Millisecond, 3*time.Second))
			if err := r.start(); err != nil {
				h.logf("%s: restart: %v", r.name, err)
			}
		case kindStop:
			if err := r.freeze(); err != nil {
				h.logf("%s: freeze: %v", r.name, err)
				continue
			}
			pause(ctx, h.o.Lease+uniform(rng, time.Second, 3*time.Second))
			if err := r.thaw(); err != nil {
				h.logf("%s: thaw: %v", r.name, err)
			}
		case kindTerm:
			err := r.terminate(20 * time.Second)
			h.survival.record("graceful stop exits 0 in time", err == nil, "%s: %v", r.name, err)
			pause(ctx, uniform(rng, 500*time.Millisecond, 2*time.Second))
			if err := r.start(); err != nil {
				h.logf("%s: restart: %v", r.name, err)
			}
		}
		h.faults.add(kind, time.Since(began))
		h.record("%-10s %s from %s (%.1fs)", kind, r.name, began.Format("15:04:05.000"), time.Since(began).Seconds())
	}
}

func (h *harness) databaseLane(ctx context.Context, rng *rand.Rand, kinds []string) {
	for pause(ctx, h.scaled(uniform(rng, 6*time.Second, 16*time.Second))) {
		kind := h.faults.pick(rng, kinds)
		began := time.Now()
		var err error
		switch kind {
		case kindRestart:
			err = h.restartDatabase(ctx)
		case kindOutage:
			err = h.databaseOutage(ctx)
		case kindSlow:
			d := uniform(rng, 50*time.Millisecond, 250*time.Millisecond)
			i := h.tl.dbFaultFrom(time.Now())
			h.proxy.setLatency(d)
			pause(ctx, uniform(rng, 5*time.Second, 15*time.Second))
			h.proxy.setLatency(0)
			h.tl.dbFaultTo(i, time.Now().Add(dbRecoveryGrace))
		case kindCut:
			refuse := uniform(rng, 0, 3*time.Second)
			i := h.tl.dbFaultFrom(time.Now())
			h.proxy.cut(refuse)
			time.Sleep(refuse)
			h.tl.dbFaultTo(i, time.Now().Add(dbRecoveryGrace))
		}
		if err != nil {
			// The database could not be brought back: nothing after this is meaningful.
			h.logf("%s: %v", kind, err)
			h.survival.record("database fault undone", false, "%s: %v", kind, err)
			return
		}
		h.faults.add(kind, time.Since(began))
		h.record("%-10s database from %s (%.1fs)", kind, began.Format("15:04:05.000"), time.Since(began).Seconds())
	}
}

// ensureDatabase starts PostgreSQL again; it is retried because a start right
// after an immediate stop can find the old postmaster still exiting.
func (h *harness) ensureDatabase() error {
	quiet := slog.New(slog.DiscardHandler)
	var err error
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		_, err = localpg.Ensure(ctx, localpg.Options{DataDir: h.pgDir, Logger: quiet})
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(time.Second)
	}
	return err
}

// restartDatabase crashes PostgreSQL (immediate stop: no checkpoint,
// recovery at start) and starts it at once.
func (h *harness) restartDatabase(ctx context.Context) error {
	h.dbMu.Lock()
	defer h.dbMu.Unlock()
	i := h.tl.dbFaultFrom(time.Now())
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
	err := localpg.StopImmediate(stopCtx, h.pgDir)
	cancel()
	if err != nil {
		return err
	}
	if err := h.ensureDatabase(); err != nil {
		return err
	}
	h.tl.dbFaultTo(i, time.Now().Add(dbRecoveryGrace))
	return nil
}

// databaseOutage stops PostgreSQL for the outage length. Halfway through it
// checks every running replica: alive on /healthz, not ready on /readyz.
// When the database is back, each replica that ran through the whole outage
// must become ready and store results again without being restarted.
func (h *harness) databaseOutage(ctx context.Context) error {
	h.dbMu.Lock()
	defer h.dbMu.Unlock()
	i := h.tl.dbFaultFrom(time.Now())
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
	err := localpg.Stop(stopCtx, h.pgDir)
	cancel()
	if err != nil {
		return err
	}
	pause(ctx, h.o.Outage/2)
	type seen struct {
		r           *replica
		incarnation int
	}
	var through []seen
	for _, r := range h.replicas {
		inc, ok := r.running()
		if !ok {
			continue
		}
		// A replica its lane has just restarted may not listen yet: give it
		// a few seconds to answer before judging what it says.
		hz, rz := r.getAnswer("/healthz"), r.getAnswer("/readyz")
		if now, still := r.running(); !still || now != inc {
			continue // frozen, killed or restarted by its own lane meanwhile
		}
		h.survival.record("/healthz 200 during outage", hz == 200, "%s: /healthz answered %d", r.name, hz)
		h.survival.record("/readyz 503 during outage", rz == 503, "%s: /readyz answered %d", r.name, rz)
		through = append(through, seen{r, inc})
	}
	pause(ctx, h.o.Outage-h.o.Outage/2)
	if err := h.ensureDatabase(); err != nil {
		return err
	}
	back := time.Now()
	h.tl.dbFaultTo(i, back.Add(dbRecoveryGrace))
	for _, s := range through {
		go h.checkResumed(s.r, s.incarnation, back)
	}
	return nil
}

// resumeWithin is how soon after the database's return a replica that lived
// through the outage must be ready and storing results again.
const resumeWithin = 10 * time.Second

// checkResumed waits for a replica that lived through an outage to answer
// /readyz 200 and store a result again, in the same process, within
// resumeWithin of the database's return.
func (h *harness) checkResumed(r *replica, incarnation int, back time.Time) {
	deadline := back.Add(resumeWithin)
	ready := false
	for time.Now().Before(deadline) {
		inc, ok := r.running()
		if inc != incarnation || !ok {
			return // restarted or frozen by its lane: this check cannot say anything
		}
		if !ready && r.get("/readyz", 2*time.Second) == 200 {
			ready = true
		}
		if ready && h.resultSince(r.name, back) {
			h.survival.record("resumes after outage without restart", true, "")
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	if inc, ok := r.running(); inc == incarnation && ok {
		h.survival.record("resumes after outage without restart", false,
			"%s: no /readyz 200 and new result within %s of the database's return (ready=%t)", r.name, resumeWithin, ready)
	}
}
