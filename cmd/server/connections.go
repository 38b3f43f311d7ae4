package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/vigilhq/vigil/internal/monitoring"
)

// warnConnectionBudget warns at start when this replica's pools, as many
// again for every other live replica, could open more connections than
// PostgreSQL allows. Past that, connects fail under load and the schedulers
// back off: jobs wait for their leases to expire and slots are missed (two
// replicas of 64 workers exhaust the default max_connections of 100).
func warnConnectionBudget(ctx context.Context, store *monitoring.Store, self string, perReplica int, log *slog.Logger) {
	b, err := store.ConnectionBudget(ctx, self, 30*time.Second)
	if err != nil {
		log.Warn("could not check max_connections", "err", err)
		return
	}
	replicas := b.OtherReplicas + 1
	if need := replicas * perReplica; need > b.MaxConnections {
		log.Warn("replicas may open more connections than PostgreSQL allows; raise max_connections or lower scheduler.workers",
			"replicas_live", replicas, "connections_per_replica", perReplica, "needed", need,
			"max_connections_available", b.MaxConnections)
	}
}

// schedulerPoolSize is the scheduler's pool: a connection per worker for its
// completion and retries, a few for claims, the producer and heartbeats,
// capped because batched claims and completions need few connections.
func schedulerPoolSize(workers int) int { return min(workers+4, 64) }

// The web pool serves pages and the API; maintenance runs rollups and
// retention. Neither waits behind the workers' connections.
const (
	webPoolSize         = 8
	maintenancePoolSize = 2
)

// connectionsPerReplica is every pool a replica opens.
func connectionsPerReplica(workers int) int {
	return schedulerPoolSize(workers) + webPoolSize + maintenancePoolSize
}
