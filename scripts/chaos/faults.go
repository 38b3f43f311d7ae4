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

// Fault kinds. The first six hit one replica at a time, in that replica's
// lane: the process itself, or the network between it and PostgreSQL (its own
// proxy). The last two hit the whole PostgreSQL cluster, one at a time.
const (
	kindKill        = "kill-9"
	kindStop        = "sigstop"
	kindTerm        = "sigterm"
	kindSlow        = "net-slow"
	kindCut         = "net-cut"
	kindUnreachable = "db-unreachable"
	kindRestart     = "pg-restart"
	kindOutage      = "pg-outage"
)

var (
	replicaKinds = []string{kindKill, kindStop, kindTerm, kindSlow, kindCut, kindUnreachable}
	clusterKinds = []string{kindRestart, kindOutage}
)

func allKinds() []string { return append(slices.Clone(replicaKinds), clusterKinds...) }

func allKindNames() string { return strings.Join(allKinds(), ",") }

func parseKinds(s string) (map[string]bool, error) {
	all := allKinds()
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

// injectFaults runs one lane per replica and one for the whole cluster until
// ctx ends; every lane undoes its current fault before returning.
func (h *harness) injectFaults(ctx context.Context) {
	kinds, _ := parseKinds(h.o.FaultKinds)
	var rk, ck []string
	for _, k := range replicaKinds {
		if kinds[k] {
			rk = append(rk, k)
		}
	}
	for _, k := range clusterKinds {
		if kinds[k] {
			ck = append(ck, k)
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
	if len(ck) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.databaseLane(ctx, rand.New(rand.NewPCG(h.o.Seed, 100)), ck)
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

// Pauses between two faults of one lane (scaled by -pause). A replica lane
// spends about 6 s per fault on average (a db-unreachable lasts -outage), so
// with 1-3 s pauses three lanes inject about 35 of each of their six kinds in
// 10 minutes. The cluster lane pauses longer: PostgreSQL's recovery and the
// replicas' reconnection (dbRecoveryGrace) follow every cluster fault.
const (
	replicaPauseMin = 1 * time.Second
	replicaPauseMax = 3 * time.Second
	clusterPauseMin = 3 * time.Second
	clusterPauseMax = 8 * time.Second
	// outageEvery: one cluster fault in this many is a pg-outage (at a
	// random place in each block), the rest are pg-restarts. A pg-outage
	// takes -outage (20 s) and a pg-restart well under a second (plus its
	// pause), so 1 in 4 leaves time for about 40 restarts in 10 minutes.
	outageEvery = 4
)

func (h *harness) replicaLane(ctx context.Context, rng *rand.Rand, r *replica, kinds []string) {
	for pause(ctx, h.scaled(uniform(rng, replicaPauseMin, replicaPauseMax))) {
		kind := h.faults.pick(rng, kinds)
		began := time.Now()
		lasted := time.Duration(0)
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
		case kindSlow:
			d := uniform(rng, 50*time.Millisecond, 250*time.Millisecond)
			lasted = h.networkFault(ctx, r, uniform(rng, 3*time.Second, 8*time.Second), func(p *proxy) { p.setLatency(d) })
		case kindCut:
			refuse := uniform(rng, 0, 3*time.Second)
			lasted = h.networkFault(ctx, r, refuse, func(p *proxy) { p.cut(refuse) })
		case kindUnreachable:
			lasted = h.databaseUnreachable(ctx, r)
		}
		if lasted == 0 {
			lasted = time.Since(began)
		}
		h.faults.add(kind, lasted)
		h.record("%-14s %s from %s (%.1fs)", kind, r.name, began.Format("15:04:05.000"), lasted.Seconds())
	}
}

// networkFault disturbs the replica's connections to PostgreSQL for d (apply
// sets its proxy up; the proxy heals afterwards). The replica does not count
// as working from the start of the fault until dbRecoveryGrace after its end.
func (h *harness) networkFault(ctx context.Context, r *replica, d time.Duration, apply func(*proxy)) time.Duration {
	i := r.netFaultBegin()
	began := time.Now()
	apply(r.proxy)
	pause(ctx, d)
	r.proxy.heal()
	r.netFaultEnd(i)
	return time.Since(began)
}

// databaseUnreachable cuts one replica off PostgreSQL for the outage length:
// its proxy drops every connection and refuses new ones, which from the
// replica's side is a database that is not there. Halfway through the
// replica must answer /healthz 200 and /readyz 503; afterwards, if it was
// working before, it must be ready and store results again within
// resumeWithin, without a restart. It returns how long the replica was cut off.
func (h *harness) databaseUnreachable(ctx context.Context, r *replica) time.Duration {
	inc, _ := r.running()
	wasWorking := r.hasStarted()
	i := r.netFaultBegin()
	began := time.Now()
	m, _ := r.mark()
	r.proxy.cut(h.o.Outage)
	if pause(ctx, h.o.Outage/2) {
		hz, rz := r.getAnswer("/healthz"), r.getAnswer("/readyz")
		if now, still := r.running(); still && now == inc {
			h.survival.record("/healthz 200 while cut off", hz == 200, "%s: /healthz answered %d", r.name, hz)
			h.survival.record("/readyz 503 while cut off", rz == 503, "%s: /readyz answered %d", r.name, rz)
		}
	}
	pause(ctx, time.Until(began.Add(h.o.Outage)))
	r.proxy.heal()
	back := time.Now()
	r.netFaultEnd(i)
	if wasWorking {
		h.checkResumed(r, m, back)
	}
	return back.Sub(began)
}

// databaseLane injects whole-cluster faults, one at a time: mostly
// pg-restarts, and a pg-outage once in every outageEvery faults (at a place
// drawn from the seed), so both kinds' sequence is fixed by the seed.
func (h *harness) databaseLane(ctx context.Context, rng *rand.Rand, kinds []string) {
	var pick clusterPicker
	for pause(ctx, h.scaled(uniform(rng, clusterPauseMin, clusterPauseMax))) {
		kind := pick.next(rng, kinds)
		began := time.Now()
		var err error
		switch kind {
		case kindRestart:
			err = h.restartDatabase(ctx)
		case kindOutage:
			err = h.databaseOutage(ctx)
		}
		if err != nil {
			// The database could not be brought back: nothing after this is meaningful.
			h.logf("%s: %v", kind, err)
			h.survival.record("database fault undone", false, "%s: %v", kind, err)
			return
		}
		h.faults.add(kind, time.Since(began))
		h.record("%-14s database from %s (%.1fs)", kind, began.Format("15:04:05.000"), time.Since(began).Seconds())
	}
}

// clusterPicker chooses the cluster lane's next kind: with both kinds
// enabled, one pg-outage at a random place in every block of outageEvery
// faults and pg-restarts otherwise.
type clusterPicker struct{ n, outageAt int }

func (p *clusterPicker) next(rng *rand.Rand, kinds []string) string {
	if len(kinds) == 1 {
		return kinds[0]
	}
	if p.n%outageEvery == 0 {
		p.outageAt = rng.IntN(outageEvery)
	}
	kind := kindRestart
	if p.n%outageEvery == p.outageAt {
		kind = kindOutage
	}
	p.n++
	return kind
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

// clusterDown marks PostgreSQL itself as away; clusterUp as back at at.
func (h *harness) clusterDown() {
	h.clusterMu.Lock()
	h.clusterAway = true
	h.clusterMu.Unlock()
}

func (h *harness) clusterUp(at time.Time) {
	h.clusterMu.Lock()
	h.clusterAway, h.clusterBack = false, at
	h.clusterMu.Unlock()
}

// clusterState reports whether PostgreSQL is away now, and when it last came back.
func (h *harness) clusterState() (away bool, back time.Time) {
	h.clusterMu.Lock()
	defer h.clusterMu.Unlock()
	return h.clusterAway, h.clusterBack
}

// restartDatabase crashes PostgreSQL (immediate stop: no checkpoint,
// recovery at start) and starts it at once.
func (h *harness) restartDatabase(ctx context.Context) error {
	h.dbMu.Lock()
	defer h.dbMu.Unlock()
	i := h.tl.dbFaultFrom(time.Now())
	h.clusterDown()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
	err := localpg.StopImmediate(stopCtx, h.pgDir)
	cancel()
	if err != nil {
		return err
	}
	if err := h.ensureDatabase(); err != nil {
		return err
	}
	back := time.Now()
	h.clusterUp(back)
	h.tl.dbFaultTo(i, back.Add(dbRecoveryGrace))
	return nil
}

// databaseOutage stops PostgreSQL for the outage length. Halfway through it
// checks every running replica: alive on /healthz, not ready on /readyz.
// When the database is back, each replica that was working and ran through
// the whole outage must become ready and store results again without being
// restarted.
func (h *harness) databaseOutage(ctx context.Context) error {
	h.dbMu.Lock()
	defer h.dbMu.Unlock()
	i := h.tl.dbFaultFrom(time.Now())
	h.clusterDown()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 90*time.Second)
	err := localpg.Stop(stopCtx, h.pgDir)
	cancel()
	if err != nil {
		return err
	}
	pause(ctx, h.o.Outage/2)
	type seen struct {
		r *replica
		m processMark
	}
	var through []seen
	for _, r := range h.replicas {
		inc, ok := r.running()
		if !ok {
			continue
		}
		m, calm := r.mark()
		working := r.hasStarted()
		// A replica its lane has just restarted may not listen yet: give it
		// a few seconds to answer before judging what it says.
		hz, rz := r.getAnswer("/healthz"), r.getAnswer("/readyz")
		if now, still := r.running(); !still || now != inc {
			continue // frozen, killed or restarted by its own lane meanwhile
		}
		h.survival.record("/healthz 200 during outage", hz == 200, "%s: /healthz answered %d", r.name, hz)
		h.survival.record("/readyz 503 during outage", rz == 503, "%s: /readyz answered %d", r.name, rz)
		if calm && working {
			through = append(through, seen{r, m})
		}
	}
	pause(ctx, h.o.Outage-h.o.Outage/2)
	if err := h.ensureDatabase(); err != nil {
		return err
	}
	back := time.Now()
	h.clusterUp(back)
	h.tl.dbFaultTo(i, back.Add(dbRecoveryGrace))
	for _, s := range through {
		go h.checkResumed(s.r, s.m, back)
	}
	return nil
}

// resumeWithin is how soon after the database's return a replica that lived
// through the outage must be ready and storing results again.
const resumeWithin = 10 * time.Second

// checkResumed waits for a replica that lived through an outage to answer
// /readyz 200 and store a result again, in the same process, within
// resumeWithin of the database's return. The check cannot say anything once
// the replica is killed, frozen, restarted or has another network fault (its
// mark changes); if the whole cluster goes away again meanwhile, the time
// counts from its next return.
func (h *harness) checkResumed(r *replica, m processMark, back time.Time) {
	const name = "resumes after outage without restart"
	deadline := back.Add(resumeWithin)
	giveUp := time.Now().Add(3 * time.Minute)
	ready := false
	for time.Now().Before(giveUp) {
		if now, calm := r.mark(); !calm || now != m {
			return
		}
		away, since := h.clusterState()
		switch {
		case away:
			ready = false
			time.Sleep(250 * time.Millisecond)
			continue
		case since.After(back):
			back, deadline, ready = since, since.Add(resumeWithin), false
		}
		if time.Now().After(deadline) {
			break
		}
		if !ready && r.get("/readyz", 2*time.Second) == 200 {
			ready = true
		}
		if ready && h.resultSince(r.name, back) {
			h.survival.record(name, true, "")
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	if away, _ := h.clusterState(); away {
		return // PostgreSQL kept going away: nothing to judge
	}
	if now, calm := r.mark(); calm && now == m {
		h.survival.record(name, false,
			"%s: no /readyz 200 and new result within %s of the database's return at %s (ready=%t)",
			r.name, resumeWithin, back.Format("15:04:05.000"), ready)
	}
}
