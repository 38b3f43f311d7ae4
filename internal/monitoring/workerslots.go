package monitoring

import "context"

// workerSlots holds a token per idle worker. A loop that claims work asks
// for as many items as it has idle workers, so there is no per-tick ceiling:
// throughput is bounded by workers and the database, not by a poll interval.
type workerSlots chan struct{}

func newWorkerSlots(n int) workerSlots {
	w := make(workerSlots, n)
	for range n {
		w <- struct{}{}
	}
	return w
}

// takeIdle waits for one idle worker, then takes every other idle one, and
// returns how many it took; 0 when ctx ended first.
func (w workerSlots) takeIdle(ctx context.Context) int {
	select {
	case <-ctx.Done():
		return 0
	case <-w:
	}
	n := 1
	for n < cap(w) {
		select {
		case <-w:
			n++
		default:
			return n
		}
	}
	return n
}

// give returns n workers to the idle set.
func (w workerSlots) give(n int) {
	for range n {
		w <- struct{}{}
	}
}
