package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vigilhq/vigil/internal/demotarget"
	"github.com/vigilhq/vigil/internal/localpg"
)

// harness owns everything a run starts; close stops all of it.
type harness struct {
	o          options
	out        io.Writer
	dir        string
	pgDir      string
	pgURL      string // direct, for the harness's own queries
	bin        string
	target     *http.Server
	targetAddr string
	recv       *receiver
	recvSrv    *http.Server
	recvAddr   string
	cfgPath    string

	replicas []*replica
	tl       *timeline
	faults   *faultLog
	survival *survivalLog
	services []serviceSpec
	start    time.Time // faults start
	pool     *pgxpool.Pool

	dbMu sync.Mutex // one database fault at a time, and none while the harness itself restarts it

	clusterMu   sync.Mutex
	clusterAway bool      // PostgreSQL is stopped or restarting
	clusterBack time.Time // when it last came back

	recordMu  sync.Mutex
	faultFile *os.File // faults.log: every fault, and the timeline at the end
}

func newHarness(o options, out io.Writer) (*harness, error) {
	dir, err := os.MkdirTemp("", "vigil-chaos-")
	if err != nil {
		return nil, err
	}
	// As root PostgreSQL runs as the postgres user, which must reach its data directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	return &harness{
		o: o, out: out, dir: dir, pgDir: filepath.Join(dir, "pg"),
		tl: newTimeline(), faults: &faultLog{}, survival: &survivalLog{},
	}, nil
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.out, "%7.1fs  ", h.elapsed().Seconds())
	fmt.Fprintf(h.out, format+"\n", args...)
}

// record writes one line to the run's faults.log, and to the output with -v.
func (h *harness) record(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	h.recordMu.Lock()
	if h.faultFile != nil {
		fmt.Fprintln(h.faultFile, line)
	}
	h.recordMu.Unlock()
	if h.o.Verbose {
		h.logf("%s", line)
	}
}

func (h *harness) elapsed() time.Duration {
	if h.start.IsZero() {
		return 0
	}
	return time.Since(h.start)
}

// run sets everything up, injects faults for the duration, settles and
// audits. An error means the run itself could not be carried out.
func (h *harness) run(ctx context.Context) (*report, error) {
	o := h.o
	fmt.Fprintf(h.out, "chaos: seed %d, %s of faults, %d services, %d replicas, lease %s, dir %s\n",
		o.Seed, o.Duration, o.Services, o.Replicas, o.Lease, h.dir)
	fmt.Fprintf(h.out, "chaos: rerun with: go run ./scripts/chaos -duration %s -seed %d -services %d\n", o.Duration, o.Seed, o.Services)
	if err := h.build(ctx); err != nil {
		return nil, err
	}
	if err := h.startDatabase(ctx); err != nil {
		return nil, err
	}
	if err := h.openPool(ctx); err != nil {
		return nil, err
	}
	if err := h.startNetwork(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0))
	h.services = makeServices(rng, o, h.targetURL(), h.refusedURL())
	if err := h.writeConfig(); err != nil {
		return nil, err
	}
	for i := range o.Replicas {
		r, err := h.newReplica(fmt.Sprintf("replica-%d", i+1))
		if err != nil {
			return nil, err
		}
		h.replicas = append(h.replicas, r)
	}
	for _, r := range h.replicas {
		if err := r.start(); err != nil {
			return nil, err
		}
	}
	for _, r := range h.replicas {
		if err := r.waitStarted(ctx, 90*time.Second); err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}

	ff, err := os.Create(filepath.Join(h.dir, "faults.log"))
	if err != nil {
		return nil, err
	}
	h.recordMu.Lock()
	h.faultFile = ff
	h.recordMu.Unlock()
	h.start = time.Now()
	h.tl.setStart(h.start)
	fmt.Fprintf(h.out, "chaos: all replicas working; injecting faults for %s\n", o.Duration)
	faultCtx, cancel := context.WithTimeout(ctx, o.Duration)
	h.injectFaults(faultCtx)
	cancel()
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}

	h.logf("faults over; bringing every replica back")
	if err := h.recover(ctx); err != nil {
		return nil, err
	}
	cutoff := time.Now()
	h.tl.setCutoff(cutoff)
	h.logf("settling (at most %s)", o.Settle)
	settled, err := h.settle(ctx, cutoff)
	if err != nil {
		return nil, err
	}
	h.logf("stopping replicas gracefully")
	stopped := h.stopReplicas()
	h.tl.closeAll(time.Now())
	h.tl.dump(h.faultFile)
	if ctx.Err() != nil {
		return nil, errors.New("interrupted")
	}
	h.logf("auditing")
	rep, err := h.audit(ctx, cutoff, settled, stopped)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return rep, nil
}

