package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// replica is one Vigil server process, restarted under the same name and
// address after a kill or a graceful stop, as an orchestrator would.
type replica struct {
	name  string
	addr  string
	h     *harness
	log   *os.File
	proxy *proxy // its own way to PostgreSQL, so its network can fail alone

	mu          sync.Mutex
	cmd         *exec.Cmd
	done        chan struct{} // closed when the current process has exited
	exitErr     error
	incarnation int
	frozen      bool
	netFault    bool          // its connections are slowed, cut or refused right now
	netFaults   int           // network faults begun so far
	graceUntil  time.Time     // after a network fault it counts as working only from here
	expectExit  bool          // the harness is stopping it: an exit is no surprise
	started     chan struct{} // closed once this incarnation logged "vigil replica started"
	lives       []*life
}

// life is what one incarnation of a replica logged.
type life struct {
	incarnation int
	from, to    time.Time
	outageLogs  int // "database unavailable" lines
	staleWrites int // stale completions/retries discarded
	panics      int
	unexpected  string // set when it exited without the harness asking
}

func (h *harness) newReplica(name string) (*replica, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := newProxy(h.pgAddr())
	if err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(h.dir, name+".log"))
	if err != nil {
		p.close()
		return nil, err
	}
	return &replica{name: name, addr: addr, h: h, log: f, proxy: p}, nil
}

// start runs a new incarnation. Its working window opens when it logs that
// it started (migrations applied, config synced, scheduler running).
func (r *replica) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.incarnation++
	fmt.Fprintf(r.log, "=== chaos: start #%d at %s ===\n", r.incarnation, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(r.h.bin, "-addr", r.addr, "-instance", r.name, "-config", r.h.cfgPath,
		"-database-url", r.h.replicaDatabaseURL(r))
	cmd.Env = append(os.Environ(), "VIGIL_LOG_LEVEL=info")
	// Its own process group, so a Ctrl-C in the terminal reaches only the
	// harness, which then stops the replicas itself; and killed with the
	// harness if the harness dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return fmt.Errorf("start %s: %w", r.name, err)
	}
	pw.Close()
	l := &life{incarnation: r.incarnation, from: time.Now()}
	r.lives = append(r.lives, l)
	r.cmd, r.done, r.started, r.expectExit, r.frozen = cmd, make(chan struct{}), make(chan struct{}), false, false
	done, started := r.done, r.started
	scanned := make(chan struct{})
	go r.scan(pr, l, started, scanned)
	go func() {
		err := cmd.Wait()
		<-scanned
		now := time.Now()
		r.h.tl.down(r.name, now)
		r.mu.Lock()
		r.exitErr = err
		l.to = now
		if !r.expectExit {
			l.unexpected = fmt.Sprintf("exited on its own: %v", err)
		}
		r.mu.Unlock()
		close(done)
	}()
	return nil
}

// scan copies the replica's log to its file and watches for the lines the
// audit counts.
func (r *replica) scan(pr *os.File, l *life, started chan struct{}, scanned chan struct{}) {
	defer close(scanned)
	defer pr.Close()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	isStarted := false
	for sc.Scan() {
		line := sc.Text()
		r.mu.Lock()
		fmt.Fprintln(r.log, line)
		switch {
		case !isStarted && strings.Contains(line, `msg="vigil replica started"`):
			isStarted = true
			if !r.frozen && !r.netFault {
				r.h.tl.up(r.name, later(time.Now(), r.graceUntil))
			}
			close(started)
		case isDatabaseErrorLine(line):
			l.outageLogs++
		case strings.Contains(line, "stale completion discarded"), strings.Contains(line, "stale retry discarded"):
			l.staleWrites++
		case strings.HasPrefix(line, "panic:"), strings.Contains(line, "fatal error:"):
			l.panics++
		}
		r.mu.Unlock()
	}
	// Whatever remains after a read error is drained so the process never blocks on its output.
	_, _ = bufio.NewReader(pr).WriteTo(devNull{})
}

// isDatabaseErrorLine tells an error logged because PostgreSQL was away: the
// outage should cost a replica one such line per component, not one per job
// or per tick.
func isDatabaseErrorLine(line string) bool {
	if !strings.Contains(line, "level=ERROR") {
		return false
	}
	for _, s := range []string{"database unavailable", "failed to connect", "unexpected EOF", "conn closed",
		"SQLSTATE 57P", "the database system is", "connection refused", "connection reset"} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

func (r *replica) waitStarted(ctx context.Context, timeout time.Duration) error {
	r.mu.Lock()
	started, done := r.started, r.done
	r.mu.Unlock()
	select {
	case <-started:
		return nil
	case <-done:
		return fmt.Errorf("%s exited before it started; see %s", r.name, r.log.Name())
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(timeout):
		return fmt.Errorf("%s did not start within %s; see %s", r.name, timeout, r.log.Name())
	}
}

// running reports whether the current incarnation is alive and not frozen.
func (r *replica) running() (incarnation int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.frozen {
		return r.incarnation, false
	}
	select {
	case <-r.done:
		return r.incarnation, false
	default:
		return r.incarnation, true
	}
}

func (r *replica) signal(sig syscall.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return errors.New("not started")
	}
	switch sig {
	case syscall.SIGSTOP:
		r.frozen = true
	case syscall.SIGCONT:
		r.frozen = false
	case syscall.SIGKILL, syscall.SIGTERM:
		r.expectExit = true
	}
	return r.cmd.Process.Signal(sig)
}

