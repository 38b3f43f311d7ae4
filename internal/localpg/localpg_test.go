package localpg

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// helperDataDirEnv turns TestEnsureHelperProcess into a separate process that
// calls Ensure, standing in for a second Vigil replica on the same machine.
const helperDataDirEnv = "LOCALPG_TEST_HELPER_DATA_DIR"

func TestEnsureStartsReusesAndStops(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := dataDir(t)

	url, err := Ensure(ctx, Options{DataDir: dir, Ephemeral: true})
	require.NoError(t, err)
	require.Regexp(t, `^postgres://postgres@127\.0\.0\.1:\d+/vigil\?sslmode=disable$`, url)
	require.Equal(t, "vigil", queryString(t, url, "SELECT current_database()"))
	require.Equal(t, "off", queryString(t, url, "SHOW fsync"), "Ephemeral turns fsync off")
	first := postmasters(t, dir)
	require.Len(t, first, 1)

	again, err := Ensure(ctx, Options{DataDir: dir, Ephemeral: true})
	require.NoError(t, err)
	require.Equal(t, url, again, "a second Ensure reuses the port")
	require.Equal(t, first, postmasters(t, dir), "a second Ensure reuses the running postmaster")

	other, err := Ensure(ctx, Options{DataDir: dir, Database: "other"})
	require.NoError(t, err)
	require.Equal(t, "other", queryString(t, other, "SELECT current_database()"))

	require.NoError(t, Stop(ctx, dir))
	require.Empty(t, postmasters(t, dir))
	_, err = pgx.Connect(ctx, url)
	require.Error(t, err, "the server is gone after Stop")
	require.NoError(t, Stop(ctx, dir), "stopping a stopped cluster is not an error")

	restarted, err := Ensure(ctx, Options{DataDir: dir, Ephemeral: true})
	require.NoError(t, err)
	require.Equal(t, url, restarted, "a restart keeps the remembered port and the database")
	require.Equal(t, "vigil", queryString(t, restarted, "SELECT current_database()"))

	require.NoError(t, StopImmediate(ctx, dir))
	require.Empty(t, postmasters(t, dir))
}

func TestEnsureConcurrentCallersShareOneServer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := dataDir(t)

	const goroutines, processes = 4, 2
	urls := make(chan string, goroutines+processes)
	errs := make(chan error, goroutines+processes)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			url, err := Ensure(ctx, Options{DataDir: dir, Ephemeral: true})
			urls <- url
			errs <- err
		})
	}
	for range processes {
		wg.Go(func() {
			url, err := ensureInSubprocess(ctx, dir)
			urls <- url
			errs <- err
		})
	}
	wg.Wait()
	close(urls)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[string]bool{}
	for url := range urls {
		seen[url] = true
	}
	require.Len(t, seen, 1, "every caller gets the same server: %v", seen)
	require.Len(t, postmasters(t, dir), 1)
	for url := range seen {
		// The helper processes have exited; the server they may have started must not have.
		require.Equal(t, "1", queryString(t, url, "SELECT 1::text"))
	}
}

// TestEnsureHelperProcess is not a test on its own: the concurrency test runs
// the test binary again with helperDataDirEnv set to get a second process.
func TestEnsureHelperProcess(t *testing.T) {
	dir := os.Getenv(helperDataDirEnv)
	if dir == "" {
		t.Skip("helper for TestEnsureConcurrentCallersShareOneServer")
	}
	url, err := Ensure(t.Context(), Options{DataDir: dir, Ephemeral: true})
	require.NoError(t, err)
	fmt.Printf("URL=%s\n", url)
}

func ensureInSubprocess(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestEnsureHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperDataDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("helper process: %w\n%s", err, out)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if url, ok := strings.CutPrefix(sc.Text(), "URL="); ok {
			return url, nil
		}
	}
	return "", fmt.Errorf("helper process printed no URL:\n%s", out)
}

func TestStopWithoutClusterIsNoError(t *testing.T) {
	t.Parallel()
	dir := dataDir(t)
	require.NoError(t, Stop(t.Context(), dir))
	require.NoError(t, StopImmediate(t.Context(), filepath.Join(dir, "never-created")))
}

func TestEnsureAsRootNamesUnreachableDirectory(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root hands the cluster to the postgres user")
	}
	locked, err := os.MkdirTemp("", "localpg-locked-") // 0700 root: the postgres user cannot enter it
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(locked) })
	_, err = Ensure(t.Context(), Options{DataDir: filepath.Join(locked, "data")})
	require.Error(t, err)
	require.ErrorContains(t, err, "cannot enter "+locked+" (mode 0700)")
	require.ErrorContains(t, err, "such as /var/lib/vigil")
}

// dataDir returns a fresh directory for a cluster and stops and removes it
// when the test ends. Unlike t.TempDir, its parents are searchable by others,
// so the postgres user can reach it when the tests run as root.
func dataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "localpg-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := StopImmediate(ctx, dir); err != nil {
			t.Errorf("stop test cluster: %v", err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove test cluster: %v", err)
		}
	})
	return dir
}

func queryString(t *testing.T, url, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var s string
	require.NoError(t, conn.QueryRow(t.Context(), sql).Scan(&s))
	return s
}

// postmasters lists the live processes running `postgres -D <dir>/pgdata`.
// Backends rename themselves and exited processes have no command line, so
// only running postmasters match.
func postmasters(t *testing.T, dir string) []int {
	t.Helper()
	pgdata := filepath.Join(dir, pgdataName)
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) != "postgres" {
			continue
		}
		for i := 1; i+1 < len(args); i++ {
			if args[i] == "-D" && args[i+1] == pgdata {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
