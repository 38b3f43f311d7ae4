package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/localpg"
)

func httpStatus(addr, path string) int {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// ownDatabase prepares a PostgreSQL cluster of the test's own, which the test
// can stop and start (startDB) to make outages; it is not started yet. It
// returns the cluster's directory and the URL it will answer on.
func ownDatabase(t *testing.T, prefix string) (dir, dbURL string, startDB func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755)) // the postgres user must reach it when we run as root
	t.Cleanup(func() {
		_ = localpg.StopImmediate(context.Background(), dir)
		_ = os.RemoveAll(dir)
	})
	_, port, _ := net.SplitHostPort(freeAddr(t))
	portNum, _ := strconv.Atoi(port)
	dbURL = "postgres://postgres@127.0.0.1:" + port + "/vigil?sslmode=disable&connect_timeout=2"
	startDB = func() {
		_, err := localpg.Ensure(context.Background(), localpg.Options{DataDir: dir, Port: portNum, Ephemeral: true})
		require.NoError(t, err)
	}
	return dir, dbURL, startDB
}

// A replica outlives its database: it starts while PostgreSQL is not there
// yet, keeps answering /healthz, reports 503 on /readyz during an outage,
// logs the outage once, and resumes work when the database is back, without
// a restart.
func TestReplicaSurvivesDatabaseOutage(t *testing.T) {
	t.Parallel()
	dir, dbURL, startDB := ownDatabase(t, "vigil-outage-")

	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(target.Close)
	cfg := writeConfig(t, `
scheduler: {lease: 2s, poll: 100ms}
services:
  - {name: api, url: "`+target.URL+`/", interval: 1s, timeout: 1s}
`)

	// Nothing listens on the database port yet.
	r := startReplicaNoWait(t, "replica-a", dbURL, cfg)
	require.Eventually(t, func() bool { return httpStatus(r.addr, "/healthz") == 200 }, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, http.StatusServiceUnavailable, httpStatus(r.addr, "/readyz"))

	startDB()
	require.Eventually(t, func() bool { return httpStatus(r.addr, "/readyz") == 200 }, 30*time.Second, 100*time.Millisecond)
	pool := testPool(t, dbURL)
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitoring_job_result`) >= 2
	}, 20*time.Second, 100*time.Millisecond)

	// Outage: the database stops hard, as in a crash.
	pool.Close()
	require.NoError(t, localpg.StopImmediate(context.Background(), dir))
	require.Eventually(t, func() bool { return httpStatus(r.addr, "/readyz") == http.StatusServiceUnavailable }, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, 200, httpStatus(r.addr, "/healthz"), "liveness does not depend on the database")
	// Many calls fail during the outage; it is logged once by the scheduler
	// and once by the alert dispatcher, not once per tick.
	require.Eventually(t, func() bool { return strings.Count(r.log.String(), "database unavailable") == 2 }, 10*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool { return r.metric(t, "vigil_database_errors_total") >= 4 }, 20*time.Second, 100*time.Millisecond,
		"several scheduler calls fail during the outage")
	require.Equal(t, 2, strings.Count(r.log.String(), "database unavailable"), r.log.String())

	startDB()
	pool = testPool(t, dbURL)
	var resumedAt float64
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT extract(epoch FROM clock_timestamp())`).Scan(&resumedAt))
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitoring_job_result WHERE scheduled_slot > $1`, resumedAt) >= 2
	}, 40*time.Second, 100*time.Millisecond, "work resumes without a restart:\n%s", r.log.String())
	require.Equal(t, 200, httpStatus(r.addr, "/readyz"))
	require.Contains(t, r.log.String(), "database available again")

	r.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, r.wait(t))
}
