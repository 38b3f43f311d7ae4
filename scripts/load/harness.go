package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vigilhq/vigil/internal/localpg"
)

// harness owns everything a run starts; close stops all of it.
type harness struct {
	o      options
	out    io.Writer
	dir    string
	pgDir  string
	pgURL  string
	pool   *pgxpool.Pool
	bin    string
	target *child
	reps   []*child
	cfg    string
	start  time.Time
	// peakRate is the highest 10 s checks/s seen by progress: how fast the
	// replicas drain a slot's burst, where the window's mean says only
	// whether they kept up.
	peakRate float64
	// segments, while the window runs, says when to measure a soak segment.
	segments    *segmentTimer
	segmentFrom time.Time // DB clock
	soak        []segment
}

// child is a process the harness started: the target or a replica.
type child struct {
	name string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
	// peakRSS is the last VmHWM read while the process ran.
	peakRSS int64
}

func newHarness(o options, out io.Writer) (*harness, error) {
	dir, err := os.MkdirTemp("", "vigil-load-")
	if err != nil {
		return nil, err
	}
	// As root PostgreSQL runs as the postgres user, which must reach its data directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	return &harness{o: o, out: out, dir: dir, pgDir: filepath.Join(dir, "pg")}, nil
}

func (h *harness) logf(format string, args ...any) {
	var at time.Duration
	if !h.start.IsZero() {
		at = time.Since(h.start)
	}
	fmt.Fprintf(h.out, "%6.1fs  %s\n", at.Seconds(), fmt.Sprintf(format, args...))
}

func (h *harness) run(ctx context.Context) (*report, error) {
	o := h.o
	h.logf("load: %d services at %s over %d groups, %d replicas x %d workers, %s measured; dir %s",
		o.Services, o.Interval, o.Groups, o.Replicas, o.Workers, o.Duration, h.dir)
	if err := h.build(ctx); err != nil {
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	var err error
	// Durable settings (fsync, synchronous_commit on): every commit waits for a WAL flush.
	if h.pgURL, err = localpg.Ensure(ctx, localpg.Options{DataDir: h.pgDir, Logger: quiet}); err != nil {
		return nil, err
	}
	// Each replica opens up to min(workers+4, 64) + 8 + 2 connections; the
	// default 100 runs out at two replicas of 64 workers.
	if err := h.setMaxConnections(ctx, 20+o.Replicas*80); err != nil {
		return nil, err
	}
	if h.pool, err = pgxpool.New(ctx, h.pgURL); err != nil {
		return nil, err
	}
	if h.target, err = h.startChild(ctx, "target", "demo-target"); err != nil {
		return nil, err
	}
	if err := waitHTTP(ctx, "http://"+h.target.addr+"/ok", 30*time.Second); err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if err := h.writeConfig(); err != nil {
		return nil, err
	}
	h.logf("starting %d replicas", o.Replicas)
	for i := range o.Replicas {
		r, err := h.startChild(ctx, fmt.Sprintf("replica-%d", i+1), "",
			"-config", h.cfg, "-database-url", h.pgURL)
		if err != nil {
			return nil, err
		}
		h.reps = append(h.reps, r)
	}
	for _, r := range h.reps {
		if err := waitHTTP(ctx, "http://"+r.addr+"/readyz", 5*time.Minute); err != nil {
			return nil, fmt.Errorf("%s: %w (log in %s)", r.name, err, r.log.Name())
		}
	}
	h.start = time.Now()
	// The slot the replicas start in arrives as one burst of every service
	// (its due times have passed); the window opens once that is worked off.
	if o.Warmup > 0 {
		h.logf("all replicas ready; warming up for %s (load average %s)", o.Warmup, loadAvg())
		if err := h.progress(ctx, o.Warmup); err != nil {
			return nil, err
		}
	}
	h.logf("measuring for %s (load average %s)", o.Duration, loadAvg())

	before, err := h.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	h.segments = &segmentTimer{length: o.Segment, next: time.Now().Add(o.Segment)}
	h.segmentFrom = before.dbTime
	if err := h.progress(ctx, o.Duration); err != nil {
		return nil, err
	}
	// The window's last segment ends with the window, when progress has
	// already returned: measure it here.
	if o.Segment > 0 {
		if seg, err := h.measureSegment(ctx, h.segmentFrom); err != nil {
			h.logf("segment: %v", err)
		} else if seg.to.Sub(seg.from) > o.Segment/2 {
			h.soak = append(h.soak, seg)
			h.logf("segment %d: %s", len(h.soak), seg.line())
		}
	}
	h.segments = nil
	after, err := h.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	h.logf("window over; stopping replicas")
	h.stopReplicas()
	return h.report(ctx, before, after)
}

func (h *harness) setMaxConnections(ctx context.Context, n int) error {
	pool, err := pgxpool.New(ctx, h.pgURL)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, fmt.Sprintf(`ALTER SYSTEM SET max_connections = %d`, max(n, 100)))
	pool.Close()
	if err != nil {
		return fmt.Errorf("set max_connections: %w", err)
	}
	if err := localpg.Stop(ctx, h.pgDir); err != nil {
		return err
	}
	quiet := slog.New(slog.DiscardHandler)
	h.pgURL, err = localpg.Ensure(ctx, localpg.Options{DataDir: h.pgDir, Logger: quiet})
	return err
}

