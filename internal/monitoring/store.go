// Package monitoring is Vigil's domain: services, the job queue on PostgreSQL
// (enqueue, claim, complete, retry, renew, release), the scheduler loops that
// drive it, the prober, latest status and the alert outbox.
//
// The database clock decides everything time-related: slots, leases and
// backoff use clock_timestamp(), never a replica's own clock.
package monitoring

import (
	"errors"

	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	// ErrNotFound is returned when a named row does not exist.
	ErrNotFound = errors.New("not found")
	// ErrStaleOwner is returned by the guarded writes (complete, retry, renew,
	// release) when the caller no longer holds the job: its lease expired, or
	// another claim with a new token took the job over. The caller must discard
	// what it was about to write.
	ErrStaleOwner = errors.New("job no longer held by this owner")
)

// Store runs Vigil's SQL. Each method keeps its statement beside it.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore wraps a connection pool.
func NewStore(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool}
}

// Pool exposes the pool for health checks.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
