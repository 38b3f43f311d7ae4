// Package migrations holds Vigil's schema as numbered golang-migrate files,
// embedded into the binary and applied at start.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

//go:embed *.sql
var files embed.FS

// StatementTimeout bounds every statement of a migration run, the wait for
// golang-migrate's advisory lock included. Migrations may legitimately take
// minutes (an index on a big table); nothing should take longer.
const StatementTimeout = 5 * time.Minute

// LockWait bounds the wait for golang-migrate's advisory lock. A replica
// frozen (or partitioned) while it holds the lock would otherwise hold up
// every other replica's start until it thaws: golang-migrate waits in
// pg_advisory_lock without a bound (its own LockTimeout does not cover the
// lock it takes to create the version table, and leaves the statement
// running when it gives up). After LockWait the waiting statement is
// cancelled and Up returns an error, so the caller retries with backoff.
const LockWait = 30 * time.Second

// Up applies every pending migration. Several replicas may call it at once:
// golang-migrate's PostgreSQL driver holds pg_advisory_lock while it reads the
// version and applies files, so the second caller waits (at most LockWait)
// and then finds nothing to do. When the schema is already current and clean,
// Up returns without taking the lock at all.
func Up(databaseURL string) error { return up(databaseURL, LockWait) }

func up(databaseURL string, lockWait time.Duration) error {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return fmt.Errorf("open database for migrations: %w", err)
	}
	rp := cfg.RuntimeParams
	rp["statement_timeout"] = strconv.FormatInt(StatementTimeout.Milliseconds(), 10)
	if rp["application_name"] == "" {
		rp["application_name"] = "vigil migrate"
	}
	var backend atomic.Uint32 // the migration session's process id
	db := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(func(_ context.Context, c *pgx.Conn) error {
		backend.Store(c.PgConn().PID())
		return nil
	}))
	defer db.Close()
	// golang-migrate runs everything on one connection of db; with one open
	// connection at most, the process id above is that connection's.
	db.SetMaxOpenConns(1)

	if current, err := schemaCurrent(db); err == nil && current {
		return nil
	}

	stop := watchLockWait(cfg, backend.Load, lockWait)
	err = migrateUp(db)
	if stop() {
		return fmt.Errorf("another session held the migration lock for more than %s (a replica frozen while migrating?): %w", lockWait, err)
	}
	return err
}

// schemaCurrent reports whether schema_migrations says the newest embedded
// migration is applied and clean: then there is nothing to do, and no reason
// to queue for the lock behind a replica that may be frozen holding it.
func schemaCurrent(db *sql.DB) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var version int64
	var dirty bool
	if err := db.QueryRowContext(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty); err != nil {
		return false, err
	}
	return !dirty && version == int64(Latest()), nil
}

func migrateUp(db *sql.DB) error {
	src, err := iofs.New(files, ".")
	if err != nil {
		return fmt.Errorf("read embedded migrations: %w", err)
	}
	driver, err := migratepgx.WithInstance(db, &migratepgx.Config{StatementTimeout: StatementTimeout})
	if err != nil {
		return fmt.Errorf("migration driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", driver)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer m.Close()
	// The watchdog bounds the lock wait; golang-migrate's own timeout would
	// return first and leave its lock statement running.
	m.LockTimeout = StatementTimeout
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// watchLockWait cancels the statement of the migration session (backend)
// whenever it has waited more than wait for an advisory lock, from a
// connection of its own, until the returned stop is called; stop reports
// whether it cancelled anything. DDL waiting for table locks is left alone:
// failing halfway would leave the schema marked dirty.
func watchLockWait(cfg *pgx.ConnConfig, backend func() uint32, wait time.Duration) (stop func() bool) {
	done := make(chan struct{})
	var cancelled atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				_ = conn.Close(context.Background())
			}
		}()
		// Nothing can have waited longer than wait before wait has passed;
		// after that, look four times per wait.
		next := time.NewTimer(wait)
		defer next.Stop()
		for {
			select {
			case <-done:
				return
			case <-next.C:
				next.Reset(max(wait/4, 50*time.Millisecond))
			}
			pid := backend()
			if pid == 0 {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if conn == nil || conn.IsClosed() {
				c := cfg.Copy()
				c.RuntimeParams["application_name"] = "vigil migrate lock watch"
				conn, _ = pgx.ConnectConfig(ctx, c)
			}
			if conn != nil {
				var n int
				err := conn.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE pg_cancel_backend(pid)) FROM pg_stat_activity
WHERE pid = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory'
  AND clock_timestamp() - query_start > make_interval(secs => $2)`, int64(pid), wait.Seconds()).Scan(&n)
				if err == nil && n > 0 {
					cancelled.Store(true)
				}
			}
			cancel()
		}
	}()
	return func() bool {
		close(done)
		wg.Wait()
		return cancelled.Load()
	}
}

// Latest is the version of the newest embedded migration: /readyz compares it
// with schema_migrations to tell whether this replica's schema is current.
func Latest() uint {
	var versions []int
	entries, _ := fs.ReadDir(files, ".")
	for _, e := range entries {
		prefix, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		if v, err := strconv.Atoi(prefix); err == nil {
			versions = append(versions, v)
		}
	}
	sort.Ints(versions)
	if len(versions) == 0 {
		return 0
	}
	return uint(versions[len(versions)-1])
}
