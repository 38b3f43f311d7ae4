package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/pgtest"
)

// A bad config file stops the replica with exit code 2 and a message naming
// the service and the field, before anything is written to the database.
func TestBadConfigExitsTwoAndWritesNothing(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	cfg := writeConfig(t, `
scheduler: {lease: 10s}
services:
  - {name: inventory, url: "http://127.0.0.1:1/health", timeout: 10s}
`)
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"-config", cfg, "-database-url", dbURL, "-addr", "127.0.0.1:0"}, nil, &bytes.Buffer{}, &stderr)
	require.Equal(t, 2, code, stderr.String())
	require.Contains(t, stderr.String(), "inventory")
	require.Contains(t, stderr.String(), "timeout")

	pool := testPool(t, dbURL)
	require.Equal(t, 0, queryInt(t, pool, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`),
		"nothing written: not even the migrations ran")
}

func TestMissingExplicitConfigExitsTwo(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"-config", "/nonexistent/vigil.yaml", "-database-url", "postgres://127.0.0.1:1/x"}, nil, &bytes.Buffer{}, &stderr)
	require.Equal(t, 2, code)
	require.Contains(t, stderr.String(), "/nonexistent/vigil.yaml")
}

func TestUnknownCommandExitsTwo(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"frobnicate"}, nil, &bytes.Buffer{}, &stderr))
	require.Contains(t, stderr.String(), "unknown command")
}

func TestSettingsFromEnvAndFlags(t *testing.T) {
	t.Parallel()
	s, _, err := parseSettings("server", []string{"-addr", ":9090"}, []string{"VIGIL_ADDR=:7070", "DATABASE_URL=postgres://x/y", "VIGIL_INSTANCE=east-1"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, ":9090", s.Addr, "a flag wins over the environment")
	require.Equal(t, "postgres://x/y", s.DatabaseURL)
	require.Equal(t, "east-1", s.Instance)

	s, _, err = parseSettings("server", nil, []string{"VIGIL_ADDR=:7070"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Regexp(t, `:7070$`, s.Instance, "default instance name is <hostname>:<port>")
	require.Equal(t, "./.vigil", s.DataDir)
}