// build compiles the server once, as a replica would be deployed.
func (h *harness) build(ctx context.Context) error {
	if h.o.Binary != "" {
		h.bin = h.o.Binary
		return nil
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	h.bin = filepath.Join(h.dir, "vigil")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", h.bin, "./cmd/server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/server: %w\n%s", err, out)
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run chaos from inside the Vigil module (go run ./scripts/chaos)")
	}
	return filepath.Dir(mod), nil
}

// startDatabase creates a fresh cluster with commit timestamps on: the audit
// orders each service's completions by commit to replay its status history.
func (h *harness) startDatabase(ctx context.Context) error {
	quiet := slog.New(slog.DiscardHandler)
	url, err := localpg.Ensure(ctx, localpg.Options{DataDir: h.pgDir, Logger: quiet})
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `ALTER SYSTEM SET track_commit_timestamp = on`)
	pool.Close()
	if err != nil {
		return fmt.Errorf("enable track_commit_timestamp: %w", err)
	}
	if err := localpg.Stop(ctx, h.pgDir); err != nil {
		return err
	}
	if h.pgURL, err = localpg.Ensure(ctx, localpg.Options{DataDir: h.pgDir, Logger: quiet}); err != nil {
		return err
	}
	return nil
}

func (h *harness) pgAddr() string {
	// localpg URLs are postgres://postgres@127.0.0.1:PORT/vigil?sslmode=disable
	rest := strings.TrimPrefix(h.pgURL, "postgres://postgres@")
	host, _, _ := strings.Cut(rest, "/")
	return host
}

// startNetwork starts the target and the webhook receiver (each replica
// gets its own proxy in front of PostgreSQL in newReplica).
func (h *harness) startNetwork() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	h.targetAddr = ln.Addr().String()
	h.target = &http.Server{Handler: demotarget.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = h.target.Serve(ln) }()

	rln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	h.recv = newReceiver(h.o.Seed)
	h.recvAddr = rln.Addr().String()
	h.recvSrv = &http.Server{Handler: h.recv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = h.recvSrv.Serve(rln) }()
	return nil
}

func (h *harness) targetURL() string {
	return "http://" + h.targetAddr
}

// refusedURL points at a port nothing listens on: connection refused.
func (h *harness) refusedURL() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "http://127.0.0.1:1"
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// replicaDatabaseURL goes through the replica's own proxy, so the harness
// can slow down, cut and refuse one replica's connections while the others
// keep theirs; connect_timeout keeps a dial short.
func (h *harness) replicaDatabaseURL(r *replica) string {
	return "postgres://postgres@" + r.proxy.addr() + "/vigil?sslmode=disable&connect_timeout=3"
}

// stopReplicas sends SIGTERM to every replica and waits; it reports the
// replicas that did not exit 0 within the grace period.
func (h *harness) stopReplicas() []string {
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for _, r := range h.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.terminate(30 * time.Second); err != nil {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s: %v", r.name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return bad
}

// close stops everything the run started. It keeps the directory when the
// run failed or -keep was given.
func (h *harness) close(failed bool) {
	for _, r := range h.replicas {
		r.kill()
	}
	if h.pool != nil {
		h.pool.Close()
	}
	h.recordMu.Lock()
	if h.faultFile != nil {
		h.faultFile.Close()
		h.faultFile = nil
	}
	h.recordMu.Unlock()
	for _, r := range h.replicas {
		r.proxy.close()
	}
	for _, srv := range []*http.Server{h.target, h.recvSrv} {
		if srv != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = srv.Shutdown(ctx)
			cancel()
			_ = srv.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := localpg.StopImmediate(ctx, h.pgDir); err != nil {
		fmt.Fprintf(h.out, "chaos: could not stop PostgreSQL in %s: %v\n", h.pgDir, err)
		return
	}
	if failed || h.o.Keep {
		return
	}
	_ = os.RemoveAll(h.dir)
}
