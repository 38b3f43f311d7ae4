package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// serviceSpec is one service of the run's config file.
type serviceSpec struct {
	Name     string
	URL      string
	Interval time.Duration
	Timeout  time.Duration
	Enabled  bool
}

// makeServices draws n services at 2-5 s intervals against the demo target:
// healthy, failing, slow (some slower than their timeout), flapping (status
// transitions, hence alerts) and refused connections, plus two disabled ones
// that must never get a job.
func makeServices(rng *rand.Rand, o options, target, refused string) []serviceSpec {
	timeout := min(o.Lease-time.Second, 2*time.Second)
	var out []serviceSpec
	for i := range o.Services {
		s := serviceSpec{Interval: time.Duration(2+rng.IntN(4)) * time.Second, Timeout: timeout, Enabled: true}
		switch p := rng.IntN(100); {
		case p < 40:
			s.Name, s.URL = fmt.Sprintf("ok-%03d", i), target+"/ok"
		case p < 50:
			s.Name, s.URL = fmt.Sprintf("fail-%03d", i), target+"/fail"
		case p < 65:
			ms := 100 + rng.IntN(int(timeout.Milliseconds())+400)
			s.Name, s.URL = fmt.Sprintf("slow-%03d", i), fmt.Sprintf("%s/slow?ms=%d", target, ms)
		case p < 95:
			s.Name, s.URL = fmt.Sprintf("flap-%03d", i), fmt.Sprintf("%s/flap?period=%d", target, 3+rng.IntN(10))
		default:
			s.Name, s.URL = fmt.Sprintf("refused-%03d", i), refused+"/health"
		}
		out = append(out, s)
	}
	for i := range 2 {
		out = append(out, serviceSpec{Name: fmt.Sprintf("disabled-%d", i), URL: target + "/ok",
			Interval: 2 * time.Second, Timeout: timeout, Enabled: false})
	}
	return out
}

// Scheduler settings of the run: a short lease, quick retries, so a settled
// run has little left in backoff.
const (
	maxAttempts = 3
	retryBase   = 500 * time.Millisecond
	retryCap    = 2 * time.Second
)

func (h *harness) writeConfig() error {
	var b strings.Builder
	fmt.Fprintf(&b, "scheduler: {lease: %s, max_attempts: %d, retry_base: %s, retry_cap: %s, workers: %d, poll: 250ms}\n",
		h.o.Lease, maxAttempts, retryBase, retryCap, h.o.Workers)
	b.WriteString("groups:\n  - name: chaos\n")
	b.WriteString("services:\n")
	for _, s := range h.services {
		fmt.Fprintf(&b, "  - {name: %s, group: chaos, url: %q, interval: %s, timeout: %s, enabled: %t}\n",
			s.Name, s.URL, s.Interval, s.Timeout, s.Enabled)
	}
	// Quick delivery retries, so a settled run has delivered what the receiver refused.
	b.WriteString("alerts:\n  failure_threshold: 1\n  retry_base: 500ms\n  retry_cap: 2s\n")
	fmt.Fprintf(&b, "  webhooks:\n    - {name: receiver, url: %q, timeout: 2s, max_attempts: 20}\n", "http://"+h.recvAddr+"/hook")
	h.cfgPath = filepath.Join(h.dir, "vigil.yaml")
	return os.WriteFile(h.cfgPath, []byte(b.String()), 0o644)
}
