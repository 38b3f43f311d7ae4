package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/migrations"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// panicHelperEnv makes TestPanicHelper panic, in a subprocess started by
// TestClusterRemovedWhenTestsPanic.
const panicHelperEnv = "PGTEST_TEST_PANIC"

func TestNewDatabaseHasSchema(t *testing.T) {
	t.Parallel()
	url := NewDatabase(t)
	require.True(t, queryBool(t, url, "SELECT to_regclass('monitoring_job') IS NOT NULL"), "monitoring_job exists")
	require.True(t, queryBool(t, url, "SELECT NOT EXISTS (SELECT 1 FROM monitored_service)"), "no data")
}

func TestNewDatabasesAreIsolated(t *testing.T) {
	t.Parallel()
	a, b := NewDatabase(t), NewDatabase(t)
	require.NotEqual(t, a, b)
	exec1(t, a, "INSERT INTO monitoring_group (name) VALUES ('only-in-a')")
	require.True(t, queryBool(t, a, "SELECT EXISTS (SELECT 1 FROM monitoring_group WHERE name = 'only-in-a')"))
	require.True(t, queryBool(t, b, "SELECT NOT EXISTS (SELECT 1 FROM monitoring_group)"), "b does not see a's row")
}

func TestNewEmptyDatabaseHasNoSchema(t *testing.T) {
	t.Parallel()
	url := NewEmptyDatabase(t)
	require.True(t, queryBool(t, url, "SELECT to_regclass('monitoring_job') IS NULL"))
	require.NoError(t, migrations.Up(url), "an empty database can be migrated")
	require.True(t, queryBool(t, url, "SELECT to_regclass('monitoring_job') IS NOT NULL"))
}

func TestNewPool(t *testing.T) {
	t.Parallel()
	pool := NewPool(t)
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM monitoring_job").Scan(&n))
	require.Zero(t, n)
}

func TestDatabaseDroppedAtCleanup(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("user", func(t *testing.T) {
		name = NewPool(t).Config().ConnConfig.Database
		require.True(t, strings.HasPrefix(name, "vigil_test_"), name)
	})
	require.True(t, queryBool(t, ServerURL(), fmt.Sprintf("SELECT NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = '%s')", name)),
		"database %s is dropped once its test ends", name)
}

func TestServerURLIsMaintenanceDatabase(t *testing.T) {
	t.Parallel()
	var db string
	conn, err := pgx.Connect(t.Context(), ServerURL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT current_database()").Scan(&db))
	require.Equal(t, "postgres", db)
}

func TestClusterRemovedWhenTestsPanic(t *testing.T) {
	t.Parallel()
	if os.Getenv(EnvDatabaseURL) != "" {
		t.Skip("no throwaway cluster when " + EnvDatabaseURL + " is set")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPanicHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), panicHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the helper panics:\n%s", out)
	var dir string
	for line := range strings.Lines(string(out)) {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "CLUSTER_DIR="); ok {
			dir = d
		}
	}
	require.NotEmpty(t, dir, "helper output:\n%s", out)
	// The reaper works after the helper has died, so give it a moment.
	require.Eventually(t, func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	}, 20*time.Second, 50*time.Millisecond, "the reaper stops and removes %s", dir)
}

// TestPanicHelper is not a test on its own; see TestClusterRemovedWhenTestsPanic.
func TestPanicHelper(t *testing.T) {
	if os.Getenv(panicHelperEnv) == "" {
		t.Skip("helper for TestClusterRemovedWhenTestsPanic")
	}
	NewDatabase(t)
	fmt.Printf("CLUSTER_DIR=%s\n", server.clusterDir)
	panic("a test that panics ends the process without running Main's defers")
}

func queryBool(t *testing.T, url, sql string) bool {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var b bool
	require.NoError(t, conn.QueryRow(t.Context(), sql).Scan(&b))
	return b
}

func exec1(t *testing.T, url, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), sql)
	require.NoError(t, err)
}
