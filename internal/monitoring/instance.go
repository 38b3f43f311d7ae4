package monitoring

import (
	"context"
	"fmt"
	"time"
)

// Instance is one running replica as it announces itself in vigil_instance.
type Instance struct {
	Name    string
	Addr    string
	Version string
}

// RegisterInstance records a replica's start on the DB clock. A restarted
// replica with the same name takes its row over.
func (s *Store) RegisterInstance(ctx context.Context, in Instance) error {
	const q = `
INSERT INTO vigil_instance (name, addr, version, started_at, heartbeat_at)
VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp())
ON CONFLICT (name) DO UPDATE SET addr = EXCLUDED.addr, version = EXCLUDED.version,
    started_at = EXCLUDED.started_at, heartbeat_at = EXCLUDED.heartbeat_at, stopped_at = NULL,
    stale_completions = 0`
	if _, err := s.pool.Exec(ctx, q, in.Name, in.Addr, in.Version); err != nil {
		return fmt.Errorf("register instance %q: %w", in.Name, err)
	}
	return nil
}

// Heartbeat marks the replica alive now and reports how many stale
// completions it has had since it started; it re-registers the row if it
// went missing (e.g. the database was restored).
func (s *Store) Heartbeat(ctx context.Context, in Instance, staleCompletions int64) error {
	const q = `
UPDATE vigil_instance SET heartbeat_at = clock_timestamp(), stopped_at = NULL, stale_completions = $2
WHERE name = $1`
	tag, err := s.pool.Exec(ctx, q, in.Name, staleCompletions)
	if err != nil {
		return fmt.Errorf("heartbeat %q: %w", in.Name, err)
	}
	if tag.RowsAffected() == 0 {
		return s.RegisterInstance(ctx, in)
	}
	return nil
}

// MarkInstanceStopped records a graceful stop and the final count of stale
// completions.
func (s *Store) MarkInstanceStopped(ctx context.Context, name string, staleCompletions int64) error {
	const q = `
UPDATE vigil_instance SET stopped_at = clock_timestamp(), heartbeat_at = clock_timestamp(), stale_completions = $2
WHERE name = $1`
	if _, err := s.pool.Exec(ctx, q, name, staleCompletions); err != nil {
		return fmt.Errorf("mark instance %q stopped: %w", name, err)
	}
	return nil
}

// ConnectionBudget is what PostgreSQL allows and how many replicas share it.
type ConnectionBudget struct {
	MaxConnections int // max_connections less superuser_reserved_connections
	OtherReplicas  int // live replicas other than the one asking
}

// ConnectionBudget reads max_connections and counts the other replicas that
// have sent a heartbeat within liveWithin.
func (s *Store) ConnectionBudget(ctx context.Context, self string, liveWithin time.Duration) (ConnectionBudget, error) {
	const q = `
SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int,
       (SELECT count(*) FROM vigil_instance
        WHERE name <> $1 AND stopped_at IS NULL AND heartbeat_at > clock_timestamp() - $2 * interval '1 millisecond')`
	var b ConnectionBudget
	if err := s.pool.QueryRow(ctx, q, self, liveWithin.Milliseconds()).Scan(&b.MaxConnections, &b.OtherReplicas); err != nil {
		return b, fmt.Errorf("connection budget: %w", err)
	}
	return b, nil
}
