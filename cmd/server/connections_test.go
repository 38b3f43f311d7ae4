package main

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/monitoring"
	"github.com/vigilhq/vigil/internal/pgtest"
)

// A replica warns at start when the live replicas' pools together could
// open more connections than max_connections allows, and only then.
func TestWarnConnectionBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := monitoring.NewStore(pool)
	var available int
	require.NoError(t, pool.QueryRow(ctx, `SELECT current_setting('max_connections')::int -
current_setting('superuser_reserved_connections')::int`).Scan(&available))
	// Two other replicas are live, a third stopped long ago.
	_, err := pool.Exec(ctx, `
INSERT INTO vigil_instance (name, addr, version, started_at, heartbeat_at, stopped_at) VALUES
    ('a', ':8080', 'test', now(), now(), NULL),
    ('b', ':8082', 'test', now(), now(), NULL),
    ('c', ':8084', 'test', now() - interval '1 day', now() - interval '1 day', now() - interval '1 day')`)
	require.NoError(t, err)

	warn := func(perReplica int) string {
		var buf bytes.Buffer
		warnConnectionBudget(ctx, store, "self", perReplica, slog.New(slog.NewTextHandler(&buf, nil)))
		return buf.String()
	}
	fits := available / 3
	require.Empty(t, warn(fits), "3 replicas x %d fit in %d", fits, available)
	out := warn(fits + 1)
	require.Contains(t, out, "raise max_connections or lower scheduler.workers")
	require.Contains(t, out, "replicas_live=3")
	require.Contains(t, out, "max_connections_available=")
}
