package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/localpg"
)

// After an outage long enough for the claim loop to back off for many
// seconds, work resumes as soon as the database is back: the producer keeps
// ticking through the outage and wakes the claim loop from its backoff. (The
// chaos run found replicas idle for up to 30 s after PostgreSQL returned.)
func TestWorkResumesPromptlyAfterLongOutage(t *testing.T) {
	t.Parallel()
	dir, dbURL, startDB := ownDatabase(t, "vigil-resume-")
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(target.Close)
	cfg := writeConfig(t, `
scheduler: {lease: 2s, poll: 100ms}
services:
  - {name: api, url: "`+target.URL+`/", interval: 1s, timeout: 1s}
`)
	startDB()
	r := startReplica(t, "replica-a", dbURL, cfg)
	pool := testPool(t, dbURL)
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitoring_job_result`) >= 2
	}, 20*time.Second, 100*time.Millisecond)

	pool.Close()
	require.NoError(t, localpg.StopImmediate(context.Background(), dir))
	// Claims fail with a doubling backoff from 100ms: after 14s it sleeps 6-13s.
	time.Sleep(14 * time.Second)
	startDB()
	pool = testPool(t, dbURL)
	var back time.Time
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&back))
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitoring_job_result WHERE observed_at > $1`, back) >= 1
	}, 5*time.Second, 50*time.Millisecond, "work resumes within seconds of the database's return:\n%s", r.log.String())

	r.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, r.wait(t))
}
