package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"time"
)

// span is a stretch of time; an open span has a zero to.
type span struct{ from, to time.Time }

func (s span) contains(from, to time.Time) bool {
	return !s.from.After(from) && !s.to.IsZero() && !s.to.Before(to)
}

func (s span) overlaps(from, to time.Time) bool {
	end := s.to
	if end.IsZero() {
		return !s.from.After(to)
	}
	return s.from.Before(to) && end.After(from)
}

// timeline records, on the harness's clock (the same host clock PostgreSQL
// reads), when each replica was working and when the database side was
// disturbed. The audit expects a job and a result for exactly the slots it
// can vouch for with it.
type timeline struct {
	mu       sync.Mutex
	working  map[string][]span // per replica: started (or thawed) until killed, frozen, stopped or cut off
	dbFault  []span            // PostgreSQL down or restarting (whole cluster), plus recovery grace
	netFault map[string][]span // per replica: its connections slowed, cut or refused (without the grace)
	start    time.Time
	cutoff   time.Time
}

func newTimeline() *timeline {
	return &timeline{working: map[string][]span{}, netFault: map[string][]span{}}
}

func (t *timeline) setStart(at time.Time)  { t.mu.Lock(); t.start = at; t.mu.Unlock() }
func (t *timeline) setCutoff(at time.Time) { t.mu.Lock(); t.cutoff = at; t.mu.Unlock() }

// up opens a working span for the replica unless one is open. at may lie
// in the future: after a network fault the replica works again only once the
// recovery grace has passed.
func (t *timeline) up(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	spans := t.working[name]
	if n := len(spans); n > 0 && spans[n-1].to.IsZero() {
		return
	}
	t.working[name] = append(spans, span{from: at})
}

// down closes the replica's open working span, if any. A span that would
// only have begun after at (a grace not yet over) is dropped.
func (t *timeline) down(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.working[name] = closeOpen(t.working[name], at)
}

func closeOpen(spans []span, at time.Time) []span {
	n := len(spans)
	switch {
	case n == 0 || !spans[n-1].to.IsZero():
		return spans
	case !spans[n-1].from.Before(at):
		return spans[:n-1]
	}
	spans[n-1].to = at
	return spans
}

// netFaultFrom opens a network fault of one replica and returns its index
// for netFaultTo.
func (t *timeline) netFaultFrom(name string, at time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.netFault[name] = append(t.netFault[name], span{from: at})
	return len(t.netFault[name]) - 1
}

func (t *timeline) netFaultTo(name string, i int, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.netFault[name][i].to = at
}

// dbFaultFrom opens a database-side fault and returns its index for dbFaultTo.
func (t *timeline) dbFaultFrom(at time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dbFault = append(t.dbFault, span{from: at})
	return len(t.dbFault) - 1
}

func (t *timeline) dbFaultTo(i int, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dbFault[i].to = at
}

// closeAll ends every open span at the end of the run.
func (t *timeline) closeAll(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, spans := range t.working {
		t.working[name] = closeOpen(spans, at)
	}
	for i := range t.dbFault {
		if t.dbFault[i].to.IsZero() {
			t.dbFault[i].to = at
		}
	}
	for _, spans := range t.netFault {
		for i := range spans {
			if spans[i].to.IsZero() {
				spans[i].to = at
			}
		}
	}
}

// coverage is the frozen timeline the audit judges slots with.
type coverage struct {
	working  map[string][]span
	dbFault  []span
	netFault map[string][]span
	margin   time.Duration // kept clear around a stretch of work
	need     time.Duration // the stretch of work that guarantees a producer tick
}

func (t *timeline) coverage(margin, need time.Duration) coverage {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := coverage{working: map[string][]span{}, netFault: map[string][]span{}, margin: margin, need: need,
		dbFault: append([]span(nil), t.dbFault...)}
	for name, spans := range t.working {
		c.working[name] = append([]span(nil), spans...)
	}
	for name, spans := range t.netFault {
		c.netFault[name] = append([]span(nil), spans...)
	}
	return c
}

// expects reports whether the slot [from, to) must have a job and an
// outcome. The job of a slot is created by any producer tick inside the
// slot, and a working replica ticks at least every need (the longest pause
// between ticks plus the tick itself). So the slot is expected when, inside
// it, some replica worked without a break for at least need, with margin to
// spare on both sides, and no database-side fault (or its recovery grace)
// came within margin of that stretch. A stretch shorter than need, a replica
// starting or waking up too late in the slot, or a database blip over the
// only long stretch make the slot uncovered: past slots are never created,
// so missing it is allowed.
func (c coverage) expects(from, to time.Time) bool {
	for _, spans := range c.working {
		for _, w := range spans {
			if w.to.IsZero() {
				continue
			}
			piece := span{from: later(from, w.from.Add(c.margin)), to: earlier(to, w.to.Add(-c.margin))}
			for _, p := range subtract(piece, c.dbFault, c.margin) {
				if p.to.Sub(p.from) >= c.need {
					return true
				}
			}
		}
	}
	return false
}

// subtract removes from s every fault widened by margin and returns what is
// left, in order.
func subtract(s span, faults []span, margin time.Duration) []span {
	if !s.to.After(s.from) {
		return nil
	}
	left := []span{s}
	for _, f := range faults {
		fFrom, fTo := f.from.Add(-margin), f.to.Add(margin)
		if f.to.IsZero() {
			fTo = s.to.Add(time.Hour)
		}
		var next []span
		for _, p := range left {
			if !fFrom.Before(p.to) || !fTo.After(p.from) {
				next = append(next, p) // no overlap
				continue
			}
			if fFrom.After(p.from) {
				next = append(next, span{from: p.from, to: fFrom})
			}
			if fTo.Before(p.to) {
				next = append(next, span{from: fTo, to: p.to})
			}
		}
		left = next
	}
	return left
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// faultsDuring counts the database faults a replica met within [from, to]:
// whole-cluster faults and its own network faults that began in it.
func (c coverage) faultsDuring(name string, from, to time.Time) int {
	n := 0
	for _, f := range append(slices.Clone(c.dbFault), c.netFault[name]...) {
		if !f.from.Before(from) && !f.from.After(to) {
			n++
		}
	}
	return n
}

// dump writes the timeline for a person reading a failed run.
func (t *timeline) dump(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	const layout = "15:04:05.000"
	names := make([]string, 0, len(t.working))
	for name := range t.working {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, s := range t.working[name] {
			fmt.Fprintf(w, "working %s %s - %s\n", name, s.from.Format(layout), s.to.Format(layout))
		}
	}
	for _, name := range names {
		for _, s := range t.netFault[name] {
			fmt.Fprintf(w, "net-fault %s %s - %s (without recovery grace)\n", name, s.from.Format(layout), s.to.Format(layout))
		}
	}
	for _, s := range t.dbFault {
		fmt.Fprintf(w, "db-fault %s - %s (with recovery grace)\n", s.from.Format(layout), s.to.Format(layout))
	}
}
