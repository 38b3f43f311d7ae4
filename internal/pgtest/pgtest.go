// Package pgtest gives tests real PostgreSQL databases: each test gets its own
// database, so tests that commit (leases, LISTEN/NOTIFY, concurrent claims)
// run in parallel without seeing each other.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// With TEST_DATABASE_URL set, databases are made on that server (the role must
// be allowed to CREATE DATABASE); otherwise Main starts a throwaway cluster
// with localpg and removes it when the tests end.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vigilhq/vigil/migrations"
)

// EnvDatabaseURL names the variable that points the tests at an existing server.
const EnvDatabaseURL = "TEST_DATABASE_URL"

// server is the state Main sets up for the whole test binary.
var server struct {
	url        string        // maintenance database ("postgres")
	clusterDir string        // the throwaway cluster's directory, if Main started one
	admin      *pgxpool.Pool // on url: creates and drops the test databases
	// procID keeps this process's database names apart from those of other
	// test binaries (and other machines) sharing one server.
	procID string
	seq    atomic.Int64

	mu          sync.Mutex // serialises CREATE DATABASE, which fails while the template is in use
	template    string     // migrated once per process, cloned per test
	templateErr error
}

// Main runs the tests against a server and returns the exit code for os.Exit.
func Main(m *testing.M) int {
	if dir := os.Getenv(reaperEnv); dir != "" {
		return reap(dir)
	}
	server.procID = fmt.Sprintf("%d_%s", os.Getpid(), randomHex(4))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var err error
	if env := os.Getenv(EnvDatabaseURL); env != "" {
		server.url, err = withDatabase(env, "postgres")
		if err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %s: %v\n", EnvDatabaseURL, err)
			return 1
		}
	} else {
		cluster, err := startCluster(ctx)
		if err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: %v\n(or set %s to a server where the role may CREATE DATABASE)\n", err, EnvDatabaseURL)
			return 1
		}
		defer cluster.remove()
		server.url, server.clusterDir = cluster.url, cluster.dir
	}

	server.admin, err = pgxpool.New(ctx, server.url)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: connect to %s: %v\n", redact(server.url), err)
		return 1
	}
	defer server.admin.Close()
	// Drop the template on a shared server; a throwaway cluster goes as a whole.
	defer func() {
		if server.template != "" && os.Getenv(EnvDatabaseURL) != "" {
			if err := dropDatabase(server.template); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			}
		}
	}()
	return m.Run()
}

// ServerURL is the URL of the server's maintenance database ("postgres").
func ServerURL() string { return server.url }

// NewDatabase creates a database carrying Vigil's migrated schema and no data,
// dropped when the test ends. It returns the database's URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	template, err := migratedTemplate()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return newDatabase(t, template)
}

// NewEmptyDatabase creates a database without Vigil's schema, for tests of
// migrations and start-up, dropped when the test ends.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, "template0")
}

// NewPool is NewDatabase with a pool on it, closed when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), NewDatabase(t))
	if err != nil {
		t.Fatalf("pgtest: open pool: %v", err)
	}
	t.Cleanup(pool.Close) // runs before the drop, which was registered earlier
	return pool
}

func newDatabase(t testing.TB, template string) string {
	t.Helper()
	if server.admin == nil {
		t.Fatal("pgtest: no server; call os.Exit(pgtest.Main(m)) from TestMain")
	}
	name := fmt.Sprintf("vigil_test_%s_%d", server.procID, server.seq.Add(1))
	if err := createDatabase(name, template); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := dropDatabase(name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	u, err := withDatabase(server.url, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return u
}

// migratedTemplate migrates a template database the first time it is asked
// for: cloning it is much faster than migrating every test's database.
func migratedTemplate() (string, error) {
	server.mu.Lock()
	defer server.mu.Unlock()
	if server.template != "" || server.templateErr != nil {
		return server.template, server.templateErr
	}
	name := "vigil_template_" + server.procID
	err := func() error {
		if err := createDatabaseLocked(name, "template0"); err != nil {
			return err
		}
		u, err := withDatabase(server.url, name)
		if err != nil {
			return err
		}
		// migrations.Up closes its connections before returning, and CREATE
		// DATABASE waits a few seconds for stragglers, so the template is free
		// to clone afterwards.
		if err := migrations.Up(u); err != nil {
			return fmt.Errorf("migrate template database: %w", err)
		}
		return nil
	}()
	if err != nil {
		_ = dropDatabase(name)
		server.templateErr = err
		return "", err
	}
	server.template = name
	return name, nil
}

func createDatabase(name, template string) error {
	server.mu.Lock()
	defer server.mu.Unlock()
	return createDatabaseLocked(name, template)
}

func createDatabaseLocked(name, template string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sql := fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", pgx.Identifier{name}.Sanitize(), pgx.Identifier{template}.Sanitize())
	if _, err := server.admin.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

func dropDatabase(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// FORCE ends sessions a test left open (a pool it forgot to close, a
	// stalled worker), which would otherwise block the drop.
	if _, err := server.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// withDatabase returns serverURL pointing at database instead.
func withDatabase(serverURL, database string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", errors.New("not a postgres:// URL; use the form postgres://user:password@host:5432/postgres?sslmode=disable")
	}
	u.Path = "/" + database
	u.RawPath = ""
	return u.String(), nil
}

// redact hides a password so a failing setup does not print it.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
