package main

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigilhq/vigil/internal/pgtest"
)

// A replica frozen mid-probe for longer than its lease loses the job: the
// other replica takes it over with a new token and stores the one result;
// when the frozen one wakes up, its completion is rejected and counted.
func TestStalledReplicaLosesJobToOther(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)

	// The first request (replica A's probe) hangs; later ones answer at once.
	firstArrived := make(chan struct{})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var requests atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			close(firstArrived)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(target.Close)

	cfg := writeConfig(t, `
scheduler: {lease: 2s, max_attempts: 3, retry_base: 1s, retry_cap: 2s, workers: 2, poll: 200ms, spread: 0s}
services:
  - {name: inventory, url: "`+target.URL+`/health", interval: 1h, timeout: 1500ms}
`)
	a := startReplica(t, "replica-a", dbURL, cfg)
	select {
	case <-firstArrived:
	case <-time.After(20 * time.Second):
		t.Fatal("replica-a never probed the target")
	}
	a.signal(t, syscall.SIGSTOP) // frozen mid-probe, holding the lease

	pool := testPool(t, dbURL)
	require.Equal(t, "replica-a", queryString(t, pool, `SELECT owner_instance FROM monitoring_job WHERE state = 'RUNNING'`))

	b := startReplica(t, "replica-b", dbURL, cfg)
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitoring_job_result`) == 1
	}, 20*time.Second, 50*time.Millisecond, "replica-b should take the job over after the lease expired")
	require.Equal(t, 1, queryInt(t, pool, `SELECT count(*) FROM monitoring_job_result r JOIN monitoring_job j ON j.id = r.job_id
WHERE r.probed_by = 'replica-b' AND r.attempt = 2 AND r.status = 'UP' AND j.state = 'DONE' AND j.owner_instance = 'replica-b'`))

	a.signal(t, syscall.SIGCONT)
	require.Eventually(t, func() bool {
		return a.metric(t, "vigil_stale_completions_total") == 1
	}, 20*time.Second, 50*time.Millisecond, "replica-a's late completion must be rejected and counted")
	require.Contains(t, a.log.String(), "stale completion discarded")
	require.Equal(t, 1, queryInt(t, pool, `SELECT count(*) FROM monitoring_job_result`), "still exactly one result")
	require.Equal(t, 1, queryInt(t, pool, `SELECT count(*) FROM monitoring_job`))
	require.Equal(t, 0.0, b.metric(t, "vigil_stale_completions_total"))

	a.signal(t, syscall.SIGTERM)
	b.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, a.wait(t))
	require.Equal(t, 0, b.wait(t))
	require.Equal(t, 2, queryInt(t, pool, `SELECT count(*) FROM vigil_instance WHERE stopped_at IS NOT NULL`))
	require.Equal(t, 1, queryInt(t, pool, `SELECT stale_completions FROM vigil_instance WHERE name = 'replica-a'`),
		"the shared /instances page sees replica-a's stale completion")
}

// Two replicas share the checks; one is killed with SIGKILL, and the other
// carries on with every new slot. No slot ever gets a second job or result.
func TestKilledReplicaOtherCarriesOn(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(target.Close)
	cfg := writeConfig(t, `
scheduler: {lease: 2s, workers: 4, poll: 100ms}
services:
  - {name: s1, url: "`+target.URL+`/1", interval: 1s, timeout: 1s}
  - {name: s2, url: "`+target.URL+`/2", interval: 1s, timeout: 1s}
  - {name: s3, url: "`+target.URL+`/3", interval: 1s, timeout: 1s}
  - {name: s4, url: "`+target.URL+`/4", interval: 1s, timeout: 1s}
  - {name: s5, url: "`+target.URL+`/5", interval: 1s, timeout: 1s}
  - {name: s6, url: "`+target.URL+`/6", interval: 1s, timeout: 1s}
`)
	pool := testPool(t, dbURL)
	a := startReplica(t, "replica-a", dbURL, cfg)
	b := startReplica(t, "replica-b", dbURL, cfg)
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(DISTINCT probed_by) FROM monitoring_job_result`) == 2
	}, 30*time.Second, 100*time.Millisecond, "both replicas share the checks")

	a.signal(t, syscall.SIGKILL)
	a.wait(t)
	var killedAt float64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT extract(epoch FROM clock_timestamp())`).Scan(&killedAt))
	// Every later slot of every service gets its result from replica-b.
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(DISTINCT service_id) FROM monitoring_job_result
WHERE probed_by = 'replica-b' AND scheduled_slot > $1 + 2`, killedAt) == 6
	}, 30*time.Second, 100*time.Millisecond)
	// Jobs the dead replica held are taken over once its lease expires.
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING' AND owner_instance = 'replica-a'`) == 0
	}, 30*time.Second, 100*time.Millisecond)
	require.Equal(t, 0, queryInt(t, pool, `SELECT count(*) FROM (SELECT service_id, scheduled_slot FROM monitoring_job
GROUP BY 1, 2 HAVING count(*) > 1) d`))
	require.Equal(t, 0, queryInt(t, pool, `SELECT count(*) FROM monitoring_job j LEFT JOIN monitoring_job_result r ON r.job_id = j.id
WHERE (j.state = 'DONE') <> (r.job_id IS NOT NULL)`), "a result for exactly the DONE jobs")

	b.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, b.wait(t), "graceful stop exits 0")
	require.Equal(t, 0, queryInt(t, pool, `SELECT count(*) FROM monitoring_job WHERE state = 'RUNNING' AND owner_instance = 'replica-b'`),
		"a stopping replica leaves no job held")
}

// A service's conditions travel from the config file through the job to the
// probe: a 200 whose body says DOWN is a DOWN result naming the condition.
func TestConditionsFromConfigDecideTheResult(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewEmptyDatabase(t)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"status": "DOWN"}`))
	}))
	t.Cleanup(target.Close)
	cfg := writeConfig(t, `
scheduler: {lease: 5s, poll: 100ms, spread: 0s}
services:
  - name: api
    url: "`+target.URL+`/health"
    interval: 1h
    timeout: 2s
    conditions: ["[STATUS] == 200", "[BODY].status == UP"]
`)
	r := startReplica(t, "replica-a", dbURL, cfg)
	pool := testPool(t, dbURL)
	require.Eventually(t, func() bool {
		return queryInt(t, pool, `SELECT count(*) FROM monitoring_job_result`) == 1
	}, 20*time.Second, 50*time.Millisecond, r.log.String())
	require.Equal(t, "DOWN", queryString(t, pool, `SELECT status FROM monitoring_job_result`))
	require.Contains(t, queryString(t, pool, `SELECT coalesce(failed_condition, '') FROM monitoring_job_result`), "[BODY].status == UP")
}