// build compiles the server once, as a replica would be deployed.
func (h *harness) build(ctx context.Context) error {
	if h.o.Binary != "" {
		h.bin = h.o.Binary
		return nil
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return errors.New("run the load harness from inside the Vigil module (go run ./scripts/load)")
	}
	h.bin = filepath.Join(h.dir, "vigil")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", h.bin, "./cmd/server")
	cmd.Dir = filepath.Dir(mod)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/server: %w\n%s", err, b)
	}
	return nil
}

// startChild runs the server binary (a replica, or with sub "demo-target"
// the target) on a free port, logging to a file in the run's directory.
func (h *harness) startChild(ctx context.Context, name, sub string, args ...string) (*child, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	f, err := os.Create(filepath.Join(h.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	var argv []string
	if sub != "" {
		argv = append(argv, sub)
	} else {
		argv = append(argv, "-instance", name)
	}
	argv = append(argv, "-addr", addr)
	argv = append(argv, args...)
	cmd := exec.Command(h.bin, argv...)
	cmd.Env = append(os.Environ(), "VIGIL_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group, so Ctrl-C reaches only the harness, which stops
	// the children itself; killed with the harness if the harness dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, addr: addr, cmd: cmd, done: make(chan struct{}), log: f}
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// stop asks the child to exit and kills it after grace.
func (c *child) stop(grace time.Duration) {
	if c == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (h *harness) stopReplicas() {
	for _, r := range h.reps {
		go r.stop(30 * time.Second)
	}
	for _, r := range h.reps {
		<-r.done
	}
}

func waitHTTP(ctx context.Context, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s", url, limit)
		}
		select {
		case <-ctx.Done():
			return errors.New("interrupted")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeConfig writes N services against the target's /ok, spread over the groups.
func (h *harness) writeConfig() error {
	o := h.o
	var b strings.Builder
	fmt.Fprintf(&b, "scheduler: {lease: 30s, max_attempts: 3, retry_base: 1s, retry_cap: 10s, workers: %d, poll: %s, spread: %s}\n", o.Workers, o.Poll, o.Spread)
	b.WriteString("groups:\n")
	for g := range o.Groups {
		fmt.Fprintf(&b, "  - name: group-%d\n", g+1)
	}
	b.WriteString("services:\n")
	url := "http://" + h.target.addr + "/ok"
	for i := range o.Services {
		fmt.Fprintf(&b, "  - {name: svc-%06d, group: group-%d, url: %q, interval: %s, timeout: 3s}\n",
			i+1, i%o.Groups+1, url, o.Interval)
	}
	h.cfg = filepath.Join(h.dir, "vigil.yaml")
	return os.WriteFile(h.cfg, []byte(b.String()), 0o644)
}

// progress prints what the database says every 10 s until the window ends.
func (h *harness) progress(ctx context.Context, window time.Duration) error {
	end := time.After(window)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	var last int64
	_ = h.pool.QueryRow(ctx, `SELECT count(*) FROM monitoring_job_result`).Scan(&last)
	lastAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			return errors.New("interrupted")
		case <-end:
			return nil
		case <-tick.C:
		}
		var results, backlog, running int64
		err := h.pool.QueryRow(ctx, `SELECT
    (SELECT count(*) FROM monitoring_job_result),
    (SELECT count(*) FROM monitoring_job WHERE state = 'READY' AND available_at <= clock_timestamp()),
    (SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING')`).Scan(&results, &backlog, &running)
		if err != nil {
			h.logf("progress: %v", err)
			continue
		}
		for _, r := range h.reps {
			select {
			case <-r.done:
				return fmt.Errorf("%s exited during the run (log in %s)", r.name, r.log.Name())
			default:
			}
		}
		now := time.Now()
		h.peakRate = max(h.peakRate, float64(results-last)/now.Sub(lastAt).Seconds())
		h.logf("%7.0f checks/s  due READY %6d  RUNNING %4d  load %s",
			float64(results-last)/now.Sub(lastAt).Seconds(), backlog, running, loadAvg())
		last, lastAt = results, now
		if h.segments != nil && h.segments.due(now) {
			seg, err := h.measureSegment(ctx, h.segmentFrom)
			if err != nil {
				h.logf("segment: %v", err)
				continue
			}
			h.soak = append(h.soak, seg)
			h.segmentFrom = seg.to
			h.logf("segment %d: %s", len(h.soak), seg.line())
		}
	}
}

// close stops everything the run started and removes its directory unless
// the run failed or -keep was given.
func (h *harness) close(failed bool) {
	h.stopReplicas()
	h.target.stop(5 * time.Second)
	if h.pool != nil {
		h.pool.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := localpg.Stop(ctx, h.pgDir); err != nil {
		fmt.Fprintf(h.out, "load: could not stop PostgreSQL in %s: %v\n", h.pgDir, err)
		return
	}
	if failed || h.o.Keep {
		fmt.Fprintf(h.out, "load: kept %s\n", h.dir)
		return
	}
	_ = os.RemoveAll(h.dir)
}
