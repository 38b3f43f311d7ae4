package monitoring

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// The view_*.go files hold the read side of the dashboard and its JSON API.
// Every read is bounded (a LIMIT or a window on an indexed column), and each
// page's statements run in one short read-only REPEATABLE READ transaction,
// so a page shows one consistent snapshot. The transaction ends before the
// page is rendered: no snapshot is held open while HTML is written.
//
// Inside such a transaction now() is the snapshot's instant, so every window
// on a page ("last 24 h", "live within 15 s", "lease remaining") is measured
// from the same moment on the database clock.

// Paging bounds shared by the lists.
const (
	DefaultPageSize = 50
	MaxPageSize     = 200
	// MaxOverviewServices caps the overview; beyond it the page says it is
	// truncated rather than growing without bound.
	MaxOverviewServices = 5000
	// RecentResults is the length of the overview's result strip.
	RecentResults = 50
	// LiveWithin is how recent a heartbeat must be for a replica to count as
	// live (three missed 5 s heartbeats).
	LiveWithin = 15 * time.Second
)

// Result is one stored probe result: which replica checked which slot of a
// service, on which attempt, and what it saw.
type Result struct {
	JobID      int64
	Slot       int64 // slot start, epoch seconds
	Status     string
	LatencyMS  float64
	HTTPStatus *int
	Error      string
	Attempt    int
	ProbedBy   string
	ObservedAt time.Time
	Degraded   bool // UP but slower than the service's degraded_above
	// FailedCondition is the condition that made the result DOWN; Error has the observed value.
	FailedCondition string
}

// SlotTime is the slot's start as a time.
func (r Result) SlotTime() time.Time { return SlotTime(r.Slot) }

// SlotTime converts a scheduled_slot (epoch seconds) to a UTC time.
func SlotTime(slot int64) time.Time { return time.Unix(slot, 0).UTC() }

// readSnapshot runs fn in a read-only REPEATABLE READ transaction. JIT is
// off: these are many short index lookups, and on a large installation
// PostgreSQL's cost estimate would otherwise spend more time compiling the
// overview's query than running it.
func (s *Store) readSnapshot(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
				return err
			}
			return fn(tx)
		})
}

// pageSize clamps a requested page size to [1, MaxPageSize], 0 meaning the
// default.
func pageSize(n int) int {
	switch {
	case n <= 0:
		return DefaultPageSize
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}

// serviceID resolves a service name, retired services included (their history
// stays readable).
func serviceID(ctx context.Context, tx pgx.Tx, name string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM monitored_service WHERE name = $1`, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	return id, err
}
