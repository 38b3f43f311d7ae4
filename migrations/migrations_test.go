package migrations_test

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/pgtest"
	"github.com/vigilhq/vigil/migrations"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// Replicas starting together all run Up on an empty database: golang-migrate's
// advisory lock makes them take turns, and every one of them succeeds.
func TestConcurrentUpOnEmptyDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = migrations.Up(url)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "replica %d", i)
	}
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var version int64
	var dirty bool
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty))
	require.EqualValues(t, migrations.Latest(), version)
	require.False(t, dirty)
	require.GreaterOrEqual(t, migrations.Latest(), uint(1))
}
