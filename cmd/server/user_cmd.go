package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/vigilhq/vigil/internal/auth"
	"github.com/vigilhq/vigil/internal/localpg"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/migrations"
)

const userUsage = `Usage:
  server user add [flags] <name>     create an account; the password is read from stdin
                                     (prompted for, without echo, on a terminal)

Flags (before the name):
  -admin                  the admin role (everything)
  -role admin|editor|viewer   default viewer; -admin is short for -role admin
  -group NAME             for an editor: a group it may change (repeat for more)
  -database-url  DATABASE_URL     PostgreSQL URL; empty: the embedded one under -data-dir
  -data-dir      VIGIL_DATA_DIR   default ./.vigil

The password is never a flag: flags end up in shell history and in ps.
Example:  server user add -admin alice < password-file
`

// runUser is "server user ...": account commands. stdin carries the password.
func runUser(ctx context.Context, args, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, userUsage)
		return 2
	}
	switch args[0] {
	case "add":
		return runUserAdd(ctx, args[1:], env, stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, userUsage)
		return 0
	}
	fmt.Fprintf(stderr, "unknown user command %q\n\n%s", args[0], userUsage)
	return 2
}

type groupList []string

func (g *groupList) String() string     { return strings.Join(*g, ",") }
func (g *groupList) Set(v string) error { *g = append(*g, v); return nil }

func runUserAdd(ctx context.Context, args, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("server user add", stderr)
	var db databaseFlags
	db.register(fs, env)
	admin := fs.Bool("admin", false, "the admin role")
	role := fs.String("role", auth.RoleViewer, "admin, editor or viewer")
	var groups groupList
	fs.Var(&groups, "group", "a group an editor may change (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *admin {
		*role = auth.RoleAdmin
	}
	switch {
	case fs.NArg() != 1:
		return exitCode(fmt.Errorf("%w: give exactly one user name after the flags (server user add -admin alice)", errUsage), stderr)
	case !auth.ValidRole(*role):
		return exitCode(fmt.Errorf("%w: -role %q: use admin, editor or viewer", errUsage, *role), stderr)
	case len(groups) > 0 && *role != auth.RoleEditor:
		return exitCode(fmt.Errorf("%w: -group applies to editors only (admins change everything, viewers nothing)", errUsage), stderr)
	}
	name := fs.Arg(0)
	if strings.TrimSpace(name) != name || name == "" || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' }) {
		return exitCode(fmt.Errorf("%w: user name %q: no surrounding spaces or control characters", errUsage, name), stderr)
	}
	password, err := readPassword(stdin, stderr)
	if err != nil {
		return exitCode(err, stderr)
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return exitCode(fmt.Errorf("%w: %v", errUsage, err), stderr)
	}
	store, closeDB, err := openMigrated(ctx, db, stderr)
	if err != nil {
		return exitCode(err, stderr)
	}
	defer closeDB()
	if _, err := store.UserCreate(ctx, monitoring.UserCreateParams{Name: name, Role: *role, PasswordHash: hash, Groups: groups}); err != nil {
		switch {
		case errors.Is(err, monitoring.ErrExists):
			err = fmt.Errorf("%w: user %q exists already", errUsage, name)
		case errors.Is(err, monitoring.ErrNotFound):
			err = fmt.Errorf("%w: a -group does not exist (%s); create it in the config file or on the Manage page first", errUsage, groups.String())
		}
		return exitCode(err, stderr)
	}
	if err := store.AuditRecord(ctx, "server user add", "user.create", name, "role="+*role); err != nil {
		return exitCode(err, stderr)
	}
	fmt.Fprintf(stdout, "user %s created with role %s\n", name, *role)
	return 0
}

// openMigrated connects and applies migrations: creating the first account
// is often the first thing done with a new database.
func openMigrated(ctx context.Context, db databaseFlags, stderr io.Writer) (*monitoring.Store, func(), error) {
	url := db.url
	if url == "" {
		var err error
		if url, err = localpg.Ensure(ctx, localpg.Options{DataDir: db.dataDir, Logger: newLogger(stderr, "warn")}); err != nil {
			return nil, nil, fmt.Errorf("embedded PostgreSQL: %w", err)
		}
	}
	if err := migrations.Up(url); err != nil {
		return nil, nil, err
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: DATABASE_URL: %v", errUsage, err)
	}
	return monitoring.NewStore(pool), pool.Close, nil
}

// readPassword reads one line. On a terminal it prompts twice with echo off
// (via stty, so no extra dependency); piped input is read as is.
func readPassword(stdin io.Reader, stderr io.Writer) (string, error) {
	f, isFile := stdin.(*os.File)
	terminal := false
	if isFile {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			terminal = true
		}
	}
	r := bufio.NewReader(stdin)
	line := func(prompt string) (string, error) {
		if terminal {
			fmt.Fprint(stderr, prompt)
			if err := stty(f, "-echo"); err == nil {
				defer func() { _ = stty(f, "echo"); fmt.Fprintln(stderr) }()
			}
		}
		s, err := r.ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && s != "") {
			return "", fmt.Errorf("%w: no password on stdin (pipe it in or run on a terminal)", errUsage)
		}
		return strings.TrimRight(s, "\r\n"), nil
	}
	pw, err := line("Password: ")
	if err != nil {
		return "", err
	}
	if terminal {
		again, err := line("Repeat it: ")
		if err != nil {
			return "", err
		}
		if again != pw {
			return "", fmt.Errorf("%w: the passwords differ", errUsage)
		}
	}
	return pw, nil
}

func stty(tty *os.File, arg string) error {
	cmd := exec.Command("stty", arg)
	cmd.Stdin = tty
	return cmd.Run()
}

// ensureFirstAdmin creates the account "admin" from VIGIL_ADMIN_PASSWORD when
// the database has no account yet; replicas starting together create it once.
// Without the variable, or with accounts present, it does nothing.
func ensureFirstAdmin(ctx context.Context, store *monitoring.Store, env []string, log *slog.Logger) error {
	password := envMap(env)["VIGIL_ADMIN_PASSWORD"]
	if password == "" {
		return nil
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return fmt.Errorf("VIGIL_ADMIN_PASSWORD: %w", err)
	}
	created, err := store.UserCreateFirstAdmin(ctx, "admin", hash)
	if err != nil {
		return err
	}
	if created {
		log.Info("created the first account, admin, from VIGIL_ADMIN_PASSWORD; unset it now")
		return store.AuditRecord(ctx, "VIGIL_ADMIN_PASSWORD", "user.create", "admin", "role=admin")
	}
	return nil
}
