package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/auth"
	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
)

// runUser is called directly: run.go dispatches "server user" to it.

func TestUserAddReadsThePasswordFromStdin(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	url := pool.Config().ConnString()
	ctx := context.Background()
	var stdout, stderr bytes.Buffer
	code := runUser(ctx, []string{"add", "-admin", "-database-url", url, "alice"}, nil,
		strings.NewReader("s3cret-password\n"), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stdout.String(), "user alice created with role admin")

	store := monitoring.NewStore(pool)
	u, err := store.UserByName(ctx, "alice")
	require.NoError(t, err)
	require.Equal(t, auth.RoleAdmin, u.Role)
	require.True(t, auth.CheckPassword(u.PasswordHash, "s3cret-password"))

	// An editor with a group that exists; refusals exit 2 and write nothing.
	_, err = pool.Exec(ctx, `INSERT INTO monitoring_group (name) VALUES ('core')`)
	require.NoError(t, err)
	require.Equal(t, 0, runUser(ctx, []string{"add", "-role", "editor", "-group", "core", "-database-url", url, "ed"}, nil,
		strings.NewReader("another-password"), &stdout, &stderr), stderr.String())
	u, err = store.UserByName(ctx, "ed")
	require.NoError(t, err)
	require.Equal(t, []string{"core"}, u.Groups)

	for _, tc := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"add", "-admin", "-database-url", url, "alice"}, "s3cret-password\n", "exists already"},
		{[]string{"add", "-admin", "-database-url", url, "bob"}, "", "no password on stdin"},
		{[]string{"add", "-admin", "-database-url", url, "bob"}, "short\n", "shorter than 8"},
		{[]string{"add", "-role", "editor", "-group", "nope", "-database-url", url, "bob"}, "long-enough-pw\n", "does not exist"},
		{[]string{"add", "-role", "boss", "-database-url", url, "bob"}, "long-enough-pw\n", "use admin, editor or viewer"},
		{[]string{"add", "-database-url", url}, "long-enough-pw\n", "exactly one user name"},
	} {
		stderr.Reset()
		require.Equal(t, 2, runUser(ctx, tc.args, nil, strings.NewReader(tc.stdin), &stdout, &stderr), tc.args)
		require.Contains(t, stderr.String(), tc.want)
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM vigil_user`).Scan(&n))
	require.Equal(t, 2, n)
}

func TestFirstAdminFromEnvironment(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	store := monitoring.NewStore(pool)
	log := slog.New(slog.DiscardHandler)

	require.NoError(t, ensureFirstAdmin(ctx, store, nil, log), "no variable: nothing to do")
	require.ErrorIs(t, ensureFirstAdmin(ctx, store, []string{"VIGIL_ADMIN_PASSWORD=short"}, log), auth.ErrWeakPassword)
	require.NoError(t, ensureFirstAdmin(ctx, store, []string{"VIGIL_ADMIN_PASSWORD=first-password"}, log))
	u, err := store.UserByName(ctx, "admin")
	require.NoError(t, err)
	require.Equal(t, auth.RoleAdmin, u.Role)
	require.True(t, auth.CheckPassword(u.PasswordHash, "first-password"))

	// Once any account exists, a later start with another password changes nothing.
	require.NoError(t, ensureFirstAdmin(ctx, store, []string{"VIGIL_ADMIN_PASSWORD=second-password"}, log))
	u, err = store.UserByName(ctx, "admin")
	require.NoError(t, err)
	require.True(t, auth.CheckPassword(u.PasswordHash, "first-password"))
}

func TestAccessSettings(t *testing.T) {
	t.Parallel()
	requireLogin, secure, err := accessSettings(nil)
	require.NoError(t, err)
	require.True(t, requireLogin, "reading needs a login unless the dashboard is made public")
	require.False(t, secure)
	requireLogin, secure, err = accessSettings([]string{"VIGIL_PUBLIC_DASHBOARD=true", "VIGIL_SECURE_COOKIES=1"})
	require.NoError(t, err)
	require.False(t, requireLogin)
	require.True(t, secure)
	_, _, err = accessSettings([]string{"VIGIL_PUBLIC_DASHBOARD=yes please"})
	require.ErrorIs(t, err, errUsage)
}
