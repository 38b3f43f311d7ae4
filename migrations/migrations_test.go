package migrations_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4/database"
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

// A replica frozen while it holds golang-migrate's advisory lock must not hold
// up the others' start forever: their wait for the lock is bounded, Up fails
// (the caller retries with backoff), and once the schema is current nobody
// needs the lock any more.
func TestUpDoesNotWaitForeverForAFrozenLockHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewEmptyDatabase(t)
	holder, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer holder.Close(ctx)
	var dbName, schema string
	require.NoError(t, holder.QueryRow(ctx, `SELECT current_database(), current_schema()`).Scan(&dbName, &schema))
	aid, err := database.GenerateAdvisoryLockId(dbName, schema, "schema_migrations")
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock($1::bigint)`, aid)
	require.NoError(t, err)

	began := time.Now()
	done := make(chan error, 1)
	go func() { done <- migrations.UpWithLockWait(url, time.Second) }()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "held the migration lock")
		require.Less(t, time.Since(began), 15*time.Second)
	case <-time.After(45 * time.Second):
		t.Fatal("Up still waits for the migration lock after 45 s")
	}

	_, err = holder.Exec(ctx, `SELECT pg_advisory_unlock($1::bigint)`, aid)
	require.NoError(t, err)
	require.NoError(t, migrations.UpWithLockWait(url, time.Second))

	// The schema is current: a frozen holder of the lock is no reason to wait.
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock($1::bigint)`, aid)
	require.NoError(t, err)
	began = time.Now()
	require.NoError(t, migrations.UpWithLockWait(url, time.Minute))
	require.Less(t, time.Since(began), 10*time.Second)
}
