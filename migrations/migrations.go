// Package migrations holds Vigil's schema as numbered golang-migrate files,
// embedded into the binary and applied at start.
package migrations

import (
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for golang-migrate
)

//go:embed *.sql
var files embed.FS

// Up applies every pending migration. Several replicas may call it at once:
// golang-migrate's PostgreSQL driver holds pg_advisory_lock while it reads the
// version and applies files, so the second caller waits and then finds nothing
// to do.
func Up(databaseURL string) error {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return fmt.Errorf("open database for migrations: %w", err)
	}
	defer db.Close()
	src, err := iofs.New(files, ".")
	if err != nil {
		return fmt.Errorf("read embedded migrations: %w", err)
	}
	driver, err := migratepgx.WithInstance(db, &migratepgx.Config{})
	if err != nil {
		return fmt.Errorf("migration driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", driver)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer m.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
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
