package pgtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vigilhq/vigil/internal/localpg"
)

const (
	// reaperEnv makes the test binary act as the reaper of the cluster in the
	// directory it names (see startReaper).
	reaperEnv = "PGTEST_REAPER_DATA_DIR"
	// markerName marks a directory as a pgtest cluster, so the reaper never
	// removes anything else, whatever reaperEnv says.
	markerName = "pgtest-cluster"
	dirPrefix  = "pgtest-"
)

// throwaway is the cluster Main starts when no TEST_DATABASE_URL is given.
type throwaway struct {
	dir    string
	url    string
	reaper *exec.Cmd
	alive  io.WriteCloser // the reaper's stdin; closing it, or our death, sets it off
}

func startCluster(ctx context.Context) (*throwaway, error) {
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create cluster directory: %w", err)
	}
	// MkdirTemp makes it 0700; when the tests run as root the server runs as
	// the postgres user, which must be able to enter it.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("open up cluster directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, markerName), nil, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mark cluster directory: %w", err)
	}
	c := &throwaway{dir: dir}
	if err := c.startReaper(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.url, err = localpg.Ensure(ctx, localpg.Options{DataDir: dir, Database: "postgres", Ephemeral: true})
	if err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// startReaper starts a copy of the test binary that waits for its stdin to
// close and then stops and removes the cluster. The server runs detached, so
// without it a test that panics or times out (both end the process without
// running Main's defers), or a Ctrl-C, would leave a postmaster behind.
func (c *throwaway) startReaper() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find test binary for the cluster reaper: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), reaperEnv+"="+c.dir)
	// Its own session: the Ctrl-C that kills the tests must not kill it too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	alive, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("cluster reaper: %w", err)
	}
	// Stdout and stderr stay unset (/dev/null): holding `go test`'s output
	// pipe would make it wait for the reaper.
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start cluster reaper: %w", err)
	}
	c.reaper, c.alive = cmd, alive
	return nil
}

// remove stops and deletes the cluster, then lets the reaper go.
func (c *throwaway) remove() {
	if err := removeCluster(c.dir); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
	}
	if c.reaper != nil {
		c.alive.Close()
		_ = c.reaper.Wait() // it finds nothing left to do
	}
}

// reap is Main in the reaper process: wait until the test process is gone
// (its end of our stdin closes), then clean up after it.
func reap(dir string) int {
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := removeCluster(dir); err != nil {
		return 1
	}
	return 0
}

func removeCluster(dir string) error {
	if !strings.HasPrefix(filepath.Base(dir), dirPrefix) {
		return fmt.Errorf("refusing to remove %s: not a pgtest cluster directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, markerName)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // already removed, or never ours
		}
		return fmt.Errorf("check cluster directory: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopErr := localpg.StopImmediate(ctx, dir)
	if stopErr != nil {
		// Leave the files: removing them under a running server helps nobody.
		return fmt.Errorf("stop test cluster in %s: %w", dir, stopErr)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove test cluster: %w", err)
	}
	return nil
}
