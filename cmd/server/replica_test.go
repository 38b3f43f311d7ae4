package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// These tests run real replicas: the server binary as child processes, so a
// replica can be frozen with SIGSTOP or killed with SIGKILL like in production.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func serverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vigil-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "vigil")
		out, err := exec.Command("go", "build", "-race", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

type replica struct {
	name string
	addr string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// startReplica runs `server` against databaseURL and waits until it answers
// /readyz. It is killed at the end of the test if still running.
func startReplica(t *testing.T, name, databaseURL, configPath string, extraEnv ...string) *replica {
	t.Helper()
	r := startReplicaNoWait(t, name, databaseURL, configPath, extraEnv...)
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + r.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "replica %s never became ready:\n%s", name, r.log.String())
	return r
}

// startReplicaNoWait starts a replica without waiting for it to be ready.
func startReplicaNoWait(t *testing.T, name, databaseURL, configPath string, extraEnv ...string) *replica {
	t.Helper()
	r := &replica{name: name, addr: freeAddr(t), log: &syncBuffer{}, done: make(chan struct{})}
	r.cmd = exec.Command(serverBinary(t), "-addr", r.addr, "-instance", name, "-config", configPath, "-database-url", databaseURL)
	r.cmd.Env = append(append(os.Environ(), "VIGIL_LOG_LEVEL=debug", "VIGIL_PUBLIC_DASHBOARD=true"), extraEnv...)
	r.cmd.Stdout = r.log
	r.cmd.Stderr = r.log
	require.NoError(t, r.cmd.Start())
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGCONT)
		_ = r.cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			t.Logf("log of %s:\n%s", r.name, r.log.String())
		}
	})
	return r
}

// metric reads one counter from the replica's /metrics.
func (r *replica) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + r.addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + ` (\S+)$`)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

func (r *replica) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, r.cmd.Process.Signal(sig))
}

func (r *replica) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s did not exit", r.name)
	}
	return r.cmd.ProcessState.ExitCode()
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "vigil.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func queryInt(t *testing.T, pool *pgxpool.Pool, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

func queryString(t *testing.T, pool *pgxpool.Pool, q string, args ...any) string {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(), q, args...).Scan(&s))
	return s
}

func testPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

var _ = io.Discard
