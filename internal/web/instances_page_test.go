package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInstancesPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := b.addService(t, service{name: "alpha"})
	b.addInstance(t, instance{name: "replica-a", heartbeatAgo: 3, startedAgoMin: 30})
	b.addInstance(t, instance{name: "replica-b", heartbeatAgo: 40})
	b.addInstance(t, instance{name: "replica-c", heartbeatAgo: 120, stopped: true})
	b.addInstance(t, instance{name: "replica-old", heartbeatAgo: 3 * 86400, stopped: true})
	b.addJob(t, svc, job{ago: 0, state: "RUNNING", owner: "replica-a", leaseLeft: 20})
	b.addJob(t, svc, job{ago: 10, state: "RUNNING", owner: "replica-b", leaseLeft: -10})
	b.addResult(t, svc, result{ago: 60, status: "UP", by: "replica-a"})
	b.addResult(t, svc, result{ago: 90, status: "UP", by: "replica-a", attempt: 2})
	b.addResult(t, svc, result{ago: 3600, status: "UP", by: "replica-a"}) // more than 5 minutes ago

	doc := b.page(t, "/instances", http.StatusOK)
	var names []string
	for _, r := range byTestID(doc, "instance-row") {
		names = append(names, text(one(t, r, "instance-name")))
	}
	require.Equal(t, []string{"replica-a", "replica-b", "replica-c"}, names, "live first; long-gone replicas left off")

	a := row(t, doc, "instance", "replica-a")
	require.Equal(t, "true", attr(elements(one(t, a, "live"), "span")[0], "data-live"))
	require.Equal(t, "● live", text(one(t, a, "live")))
	require.Equal(t, "1", text(one(t, a, "jobs-held")))
	require.Equal(t, "2", text(one(t, a, "completed")))
	require.Equal(t, "1", text(one(t, a, "retried")))

	bb := row(t, doc, "instance", "replica-b")
	require.Equal(t, "false", attr(elements(one(t, bb, "live"), "span")[0], "data-live"))
	require.Contains(t, text(one(t, bb, "live")), "silent for 4")
	require.Equal(t, "1 (1 lease lapsed)", text(one(t, bb, "jobs-held")))
	require.Contains(t, text(one(t, row(t, doc, "instance", "replica-c"), "live")), "stopped")
	require.Contains(t, text(one(t, doc, "stale-note")), "vigil_stale_completions_total")
	require.Equal(t, "0", text(one(t, a, "stale-completions")))

	// A replica reports its stale completions with its heartbeat; singleton
	// maintenance locks show who ran each task last.
	_, err := b.pool.Exec(t.Context(), `UPDATE vigil_instance SET stale_completions = 7 WHERE name = 'replica-b'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(t.Context(), `INSERT INTO scheduler_lock (name, lock_until, locked_at, locked_by)
VALUES ('retention', clock_timestamp() + interval '1 minute', clock_timestamp(), 'replica-a')`)
	require.NoError(t, err)
	doc = b.page(t, "/instances", http.StatusOK)
	require.Equal(t, "7", text(one(t, row(t, doc, "instance", "replica-b"), "stale-completions")))
	lock := row(t, doc, "lock", "retention")
	require.Equal(t, "replica-a", text(one(t, lock, "lock-holder")))
	require.Equal(t, "held", text(one(t, lock, "lock-state")))

	var out struct {
		Instances []map[string]any `json:"instances"`
	}
	b.getJSON(t, "/api/v1/instances", http.StatusOK, &out)
	require.Len(t, out.Instances, 3)
	for _, k := range []string{"name", "addr", "version", "started_at", "heartbeat_at", "live"} {
		require.Contains(t, out.Instances[0], k)
	}
	require.Equal(t, "replica-a", out.Instances[0]["name"])
	require.Equal(t, true, out.Instances[0]["live"])
	require.Equal(t, false, out.Instances[1]["live"])
}

func TestInstancesPageEmpty(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc := b.page(t, "/instances", http.StatusOK)
	require.Contains(t, text(one(t, doc, "empty-instances")), "No replica has registered yet.")
}