// freeze stops the process with SIGSTOP; its working window closes.
func (r *replica) freeze() error {
	r.h.tl.down(r.name, time.Now())
	return r.signal(syscall.SIGSTOP)
}

// thaw continues a frozen process; it works again from now on (if it had
// started before it was frozen).
func (r *replica) thaw() error {
	if err := r.signal(syscall.SIGCONT); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hasStartedLocked() && !r.netFault {
		r.h.tl.up(r.name, later(time.Now(), r.graceUntil))
	}
	return nil
}

// hasStarted reports whether the current incarnation logged that it started.
func (r *replica) hasStarted() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hasStartedLocked()
}

func (r *replica) hasStartedLocked() bool {
	if r.started == nil {
		return false
	}
	select {
	case <-r.started:
		return true
	default:
		return false
	}
}

// processMark names the replica's current state for a check that must judge one
// undisturbed process: its incarnation and how many network faults it had.
type processMark struct{ incarnation, netFaults int }

// mark returns the replica's mark; calm is false while the process is not
// running, frozen or under a network fault.
func (r *replica) mark() (m processMark, calm bool) {
	inc, ok := r.running()
	r.mu.Lock()
	defer r.mu.Unlock()
	return processMark{inc, r.netFaults}, ok && !r.netFault
}

// netFaultBegin marks the replica's network as faulty from now on: it stops
// counting as working. It returns the fault's index for netFaultEnd.
func (r *replica) netFaultBegin() int {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.netFault = true
	r.netFaults++
	r.h.tl.down(r.name, now)
	return r.h.tl.netFaultFrom(r.name, now)
}

// netFaultEnd ends the network fault; a started, running replica counts as
// working again once dbRecoveryGrace has passed (its pools notice dead
// connections on their next use).
func (r *replica) netFaultEnd(i int) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.tl.netFaultTo(r.name, i, now)
	r.netFault = false
	r.graceUntil = now.Add(dbRecoveryGrace)
	alive := r.done != nil
	if alive {
		select {
		case <-r.done:
			alive = false
		default:
		}
	}
	if alive && !r.frozen && r.hasStartedLocked() {
		r.h.tl.up(r.name, r.graceUntil)
	}
}

// killHard sends SIGKILL and waits for the exit.
func (r *replica) killHard() error {
	r.h.tl.down(r.name, time.Now())
	if err := r.signal(syscall.SIGKILL); err != nil {
		return err
	}
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	<-done
	return nil
}

// terminate sends SIGTERM and waits up to grace for an exit with status 0.
// A replica that does not exit in time is killed and reported.
func (r *replica) terminate(grace time.Duration) error {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil // already gone: nothing to stop
	default:
	}
	r.h.tl.down(r.name, time.Now())
	_ = r.signal(syscall.SIGCONT)
	if err := r.signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-done:
	case <-time.After(grace):
		_ = r.signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("did not exit within %s of SIGTERM; killed", grace)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exitErr != nil {
		return fmt.Errorf("graceful stop: %v", r.exitErr)
	}
	return nil
}

// kill is the last resort at the end of a run: no process is left behind.
func (r *replica) kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	if cmd != nil {
		r.expectExit = true
	}
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
	default:
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-done
	}
	r.log.Close()
}

// get fetches one of the replica's endpoints and returns its status code
// (0 when there was no answer).
func (r *replica) get(path string, timeout time.Duration) int {
	c := http.Client{Timeout: timeout}
	resp, err := c.Get("http://" + r.addr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (r *replica) livesSnapshot() []life {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]life, len(r.lives))
	for i, l := range r.lives {
		out[i] = *l
	}
	return out
}

// getAnswer asks path until the replica answers at all (a replica just
// restarted may not listen yet) or 5 s pass, and returns the status (0 when
// nothing answered). Any answer counts: a wrong one is not retried away.
func (r *replica) getAnswer(path string) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		code := r.get(path, 2*time.Second)
		if code != 0 || time.Now().After(deadline) {
			return code
		}
		time.Sleep(200 * time.Millisecond)
	}
}
